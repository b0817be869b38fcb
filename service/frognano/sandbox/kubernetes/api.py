"""The few pod endpoints the backend uses, as JSON dicts, off the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from pydantic import ValidationError

from frognano.errors import (
    ConfigError,
    SandboxBusy,
    SandboxError,
    SandboxStartError,
    SandboxUnavailable,
)


class KubeApiError(SandboxError):
    """The API server answered with an error status."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


def kube_configuration(kubeconfig: Path | None) -> client.Configuration:
    """Client configuration: the named kubeconfig, else the pod's service account when in a
    cluster, else the usual kubeconfig; ConfigError says what to set when none works."""
    configuration = client.Configuration()
    # The loaders are untyped; they fill `configuration` in place.
    load_kube: Any = config.load_kube_config
    load_incluster: Any = config.load_incluster_config
    try:
        if kubeconfig is not None:
            load_kube(config_file=str(kubeconfig), client_configuration=configuration)
        elif "KUBERNETES_SERVICE_HOST" in os.environ:
            load_incluster(client_configuration=configuration)
        else:
            load_kube(client_configuration=configuration)
    except (ConfigException, OSError, TypeError, ValueError) as exc:
        where = str(kubeconfig) if kubeconfig else "the in-cluster account or ~/.kube/config"
        raise ConfigError(
            f"cannot reach Kubernetes with {where}: {exc}; set FROGNANO_K8S_KUBECONFIG to a "
            "kubeconfig file, or run inside the cluster"
        ) from None
    return configuration


def _error(exc: ApiException, doing: str) -> KubeApiError:
    status = int(exc.status or 0)
    reason = str(exc.reason or "")
    message = reason
    try:
        body = json.loads(exc.body) if exc.body else {}
        if isinstance(body, dict):
            message = str(body.get("message") or message)
            reason = str(body.get("reason") or reason)
    except (TypeError, ValueError):
        pass
    return KubeApiError(status, reason, f"{doing}: {message} (HTTP {status or 'error'})")


class KubeApi:
    """CoreV1 pod calls on one shared ApiClient; exec streams get their own (k8s_exec)."""

    def __init__(self, configuration: client.Configuration) -> None:
        self.configuration = configuration
        self._api = client.CoreV1Api(client.ApiClient(configuration))

    async def _call(self, doing: str, method: Any, *args: Any, **kwargs: Any) -> Any:
        def call() -> Any:
            try:
                response = method(*args, _preload_content=False, _request_timeout=60, **kwargs)
            except ApiException as exc:
                raise _error(exc, doing) from None
            except OSError as exc:  # urllib3 connection errors are OSErrors
                raise KubeApiError(0, "Unreachable", f"{doing}: {exc}") from None
            except ValidationError as exc:  # the client checks arguments before sending
                raise KubeApiError(0, "Invalid", f"{doing}: {exc}") from None
            try:
                data = response.data
            finally:
                # Unread or not, the connection goes back to the pool instead of leaking.
                response.release_conn()
            return json.loads(data) if data else {}

        return await asyncio.to_thread(call)

    async def create_pod(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        pod: dict[str, Any] = await self._call(
            f"creating a pod in {namespace}", self._api.create_namespaced_pod, namespace, body
        )
        return pod

    async def read_pod(self, namespace: str, name: str) -> dict[str, Any]:
        pod: dict[str, Any] = await self._call(
            f"reading pod {namespace}/{name}", self._api.read_namespaced_pod, name, namespace
        )
        return pod

    async def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        listed = await self._call(
            f"listing pods in {namespace}",
            self._api.list_namespaced_pod,
            namespace,
            label_selector=selector,
        )
        items: list[dict[str, Any]] = listed.get("items") or []
        return items

    async def delete_pod(self, namespace: str, name: str) -> bool:
        """Force-delete a pod (the kubelet kills its containers at once); False if it was
        already gone."""
        try:
            await self._call(
                f"deleting pod {namespace}/{name}",
                self._api.delete_namespaced_pod,
                name,
                namespace,
                grace_period_seconds=0,
            )
        except KubeApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def close(self) -> None:
        self._api.api_client.close()


async def connect(kubeconfig: Path | None) -> KubeApi:
    """A KubeApi for `kubeconfig` (see kube_configuration), built off the event loop: loading
    the configuration reads files and the first client import takes a third of a second."""
    return await asyncio.to_thread(lambda: KubeApi(kube_configuration(kubeconfig)))


@contextlib.asynccontextmanager
async def kube_api(kubeconfig: Path | None) -> AsyncIterator[KubeApi]:
    """`connect`, closed when the block ends."""
    api = await connect(kubeconfig)
    try:
        yield api
    finally:
        api.close()


def creation_error(exc: KubeApiError, namespace: str) -> SandboxError:
    """What a refused pod creation means, for the person who can fix it."""
    text = str(exc)
    if exc.status == 401:
        return SandboxUnavailable(
            f"the API server did not accept FrogNano's credentials ({text}); check "
            "FROGNANO_K8S_KUBECONFIG, or the worker's ServiceAccount token in a cluster"
        )
    if exc.status == 403 and "exceeded quota" in text:
        return SandboxBusy(
            f"the sandbox namespace {namespace} is at its ResourceQuota; wait for running "
            f"sandboxes to finish or raise the quota ({text})"
        )
    if exc.status == 403:
        return SandboxUnavailable(
            f"the worker may not create pods in {namespace}; check its Role and RoleBinding "
            f"({text})"
        )
    if exc.status == 404:
        return SandboxUnavailable(
            f"the sandbox namespace {namespace} does not exist; set FROGNANO_K8S_NAMESPACE "
            f"or create it ({text})"
        )
    return SandboxStartError(f"could not create the sandbox pod: {text}")
