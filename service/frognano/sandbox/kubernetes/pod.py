"""The sandbox pod: a hardened Pod manifest (research/k8s.md section 2) and its labels."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from frognano.sandbox.options import SandboxOptions
from frognano.sandbox.paths import ENVIRONMENT, HOME, TMP, WORKSPACE

CONTAINER = "sandbox"
SANDBOX_UID = 10001
FILLER = "environment"
"""The init container that receives a built environment before the sandbox container starts."""
FILLER_UID = 10002
"""Its uid: not the sandbox's, so that nothing of the sandbox's uid owns a file it wrote."""
FILLED = f"{ENVIRONMENT}/.frognano-filled"
"""Created by FrogNano once the environment is in; the init container then removes it, exits."""
PATH_FIRST = "FROGNANO_PATH_FIRST"
"""Put before the image's own PATH by the exec wrapper (a pod cannot extend an image's PATH)."""
MANAGED_BY = "app.kubernetes.io/managed-by"
COMPONENT = "app.kubernetes.io/component"
RUN_ID = "frognano.dev/run-id"
EXPIRES = "frognano.dev/expires"
"""Unix seconds after which the reaper deletes the pod, as a label so selectors can see it."""
EXPIRES_AT = "frognano.dev/expires-at"
"""The same moment as an RFC 3339 annotation, for people reading `kubectl describe`."""
PURPOSE = "frognano.dev/purpose"
ATTEMPT = "frognano.dev/attempt"
"""Which try of its job made the pod, so a dead attempt's pods can go without the next's."""
CANDIDATE = "frognano.dev/candidate"
"""Which of a best-of-N run's attempts made the pod (absent for a single run)."""
SELECTOR = f"{MANAGED_BY}=frognano,{COMPONENT}=sandbox"
"""Label selector matching every sandbox pod FrogNano creates, and nothing else."""

# The init container's command: wait (at most the pod's start timeout) until FrogNano has
# streamed the environment in through exec and said so, then end and let the sandbox start.
WAIT_FOR_FILL = f"""
until [ -e {FILLED} ]; do
  [ "$SECONDS" -lt "$1" ] || {{ echo "frognano: no environment arrived in $1 s" >&2; exit 1; }}
  sleep 0.2
done
rm -f {FILLED}
"""

# What the reaper adds to a pod's lifetime before it counts as abandoned: the pod's own
# activeDeadlineSeconds stops it first; the label only decides when its object is deleted.
EXPIRY_MARGIN = timedelta(minutes=10)
_LABEL_VALUE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class PodOptions:
    """What the Kubernetes backend needs to know to build a sandbox pod."""

    namespace: str = "frognano-sandbox"
    image: str = "ghcr.io/frognano/sandbox-python:3.11"
    cpu: str = "2"
    memory: str = "4Gi"
    ephemeral_storage: str = "10Gi"
    runtime_class: str | None = None
    run_id: str = ""
    purpose: str = "agent"
    """agent, verify or network-check: shown in a label so an admin knows what a pod is for."""
    lifetime_seconds: int = 4 * 3600
    """activeDeadlineSeconds: the kubelet kills the pod after this even if FrogNano is gone."""
    start_timeout: float = 600.0
    labels: dict[str, str] = field(default_factory=dict)
    """Extra labels (the worker adds its own name)."""
    seccomp_profile: str | None = None
    """A Localhost profile (path under the kubelet's seccomp folder); None: RuntimeDefault."""
    environment: Literal["none", "filled", "build"] = "none"
    """"filled": an emptyDir at ENVIRONMENT that FrogNano fills through the init container
    FILLER, mounted read-only in the sandbox container; "build": the same emptyDir, writable
    by the sandbox (the environment build); "none": no ENVIRONMENT."""
    host_aliases: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(IP, host names) for the pod's /etc/hosts: the package index of a build pod, which has
    no DNS."""

    def __post_init__(self) -> None:
        if self.lifetime_seconds <= 0:
            raise ValueError("a sandbox pod's lifetime must be positive")


def pod_options(
    options: SandboxOptions, host_aliases: tuple[tuple[str, tuple[str, ...]], ...] = ()
) -> PodOptions:
    """The pod for a sandbox of `options`: the run's spec (image, resources, lifetime, run id,
    purpose, attempt as a label) in the settings' namespace, seccomp profile and start timeout,
    and its environment (kubernetes/environment.py resolves `host_aliases`)."""
    spec = options.spec
    environment: Literal["none", "filled", "build"] = "none"
    if options.environment is not None:
        environment = "build" if options.environment_writable else "filled"
    return PodOptions(
        namespace=options.k8s_namespace,
        image=spec.image,
        cpu=spec.cpu,
        memory=spec.memory,
        ephemeral_storage=spec.ephemeral_storage,
        runtime_class=spec.runtime_class,
        run_id=spec.run_id,
        purpose=spec.purpose,
        lifetime_seconds=spec.lifetime_seconds,
        start_timeout=options.k8s_start_timeout,
        labels={
            **({} if spec.attempt is None else {ATTEMPT: str(spec.attempt)}),
            **({} if spec.candidate is None else {CANDIDATE: str(spec.candidate)}),
        },
        seccomp_profile=options.k8s_seccomp_profile,
        environment=environment,
        host_aliases=host_aliases if environment == "build" else (),
    )


def label_value(text: str) -> str:
    """`text` made into a valid label value (at most 63 characters of [A-Za-z0-9_.-])."""
    return _LABEL_VALUE.sub("-", text)[:63].strip("-_.")


def _requests(limit: str, share: float) -> str:
    """A request that is a share of a limit, so the scheduler packs pods without overcommit
    on memory going past the limit; quantities the policy allows are plain numbers with units."""
    match = re.fullmatch(r"([0-9.]+)(m|Ki|Mi|Gi|Ti|K|M|G|T)?", limit)
    if match is None:
        return limit
    number, unit = float(match.group(1)), match.group(2) or ""
    if unit == "m":
        return f"{max(1, int(number * share))}m"
    if unit == "":
        return (
            f"{max(1, int(number * share * 1000))}m"
            if number * share < 1
            else f"{number * share:g}"
        )
    return f"{max(1, int(number * share))}{unit}"


def sandbox_pod(options: PodOptions, *, now: datetime | None = None) -> dict[str, Any]:
    """The Pod manifest for one sandbox; nothing in it gives the pod a credential or a route."""
    now = now or datetime.now(UTC)
    expires = now + timedelta(seconds=options.lifetime_seconds) + EXPIRY_MARGIN
    labels = {
        **{key: label_value(value) for key, value in options.labels.items()},
        MANAGED_BY: "frognano",
        COMPONENT: "sandbox",
        PURPOSE: label_value(options.purpose),
        EXPIRES: str(int(expires.timestamp())),
    }
    if options.run_id:
        labels[RUN_ID] = label_value(options.run_id)
    seccomp: dict[str, str] = (
        {"type": "Localhost", "localhostProfile": options.seccomp_profile}
        if options.seccomp_profile
        else {"type": "RuntimeDefault"}
    )
    container_security = {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": SANDBOX_UID,
        "runAsGroup": SANDBOX_UID,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": seccomp,
    }
    resources = {
        "requests": {
            "cpu": _requests(options.cpu, 0.5),
            "memory": _requests(options.memory, 0.5),
            "ephemeral-storage": _requests(options.ephemeral_storage, 0.2),
        },
        "limits": {
            "cpu": options.cpu,
            "memory": options.memory,
            "ephemeral-storage": options.ephemeral_storage,
        },
    }
    spec: dict[str, Any] = {
        # No token, no service environment variables, no DNS: nothing to find or to use.
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "dnsPolicy": "None",
        # dnsPolicy None requires a nameserver; nothing answers on the pod's own loopback.
        "dnsConfig": {"nameservers": ["127.0.0.1"]},
        "hostNetwork": False,
        "hostPID": False,
        "hostIPC": False,
        "restartPolicy": "Never",
        "activeDeadlineSeconds": options.lifetime_seconds,
        "terminationGracePeriodSeconds": 1,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": SANDBOX_UID,
            "runAsGroup": SANDBOX_UID,
            "fsGroup": SANDBOX_UID,
            "seccompProfile": seccomp,
        },
        "containers": [
            {
                "name": CONTAINER,
                "image": options.image,
                "imagePullPolicy": "IfNotPresent",
                # tini as pid 1 reaps the orphans that exec'd commands leave behind.
                "command": ["/usr/bin/tini", "--", "sleep", "infinity"],
                "workingDir": WORKSPACE,
                "env": [
                    {"name": "HOME", "value": HOME},
                    {"name": "TMPDIR", "value": TMP},
                    {"name": "USER", "value": "sandbox"},
                    {"name": "LANG", "value": "C.UTF-8"},
                    {"name": "TERM", "value": "dumb"},
                    {"name": "PAGER", "value": "cat"},
                    {"name": "GIT_PAGER", "value": "cat"},
                ],
                "securityContext": container_security,
                "resources": resources,
                "volumeMounts": [
                    {"name": "workspace", "mountPath": WORKSPACE},
                    {"name": "tmp", "mountPath": TMP},
                    {"name": "home", "mountPath": HOME},
                ],
            }
        ],
        # Disk-backed emptyDirs: a memory medium would count against the memory limit.
        # Going past a sizeLimit evicts the pod; the backend reports that as the reason.
        "volumes": [
            {"name": "workspace", "emptyDir": {"sizeLimit": options.ephemeral_storage}},
            {"name": "tmp", "emptyDir": {"sizeLimit": "2Gi"}},
            {"name": "home", "emptyDir": {"sizeLimit": "1Gi"}},
        ],
    }
    if options.runtime_class:
        spec["runtimeClassName"] = options.runtime_class
    if options.environment != "none":
        _add_environment(spec, options, container_security, resources)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "frognano-sandbox-",
            "namespace": options.namespace,
            "labels": labels,
            "annotations": {EXPIRES_AT: expires.strftime("%Y-%m-%dT%H:%M:%SZ")},
        },
        "spec": spec,
    }


def _add_environment(
    spec: dict[str, Any],
    options: PodOptions,
    security: dict[str, Any],
    resources: dict[str, Any],
) -> None:
    """The ENVIRONMENT emptyDir: read-only in the sandbox container and filled by an init
    container of another uid ("filled"), or writable by the sandbox ("build", which may also
    name the index's addresses in /etc/hosts); first on PATH, as in a local sandbox."""
    (container,) = spec["containers"]
    container["env"] += [
        {"name": "VIRTUAL_ENV", "value": ENVIRONMENT},
        {"name": PATH_FIRST, "value": f"{ENVIRONMENT}/bin"},
    ]
    filled = options.environment == "filled"
    container["volumeMounts"].append(
        {"name": "environment", "mountPath": ENVIRONMENT, "readOnly": filled}
    )
    spec["volumes"].append(
        {"name": "environment", "emptyDir": {"sizeLimit": options.ephemeral_storage}}
    )
    if filled:
        spec["initContainers"] = [
            {
                "name": FILLER,
                "image": options.image,
                "imagePullPolicy": "IfNotPresent",
                "command": ["/bin/bash", "--noprofile", "--norc", "-c", WAIT_FOR_FILL,
                            "frognano-fill", str(max(1, int(options.start_timeout)))],
                "env": [{"name": "LANG", "value": "C.UTF-8"}],
                "securityContext": {
                    **security, "runAsUser": FILLER_UID, "runAsGroup": FILLER_UID,
                },
                "resources": resources,
                "volumeMounts": [{"name": "environment", "mountPath": ENVIRONMENT}],
            }
        ]  # fmt: skip
    if options.host_aliases:
        spec["hostAliases"] = [
            {"ip": ip, "hostnames": list(names)} for ip, names in options.host_aliases
        ]
