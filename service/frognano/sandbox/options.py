"""How to build a sandbox: limits, what a run asks of it, and the options each backend reads."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

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
class SandboxSpec:
    """What a run asks of a sandbox, in no backend's terms: the image and resources the policy
    sets, how long it may live, and whose it is. The Kubernetes backend builds its pod from it
    (kubernetes/pod.py); a local sandbox takes its limits from SandboxLimits instead."""

    image: str = "ghcr.io/frognano/sandbox-python:3.11"
    cpu: str = "2"
    memory: str = "4Gi"
    ephemeral_storage: str = "10Gi"
    runtime_class: str | None = None
    """A runtime such as gVisor or Kata; None: the backend's default."""
    run_id: str = ""
    purpose: str = "agent"
    """agent, verify-ROLE or network-check: shown where a backend can say what a sandbox is
    for (a pod's label)."""
    attempt: int | None = None
    """Which try of its job made the sandbox (the worker's), so that a dead attempt's
    sandboxes can be deleted without the next attempt's."""
    candidate: int | None = None
    """Which of a best-of-N run's attempts made the sandbox (from 1); None for a single run.
    The run id and the try stay the job's, so a dead job's sandboxes are found all together."""
    lifetime_seconds: int = 4 * 3600
    """How long the sandbox may live at most, even if FrogNano is gone (a pod's
    activeDeadlineSeconds)."""

    def __post_init__(self) -> None:
        if self.lifetime_seconds <= 0:
            raise ValueError("a sandbox's lifetime must be positive")

    def for_purpose(self, purpose: str, *, run_id: str | None = None) -> SandboxSpec:
        """The same sandbox for another purpose (and run id, when given)."""
        return dataclasses.replace(
            self, purpose=purpose, run_id=self.run_id if run_id is None else run_id
        )


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
    spec: SandboxSpec = field(default_factory=SandboxSpec)
    """What the run asks of the sandbox: image, resources, lifetime, purpose."""
    kubeconfig: Path | None = None
    """Kubeconfig for the Kubernetes backend; None: in-cluster, else the default one."""
    k8s_namespace: str = "frognano-sandbox"
    """The namespace of the Kubernetes backend's pods (FROGNANO_K8S_NAMESPACE)."""
    k8s_seccomp_profile: str | None = None
    """A Localhost seccomp profile for the pods (path under the kubelet's seccomp folder);
    None: RuntimeDefault (FROGNANO_K8S_SECCOMP_PROFILE)."""
    k8s_start_timeout: float = 600.0
    """Seconds a pod may take to run its first command (FROGNANO_K8S_POD_START_TIMEOUT_SECONDS)."""
    environment: Path | None = None
    """A built Python environment (host folder) bound at ENVIRONMENT and first on PATH, in
    place of `python_env`'s own packages; the interpreter it was made from stays mounted."""
    environment_writable: bool = False
    """Only for the sandbox that builds the environment: bind it writable."""
    egress: Path | None = None
    """A host folder bound at EGRESS (the environment phase's proxy socket); None: no way out."""
    index_urls: tuple[str, ...] = ()
    """The package index URLs an environment build may reach, on Kubernetes: the backend
    resolves their host names into the build pod's hostAliases (the pod has no DNS); what the
    pod can reach is the cluster's NetworkPolicy's to decide. The local backend uses `egress`."""
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
        spec: SandboxSpec | None = None,
    ) -> SandboxOptions:
        """Options from the settings; `spec` carries the policy's image and resources, and
        the Kubernetes namespace, seccomp profile and start timeout come from the settings."""
        return cls(
            limits=limits or SandboxLimits(),
            python_env=python_env or settings.python_env,
            repo_venv=repo_venv,
            local_mechanism=settings.local_sandbox_mechanism,
            spec=spec or SandboxSpec(),
            kubeconfig=settings.k8s_kubeconfig,
            k8s_namespace=settings.k8s_namespace,
            k8s_seccomp_profile=settings.k8s_seccomp_profile,
            k8s_start_timeout=settings.k8s_pod_start_timeout_seconds,
        )

    def for_purpose(self, purpose: str, *, run_id: str | None = None) -> SandboxOptions:
        """These options for a sandbox of another purpose (SandboxSpec.for_purpose)."""
        return dataclasses.replace(self, spec=self.spec.for_purpose(purpose, run_id=run_id))
