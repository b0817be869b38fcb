"""One run's job (what `solve` is asked to do) and its state (what it has found so far)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from frognano.agent.loop_types import AgentResult
from frognano.agent.untrusted import Hidden
from frognano.policy.gate.findings import Finding
from frognano.policy.models import EffectivePolicy
from frognano.run.baselines import BaselineCache
from frognano.run.digests import RunDigests
from frognano.run.environment.record import EnvironmentUse
from frognano.run.followup import FollowUp
from frognano.run.instructions import Instructions
from frognano.run.leftout import LeftOutLink
from frognano.run.plan import Plan
from frognano.run.replay_audit import ReplayAudit, ReplayOf
from frognano.run.report import RunStage
from frognano.run.runid import new_run_id
from frognano.run.trees import HostTree
from frognano.run.verification import Verification
from frognano.run.workspace import Patch
from frognano.sandbox.hostpaths import HostPaths

__all__ = ["RunState", "SolveJob"]


@dataclass(frozen=True)
class SolveJob:
    """Everything one `frognano solve` run needs besides the settings."""

    repo_dir: Path
    title: str
    body: str
    out_dir: Path
    repo: str = "local/repo"
    """`owner/name`, as policy rules match it."""
    policy: EffectivePolicy = field(default_factory=EffectivePolicy)
    policy_source: str = "built-in defaults"
    backend: str = "local"
    python_env: Path | None = None
    repo_venv: bool = False
    """Expose REPO_DIR/.venv instead of FrogNano's environment (`solve --repo-venv`, a trusted
    local checkout only; the worker never sets it)."""
    run_id: str = field(default_factory=new_run_id)
    exclude: tuple[str, ...] | None = None
    """Relative paths left out of the upload; None: ask git (`.git` and what it ignores).
    A tree that is not a checkout, such as an extracted GitHub tarball, passes ()."""
    attempt: int | None = None
    """Which try of the worker's job this run is; its sandboxes carry it (a pod as a label) so
    that a dead attempt's can be deleted without the next's. None outside the worker."""
    candidate: int | None = None
    """Which of a best-of-N run's attempts (policy `agent.attempts`) this is, from 1; None for
    a single run. Not `attempt`: all candidates of a job share its run id and its try, and
    their sandboxes carry this beside them."""
    baseline_cache: BaselineCache | None = None
    """Where baseline runs are kept for reuse; None runs the baseline every time."""
    wait_for_model: bool = False
    """Retry the first contact with the model server (the worker: SGLang may be starting);
    False fails at once, for a person at a terminal."""
    follow_up: FollowUp | None = None
    """A later round on a pull request a run opened; None for a first run."""
    left_out_links: tuple[LeftOutLink, ...] = ()
    """Symlinks of the repository that `repo_dir` (and a follow-up's head) does not hold
    because they lead outside it (the worker's download leaves them out): named in the
    reports, and no patch may touch them (leftout.py). A local checkout has none: `solve`
    refuses such a link instead."""
    replay: ReplayOf | None = None
    """A replay's recording (`solve --replay`): its model turns are played back and the run
    is audited against it (replay_audit.py); None for a run of a model."""


@dataclass
class RunState:
    """What a run has found out so far; written to the reports however the run ends."""

    job: SolveJob
    started: float = field(default_factory=time.monotonic)
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    stages: dict[RunStage, float] = field(default_factory=dict)
    mechanism: str | None = None
    environment: EnvironmentUse | None = None
    """The environment the run's sandboxes used (policy environment.index_url), if any."""
    host_paths: HostPaths = field(default_factory=HostPaths)
    model: dict[str, Any] = field(default_factory=dict)
    """What the trajectory's `run_info` records of the model (`ModelSession.describe`)."""
    """The host folders the run's sandboxes show at their own paths (all are built alike)."""
    base_commit: str | None = None
    instructions: Instructions | None = None
    agent: AgentResult | None = None
    hidden: tuple[Hidden, ...] = ()
    """What the task's untrusted texts held that GitHub does not show, kept from the agent."""
    patch: Patch | None = None
    plan: Plan | None = None
    verification: Verification | None = None
    findings: list[Finding] | None = None
    error: str | None = None
    digests: RunDigests | None = None
    """The run's inputs as digests (run_info records them); None before they are taken."""
    base_tree: HostTree | None = None
    """The base as uploaded, scanned once for the digests and reused to check the patch."""
    replay: ReplayAudit | None = None
    """A replay's audit, filled in as the run goes; None unless `job.replay`."""

    def __post_init__(self) -> None:
        if self.job.replay is not None and self.replay is None:
            self.replay = ReplayAudit(self.job.replay.recording, self.job.replay.expected_patch)
