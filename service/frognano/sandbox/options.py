"""How to build a sandbox: resource limits and the options each backend reads."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from frognano.sandbox.kubernetes.pod import PodOptions

if TYPE_CHECKING:
    from frognano.settings import Settings

GiB = 1024**3
MiB = 1024**2


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits applied to every command in a sandbox."""

    memory_bytes: int = 4 * GiB
    processes: int = 512
    file_size_bytes: int = 1 * GiB
    open_files: int = 4096
    disk_bytes: int = 10 * GiB
    """Everything written to /workspace, /tmp and home together (the policy's
    sandbox.ephemeral_storage); where a mechanism cannot cap it, docs/sandbox.md says so."""
    shm_bytes: int = 64 * MiB
    """Size of /dev/shm, a fresh tmpfs for every command."""

    def __post_init__(self) -> None:
        for limit in dataclasses.fields(self):
            if getattr(self, limit.name) <= 0:
                raise ValueError(f"sandbox limit {limit.name} must be positive")


@dataclass(frozen=True)
class SandboxOptions:
    """How to build a sandbox; each backend reads the fields it understands."""

    limits: SandboxLimits = field(default_factory=SandboxLimits)
    python_env: Path | None = None
    """Python environment to expose read-only; None picks the default (see pyenv.py)."""
    repo_venv: Path | None = None
    """A checkout's own `.venv` to expose, only when the caller asked for it (a trusted local
    checkout); it is refused unless everything it implies lies inside it (pyenv.py)."""
    local_mechanism: str = "auto"
    pod: PodOptions | None = None
    """The Kubernetes backend's pod: namespace, image, resources, lifetime, labels."""
    kubeconfig: Path | None = None
    """Kubeconfig for the Kubernetes backend; None: in-cluster, else the default one."""
    tool_files: tuple[tuple[str, bytes], ...] = ()
    """(file name, bytes) of FrogNano's own files to offer read-only under TOOLS; the local
    backend binds them from the host, a Kubernetes pod's image must carry them itself."""

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        repo_venv: Path | None = None,
        python_env: Path | None = None,
        limits: SandboxLimits | None = None,
        pod: PodOptions | None = None,
    ) -> SandboxOptions:
        """Options from the settings; `pod` carries the policy's image and resources, and
        its namespace and start timeout are taken from the settings."""
        pod = dataclasses.replace(
            pod or PodOptions(),
            namespace=settings.k8s_namespace,
            seccomp_profile=settings.k8s_seccomp_profile,
            start_timeout=settings.k8s_pod_start_timeout_seconds,
        )
        return cls(
            limits=limits or SandboxLimits(),
            python_env=python_env or settings.python_env,
            repo_venv=repo_venv,
            local_mechanism=settings.local_sandbox_mechanism,
            pod=pod,
            kubeconfig=settings.k8s_kubeconfig,
        )
