"""One run, stage by stage: sandbox, baseline, agent, patch, tests, report (what `solve` runs)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from frognano import __version__
from frognano.agent.loop import AgentLimits, AgentLoop, AgentResult, ChatModel, Progress, StopReason
from frognano.agent.model import ModelClient, SamplingConfig
from frognano.agent.tools import TOOL_DEFINITIONS, TOOLS_JSON, ToolBox
from frognano.agent.trajectory import TrajectoryWriter
from frognano.errors import ConfigError, ModelError, SandboxError
from frognano.log import get_logger
from frognano.reports import write_reports
from frognano.sandbox import SandboxOptions, create_sandbox
from frognano.sandbox.base import Sandbox
from frognano.settings import Settings
from frognano.verify import DEFAULT_TEST_COMMAND, DEFAULT_TEST_TIMEOUT, TestRun, run_tests
from frognano.workspace import Patch, collect_patch, make_baseline, upload_excludes

log = get_logger(__name__)


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


@dataclass(frozen=True)
class SolveJob:
    """Everything one `frognano solve` run needs besides the settings."""

    repo_dir: Path
    title: str
    body: str
    out_dir: Path
    backend: str = "local"
    test_command: str = DEFAULT_TEST_COMMAND
    test_timeout: float = DEFAULT_TEST_TIMEOUT
    python_env: Path | None = None
    limits: AgentLimits = field(default_factory=AgentLimits)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    run_id: str = field(default_factory=new_run_id)


@dataclass
class SolveOutcome:
    """How a run ended; `report` is what report.json holds."""

    patch_ready: bool
    reason: str
    report: dict[str, Any]
    out_dir: Path


@dataclass
class _Run:
    """What a run has found out so far; written to the reports however the run ends."""

    job: SolveJob
    started: float = field(default_factory=time.monotonic)
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    stages: dict[str, float] = field(default_factory=dict)
    mechanism: str | None = None
    base_commit: str | None = None
    agent: AgentResult | None = None
    patch: Patch | None = None
    tests: TestRun | None = None
    error: str | None = None


async def solve(
    settings: Settings,
    job: SolveJob,
    *,
    model: ChatModel | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> SolveOutcome:
    """Run the agent on a local checkout and write patch.diff, report.json, report.md and
    trajectory.jsonl to `job.out_dir`. Cancellation still writes the reports, then propagates.

    `model` replaces the OpenAI-compatible client built from the settings (tests, benchmarks).
    """
    repo_dir = job.repo_dir.resolve()
    excludes = upload_excludes(repo_dir)
    _prepare_out_dir(job.out_dir)
    run = _Run(job)
    stage = on_stage or (lambda _name: None)
    bound = log.bind(run_id=job.run_id)
    client: ModelClient | None = None
    try:
        if model is None:
            client = ModelClient(
                base_url=settings.model_base_url,
                model=settings.model_name,
                api_key=_secret(settings),
                tools_json=TOOLS_JSON,
                tool_definitions=TOOL_DEFINITIONS,
                # One number: the loop budgets the context with the turn size it asks for.
                sampling=replace(job.sampling, max_tokens=job.limits.max_tokens_per_turn),
            )
            stage("checking the model server")
            await client.check()
            model = client
        stage("starting the sandbox")
        options = SandboxOptions.from_settings(
            settings, repo_dir=repo_dir, python_env=job.python_env
        )
        async with await create_sandbox(job.backend, options) as box:
            run.mechanism = getattr(box, "mechanism", None)
            with _timed(run, "prepare"):
                stage("copying the repository")
                await box.upload_tree(repo_dir, exclude=excludes + _env_in_tree(box, repo_dir))
                run.base_commit = await make_baseline(box)
            bound.info("solve.prepared", base_commit=run.base_commit, mechanism=run.mechanism)
            stage("running the agent")
            await _run_agent(run, model, box, on_progress)
            if run.agent is not None and run.agent.stop_reason is not StopReason.SANDBOX_ERROR:
                stage("collecting the patch")
                with _timed(run, "diff"):
                    run.patch = await collect_patch(box, run.base_commit)
                stage(f"running the tests: {job.test_command}")
                with _timed(run, "tests"):
                    run.tests = await run_tests(box, job.test_command, job.test_timeout)
    except asyncio.CancelledError:
        run.error = "the run was cancelled"
        _finish(run)
        raise
    except (ModelError, SandboxError) as exc:
        run.error = str(exc)
    finally:
        if client is not None:
            await client.aclose()
    outcome = _finish(run)
    bound.info("solve.finished", patch_ready=outcome.patch_ready, reason=outcome.reason)
    return outcome


async def _run_agent(
    run: _Run,
    model: ChatModel,
    box: Sandbox,
    on_progress: Callable[[Progress], None] | None,
) -> None:
    job = run.job
    with TrajectoryWriter(job.out_dir / "trajectory.jsonl") as trajectory, _timed(run, "agent"):
        trajectory.write(
            "run_info",
            run_id=job.run_id,
            frognano=__version__,
            repo=str(job.repo_dir),
            base_commit=run.base_commit,
            sampling=asdict(job.sampling),
            sandbox={"backend": job.backend, "mechanism": run.mechanism},
        )
        loop = AgentLoop(
            model,
            ToolBox(box),
            title=job.title,
            body=job.body,
            limits=job.limits,
            trajectory=trajectory,
            on_progress=on_progress,
        )
        try:
            run.agent = await loop.run()
        finally:
            run.agent = run.agent or loop.result


def _finish(run: _Run) -> SolveOutcome:
    job = run.job
    patch_ready, reason = _verdict(run)
    report = _report(run, patch_ready, reason)
    write_reports(job.out_dir, report, run.patch.diff if run.patch else b"")
    return SolveOutcome(patch_ready, reason, report, job.out_dir)


def _verdict(run: _Run) -> tuple[bool, str]:  # noqa: PLR0911 - one return per outcome
    """Until the policy gate exists, a patch is ready when it is non-empty and tests pass."""
    if run.error is not None:
        return False, run.error
    agent = run.agent
    if agent is None:
        return False, "the agent did not run"
    if agent.stop_reason is StopReason.SANDBOX_ERROR:
        return False, agent.detail
    if run.patch is None or run.patch.empty:
        if agent.stop_reason is StopReason.COMPLETED:
            return False, "the agent finished without changing any file"
        return False, f"the agent stopped ({agent.detail}) without changing any file"
    if run.tests is None or not run.tests.passed:
        summary = run.tests.summary if run.tests else "not run"
        return False, f"the tests do not pass with the agent's patch ({summary})"
    if agent.stop_reason is not StopReason.COMPLETED:
        return True, f"a patch passes the tests, but the agent stopped early: {agent.detail}"
    return True, "the agent's patch passes the tests"


def _report(run: _Run, patch_ready: bool, reason: str) -> dict[str, Any]:
    job = run.job
    agent = run.agent
    stats = agent.stats if agent else None
    return {
        "run_id": job.run_id,
        "frognano": __version__,
        "started_at": run.started_at,
        "repo": str(job.repo_dir.resolve()),
        "issue_title": job.title,
        "outcome": {"patch_ready": patch_ready, "reason": reason},
        "stop_reason": agent.stop_reason.value if agent else None,
        "stop_detail": agent.detail if agent else run.error,
        "summary": agent.summary if agent else "",
        "steps": stats.steps if stats else 0,
        "max_steps": job.limits.max_steps,
        "tokens": {
            "prompt": stats.prompt_tokens if stats else 0,
            "completion": stats.completion_tokens if stats else 0,
            "cached": stats.cached_tokens if stats and stats.cache_reported else None,
            "last_prompt": stats.last_prompt_tokens if stats else 0,
        },
        "tool_calls": stats.tool_calls if stats else 0,
        "tool_errors": stats.tool_errors if stats else 0,
        "tools_used": dict(stats.tools_used) if stats else {},
        "truncated_turns": stats.truncated_turns if stats else 0,
        "compactions": stats.compactions if stats else 0,
        "durations": {
            "total": round(time.monotonic() - run.started, 3),
            **{name: round(seconds, 3) for name, seconds in run.stages.items()},
            "model": round(stats.model_seconds, 3) if stats else 0.0,
            "tools": round(stats.tool_seconds, 3) if stats else 0.0,
        },
        "sandbox": {"backend": job.backend, "mechanism": run.mechanism},
        "base_commit": run.base_commit,
        "patch": None
        if run.patch is None
        else {
            "files": list(run.patch.files),
            "insertions": run.patch.insertions,
            "deletions": run.patch.deletions,
            "bytes": len(run.patch.diff),
        },
        "tests": None
        if run.tests is None
        else {
            "command": run.tests.command,
            "exit_code": run.tests.exit_code,
            "passed": run.tests.passed,
            "timed_out": run.tests.timed_out,
            "summary": run.tests.summary,
            "duration": round(run.tests.duration, 3),
            "output_tail": run.tests.output_tail,
        },
        "limits": asdict(job.limits),
        "sampling": asdict(job.sampling),
        "error": run.error,
    }


class _timed:
    """Adds the block's duration to `run.stages[name]`."""

    def __init__(self, run: _Run, name: str) -> None:
        self.run, self.name = run, name

    def __enter__(self) -> None:
        self.started = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        elapsed = time.monotonic() - self.started
        self.run.stages[self.name] = self.run.stages.get(self.name, 0.0) + elapsed


def _prepare_out_dir(out_dir: Path) -> None:
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise ConfigError(f"{out_dir} already exists and is not empty; choose another --out")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the output folder {out_dir}: {exc.strerror}") from exc


def _env_in_tree(box: Sandbox, repo_dir: Path) -> list[str]:
    """The Python environment, when it lives inside the repo: mounted already, not copied."""
    env = getattr(box, "python_env", None)
    prefix = getattr(env, "prefix", None)
    if isinstance(prefix, Path) and prefix.is_relative_to(repo_dir):
        return [str(prefix.relative_to(repo_dir))]
    return []


def _secret(settings: Settings) -> str | None:
    key = settings.model_api_key
    return key.get_secret_value() if key is not None else None
