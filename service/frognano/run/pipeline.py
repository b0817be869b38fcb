"""One run, stage by stage: sandbox, agent, patch, verification, gate, report (`solve`)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from frognano import __version__
from frognano.agent.loop import AgentLimits, AgentLoop, ChatModel, Progress, StopReason
from frognano.agent.request import SamplingConfig
from frognano.agent.tools.box import ToolBox
from frognano.agent.trajectory import TrajectoryWriter
from frognano.errors import ConfigError, FrogNanoError, ModelError, SandboxUnavailable
from frognano.log import get_logger
from frognano.policy.gate.check import Finding
from frognano.policy.gate.diff import parse_diff
from frognano.policy.models import AgentPolicy, quantity_bytes
from frognano.run.apply import AppliedFile, apply_diff
from frognano.run.collector import collector_files
from frognano.run.digests import run_digests
from frognano.run.environment.stage import EnvironmentRequest, use_environment
from frognano.run.followup import FollowUpResult
from frognano.run.gatecheck import check_patch
from frognano.run.instructions import read_instructions
from frognano.run.job import RunState, SolveJob
from frognano.run.leftout import with_left_out
from frognano.run.outcomes import Role
from frognano.run.plan import make_plan
from frognano.run.ports import RunPorts, SandboxFactory
from frognano.run.report import RunReport, RunStage
from frognano.run.reports import build_report, write_reports
from frognano.run.sandbox_policy import sandbox_spec
from frognano.run.trees import HostTree
from frognano.run.variants import Variant, variant_for
from frognano.run.verdict import verdict
from frognano.run.verification import verify
from frognano.run.workspace import (
    Patch,
    collect_patch,
    env_in_tree,
    env_prefix_in_tree,
    prepare,
    upload_excludes,
)
from frognano.sandbox import SandboxLimits, SandboxOptions
from frognano.sandbox.base import Sandbox
from frognano.sandbox.hostpaths import host_paths_of

log = get_logger(__name__)


@dataclass
class SolveOutcome:
    """How a run ended; `report` is what report.json holds."""

    patch_ready: bool
    reason: str
    report: RunReport
    out_dir: Path
    changes: tuple[AppliedFile, ...] = ()
    """The files to publish (only when `patch_ready`): computed by FrogNano from the base
    and the gated diff, exactly the tree the patch's tests ran in; never read from a sandbox."""
    follow_up: FollowUpResult | None = None
    """A follow-up's increment on the head and its cumulative diff (only when `patch_ready`)."""


def limits_for(agent: AgentPolicy) -> tuple[AgentLimits, SamplingConfig]:
    """The loop's limits and the request's sampling values, from the policy's `agent` keys."""
    limits = AgentLimits(
        max_steps=agent.max_steps,
        time_limit_seconds=agent.time_limit_seconds,
        context_tokens=agent.context_tokens,
        max_tokens_per_turn=agent.max_tokens_per_turn,
    )
    sampling = SamplingConfig(
        max_tokens=agent.max_tokens_per_turn,
        temperature=agent.temperature,
        top_p=agent.top_p,
        top_k=agent.top_k,
        enable_thinking=agent.enable_thinking,
    )
    return limits, sampling


async def solve(
    ports: RunPorts,
    job: SolveJob,
    *,
    on_progress: Callable[[Progress], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> SolveOutcome:
    """Run the agent on a local checkout, verify and gate its patch, and write patch.diff,
    report.json, report.md and trajectory.jsonl to `job.out_dir`. Cancellation still writes
    the reports, then propagates.

    `ports` are how the run reaches the model and makes sandboxes: its composition root's
    (`frognano solve`, the worker, a test) choice, built from the settings or not.
    """
    if not job.policy.enabled:
        raise ConfigError(
            f"the policy ({job.policy_source}) disables FrogNano for {job.repo} (enabled: false)"
        )
    repo_dir = job.repo_dir.resolve()
    excludes = list(job.exclude) if job.exclude is not None else upload_excludes(repo_dir)
    _prepare_out_dir(job.out_dir)
    run = RunState(job)
    variant = variant_for(job.follow_up)
    stage = on_stage or (lambda _name: None)
    bound = log.bind(run_id=job.run_id, repo=job.repo)
    _, sampling = limits_for(job.policy.agent)
    sandboxes = ports.sandboxes
    options = sandboxes.options(
        repo_venv=repo_dir / ".venv" if job.repo_venv else None,
        python_env=job.python_env,
        limits=SandboxLimits(
            memory_bytes=quantity_bytes(job.policy.sandbox.memory),
            disk_bytes=quantity_bytes(job.policy.sandbox.ephemeral_storage),
        ),
        spec=sandbox_spec(
            job.policy, run_id=job.run_id, attempt=job.attempt, candidate=job.candidate
        ),
    )
    options = dataclasses.replace(options, tool_files=collector_files())
    model = ports.model(sampling)
    try:
        if model.base_url is not None:
            stage("checking the model server")
            await model.check(wait=job.wait_for_model)
        run.model = model.describe()
        await _work(
            run,
            variant,
            model,
            ports,
            options=options,
            excludes=excludes,
            stage=stage,
            on_progress=on_progress,
        )
    except asyncio.CancelledError:
        run.error = "the run was cancelled"
        _finish(run, variant)
        raise
    except (ConfigError, SandboxUnavailable):
        raise  # bad usage or an unfit host: exit 2, there is no run to report
    except (ModelError, FrogNanoError) as exc:
        run.error = str(exc)
    finally:
        await model.aclose()
    outcome = _finish(run, variant)
    bound.info("solve.finished", patch_ready=outcome.patch_ready, reason=outcome.reason)
    return outcome


async def _work(
    run: RunState,
    variant: Variant,
    model: ChatModel,
    ports: RunPorts,
    *,
    options: SandboxOptions,
    excludes: list[str],
    stage: Callable[[str], None],
    on_progress: Callable[[Progress], None] | None,
) -> None:
    """The stages that need sandboxes: the environment's (when the policy names an index),
    the agent's, then fresh ones for verification. The environment stays held (never
    evicted) until verification is over."""
    async with contextlib.AsyncExitStack() as held:
        if run.job.policy.environment.index_url is not None:
            stage("preparing the environment through the approved package index")
        with _timed(run, "environment"):
            options, run.environment = await use_environment(
                _environment_request(run.job, excludes, options),
                ports.environments,
                options,
                lambda wanted: ports.sandboxes.create(run.job.backend, wanted),
                held,
            )
        await _agent_and_verify(
            run,
            variant,
            model,
            ports.sandboxes,
            options=options,
            excludes=excludes,
            stage=stage,
            on_progress=on_progress,
        )


def _environment_request(
    job: SolveJob, excludes: list[str], options: SandboxOptions
) -> EnvironmentRequest:
    repo_dir = job.repo_dir.resolve()
    image = "local" if job.backend == "local" else job.policy.sandbox.image
    exclude = excludes + env_prefix_in_tree(options, repo_dir)
    return EnvironmentRequest(repo_dir, exclude, job.policy.environment, image, job.backend)


async def _agent_and_verify(
    run: RunState,
    variant: Variant,
    model: ChatModel,
    sandboxes: SandboxFactory,
    *,
    options: SandboxOptions,
    excludes: list[str],
    stage: Callable[[str], None],
    on_progress: Callable[[Progress], None] | None,
) -> None:
    job = run.job
    repo_dir = job.repo_dir.resolve()
    stage("starting the sandbox")
    async with await sandboxes.create(job.backend, options) as box:
        run.mechanism = box.mechanism
        run.host_paths = host_paths_of(box)
        exclude = excludes + env_in_tree(box, repo_dir)
        # From the host's copy of the base, as uploaded: never anything the agent wrote.
        outside = [link.path for link in job.left_out_links]
        run.instructions = await asyncio.to_thread(
            read_instructions, repo_dir, job.policy.agent, exclude, outside
        )
        # After the instructions: a link out of the tree fails the scan, and the report
        # should still say what the instructions were.
        key = run.environment.key if run.environment is not None else None
        run.digests, run.base_tree = await run_digests(
            job.title, job.body, job.policy, repo_dir, exclude, key
        )
        if run.replay is not None and (
            refused := run.replay.check_inputs(run.digests, run.host_paths)
        ):
            run.error = f"the replay stopped before the agent ran: {refused}"
            return
        with _timed(run, "prepare"):
            setup = " and running the policy's setup" if job.policy.sandbox.setup else ""
            stage(f"copying the repository{setup}")
            run.base_commit = await prepare(box, repo_dir, exclude, job.policy.sandbox.setup)
            await variant.prepare(run, box, exclude, stage)
        log.info("solve.prepared", run_id=job.run_id, base=run.base_commit, via=run.mechanism)
        stage("running the agent")
        await _run_agent(run, variant, model, box, on_progress=on_progress)
        if run.agent is not None and run.agent.stop_reason is not StopReason.SANDBOX_ERROR:
            stage("collecting the patch")
            with _timed(run, "diff"):
                run.patch = await collect_patch(box, run.base_commit)
                await variant.collect(box)
    diverged = run.replay is not None and run.replay.steps.difference is not None
    if run.patch is None or run.patch.empty or variant.unchanged() or diverged:
        return  # a replay that diverged is not ready whatever the tests say: not run
    await _check_and_verify(run, variant, run.patch, sandboxes, options, exclude, stage)


async def _check_and_verify(  # noqa: PLR0917 - the run, its kind, then its parts
    run: RunState,
    variant: Variant,
    patch: Patch,
    sandboxes: SandboxFactory,
    options: SandboxOptions,
    exclude: list[str],
    stage: Callable[[str], None],
) -> None:
    """Apply the diff to the base here, outside every sandbox; gate it; test it."""
    job = run.job
    stage("checking the patch")
    # The scan the digests were taken of: the host's copy does not change during a run.
    base = run.base_tree or await HostTree.scan(job.repo_dir, exclude)
    try:
        applied = await asyncio.to_thread(apply_diff, parse_diff(patch.diff), base)
    except ValueError as exc:
        run.findings = [
            Finding(
                "block",
                "malformed",
                f"the patch cannot be applied to the base ({exc}); it is neither tested nor "
                "published",
            )
        ]
        return
    run.plan = plan = make_plan(applied, base, base.paths, job.policy)
    findings = check_patch(patch.diff, applied, base, plan, job.policy)
    run.findings = with_left_out(findings, applied, job.left_out_links)
    if not await variant.check(run, base, plan):
        return
    stage(f"verifying the patch in fresh sandboxes: {job.policy.verify.command}")

    async def sandbox_for(role: Role) -> Sandbox:
        purpose = "verify-" + role.replace("_", "-")
        return await sandboxes.create(job.backend, options.for_purpose(purpose))

    identity = job.backend + (f" {job.policy.sandbox.image}" if job.backend != "local" else "")
    if run.environment is not None:
        identity += f" environment {run.environment.key}"  # another environment, another baseline
    with _timed(run, "verify"):
        run.verification = await verify(
            plan, base, job.policy, sandbox_for, identity=identity, cache=job.baseline_cache
        )


async def _run_agent(
    run: RunState,
    variant: Variant,
    model: ChatModel,
    box: Sandbox,
    *,
    on_progress: Callable[[Progress], None] | None,
) -> None:
    limits, sampling = limits_for(run.job.policy.agent)
    job = run.job
    audit = run.replay.steps.observe if run.replay is not None else None
    path = job.out_dir / "trajectory.jsonl"
    with TrajectoryWriter(path, observer=audit) as trajectory, _timed(run, "agent"):
        trajectory.write(
            "run_info",
            run_id=job.run_id,
            frognano=__version__,
            **(dict(run.digests.record()) if run.digests is not None else {}),
            repo=job.repo,
            repo_dir=str(job.repo_dir.resolve()),
            base_commit=run.base_commit,
            policy=job.policy_source,
            model=run.model,
            sampling=sampling.summary(),
            sandbox={
                "backend": job.backend,
                "mechanism": run.mechanism,
                "host_paths": run.host_paths.to_json(),
            },
        )
        loop = AgentLoop(
            model,
            ToolBox(box),
            title=job.title,
            body=job.body,
            guidance=run.instructions.guidance() if run.instructions else (),
            follow_up=variant.prompt(),
            limits=limits,
            trajectory=trajectory,
            on_progress=on_progress,
        )
        run.hidden = loop.hidden
        try:
            run.agent = await loop.run()
        finally:
            run.agent = run.agent or loop.result


def _finish(run: RunState, variant: Variant) -> SolveOutcome:
    if run.replay is not None:
        run.replay.conclude(run.patch.diff if run.patch is not None else None)
    patch_ready, reason = verdict(run, variant)
    total = time.monotonic() - run.started
    report = build_report(run, patch_ready, reason, total, variant.record(run.patch))
    write_reports(run.job.out_dir, report, run.patch.diff if run.patch else b"")
    changes = run.plan.published if patch_ready and run.plan else ()
    result = variant.result(run.patch) if patch_ready else None
    return SolveOutcome(patch_ready, reason, report, run.job.out_dir, changes, result)


class _timed:
    """Adds the block's duration to `run.stages[name]`."""

    def __init__(self, run: RunState, name: RunStage) -> None:
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
