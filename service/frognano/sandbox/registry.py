"""Sandbox backends by name, imported only when asked for, and their clean-up."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import cast

from frognano.errors import ConfigError
from frognano.sandbox.base import Sandbox
from frognano.sandbox.options import SandboxOptions

# name -> "module:Class"; each class offers `async create(options) -> Sandbox`.
BACKENDS: dict[str, str] = {
    "local": "frognano.sandbox.local:LocalSandbox",
    "kubernetes": "frognano.sandbox.kubernetes.backend:KubernetesSandbox",
}


def check_backend(backend: str) -> str:
    """`backend`'s "module:Class", or ConfigError naming the backends there are."""
    try:
        return BACKENDS[backend]
    except KeyError:
        known = ", ".join(sorted(BACKENDS))
        raise ConfigError(
            f"sandbox backend {backend!r} is not available in this version (available: {known})"
        ) from None


async def create_sandbox(backend: str, options: SandboxOptions) -> Sandbox:
    """Start a sandbox of the named backend; close it (or use `async with`) when done."""
    target = check_backend(backend)
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    create = cast(Callable[[SandboxOptions], Awaitable[Sandbox]], cls.create)
    return await create(options)


# The clean-up below is for sandboxes that outlive the process that made them: a Kubernetes
# pod keeps running when its worker dies. A local sandbox dies with its process, so for it
# there is nothing to do.


async def reap_sandboxes(backend: str, options: SandboxOptions) -> None:
    """Delete the sandboxes of `backend` nobody will use again (Kubernetes: the expired,
    finished, failed and evicted pods of the namespace; kubernetes/reaper.py)."""
    if backend == "kubernetes":
        from frognano.sandbox.kubernetes.reaper import reap_namespace  # noqa: PLC0415

        await reap_namespace(options.k8s_namespace, options.kubeconfig)


async def delete_attempt_sandboxes(
    backend: str, options: SandboxOptions, run_id: str, attempt: int
) -> list[str]:
    """Delete the sandboxes one attempt of a run left behind (its worker died), and none of
    a later attempt's; the names deleted."""
    if backend == "kubernetes":
        from frognano.sandbox.kubernetes.reaper import delete_attempt_pods  # noqa: PLC0415

        return await delete_attempt_pods(options.k8s_namespace, options.kubeconfig, run_id, attempt)
    return []
