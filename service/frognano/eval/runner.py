"""`frognano eval`'s run: each instance checked out, attempted, officially evaluated, kept."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from frognano.agent.trajectory import read_events
from frognano.agent.trajectory_view import run_files
from frognano.errors import ConfigError
from frognano.eval.instances import Instance
from frognano.eval.official import EvalCommand, evaluate
from frognano.eval.records import (
    Attempt,
    InstanceResult,
    Mode,
    Official,
    TestsStatus,
    Verdict,
    read_result,
    write_result,
)
from frognano.eval.repos import check_out, find_repository
from frognano.log import get_logger
from frognano.policy.models import EffectivePolicy, quantity_bytes
from frognano.run.baselines import BaselineCache
from frognano.run.collector import collector_files
from frognano.run.job import SolveJob
from frognano.run.pipeline import limits_for, solve
from frognano.run.ports import RunPorts
from frognano.run.ranking import strength_of
from frognano.run.report import RunReport
from frognano.run.runid import new_run_id
from frognano.run.sandbox_policy import sandbox_spec
from frognano.run.trees import HostTree
from frognano.sandbox import SandboxLimits
from frognano.sandbox.base import Sandbox

log = get_logger(__name__)

INSTANCES_DIR = "instances"


@dataclass(frozen=True)
class EvalPlan:
    """What one `frognano eval` invocation does."""

    instances: tuple[Instance, ...]
    repos: Path
    out: Path
    mode: Mode
    model_name: str
    """`model_name_or_path` of the predictions: the served model, `gold`, or the file's."""
    policy: EffectivePolicy
    policy_source: str
    attempts: int = 1
    workers: int = 1
    redo: bool = False
    backend: str = "local"
    python_env: Path | None = None
    predictions: Mapping[str, str] = field(default_factory=dict)
    """instance id -> model_patch (`--predictions`)."""
    by_repo: Mapping[str, tuple[EffectivePolicy, str]] = field(default_factory=dict)
    """`owner/name` -> its effective policy and where it came from, as the App would resolve
    it for an issue of that repository; `policy` for a repository not in it."""
    baseline_cache: BaselineCache | None = None


@dataclass(frozen=True)
class EvalEvents:
    """What the CLI shows while the run goes; every callback is optional."""

    started: Callable[[str], None] = lambda _id: None
    finished: Callable[[InstanceResult], None] = lambda _result: None
    skipped: Callable[[InstanceResult], None] = lambda _result: None
    """A finished instance from an earlier run, kept (no `--redo`)."""


def instance_dir(out: Path, instance_id: str) -> Path:
    return out / INSTANCES_DIR / instance_id


def finished(plan: EvalPlan) -> list[InstanceResult]:
    """The results on disk for the plan's instances (a finished one is never redone)."""
    found = (read_result(instance_dir(plan.out, i.instance_id)) for i in plan.instances)
    return [r for r in found if r is not None and r.complete]


async def run_eval(
    plan: EvalPlan, ports: RunPorts, events: EvalEvents | None = None
) -> list[InstanceResult]:
    """Every instance of the plan not finished before (all with `redo`), `workers` attempts
    at a time. An instance's result.json is written last: a run stopped at any point
    leaves finished instances whole and the rest to be done again."""
    policies = [plan.policy, *(policy for policy, _ in plan.by_repo.values())]
    if any(policy.environment.index_url is not None for policy in policies):
        raise ConfigError(
            "frognano eval does not build environments through a package index yet (the "
            "policy sets environment.index_url): give the instances' dependencies with "
            "--python-env"
        )
    if plan.mode == "agent":
        await _check_model(ports, plan.policy)
    shown = events or EvalEvents()
    # At most `workers` instances checked out at once, and `workers` attempts running among
    # them: an instance's attempts share the budget with the others'.
    instances = asyncio.Semaphore(plan.workers)
    gate = asyncio.Semaphore(plan.workers)
    results: dict[str, InstanceResult] = {}

    async def one(instance: Instance) -> None:
        folder = instance_dir(plan.out, instance.instance_id)
        done = None if plan.redo else read_result(folder)
        if done is not None and done.complete:
            results[instance.instance_id] = done
            shown.skipped(done)
            return
        async with instances:
            shown.started(instance.instance_id)
            started = time.monotonic()
            result = await _instance(plan, ports, instance, folder, gate)
            result = result.model_copy(update={"seconds": round(time.monotonic() - started, 3)})
            await asyncio.to_thread(write_result, folder, result)
        results[instance.instance_id] = result
        shown.finished(result)

    async with asyncio.TaskGroup() as group:
        for instance in plan.instances:
            group.create_task(one(instance))
    return [results[i.instance_id] for i in plan.instances if i.instance_id in results]


async def _instance(
    plan: EvalPlan,
    ports: RunPorts,
    instance: Instance,
    folder: Path,
    gate: asyncio.Semaphore,
) -> InstanceResult:
    await asyncio.to_thread(_fresh, folder)
    general, source = plan.by_repo.get(instance.repo, (plan.policy, plan.policy_source))
    policy = _policy_for(general, instance)
    how = EvalCommand(
        command=policy.verify.command,
        setup=tuple(policy.sandbox.setup),
        timeout=policy.verify.timeout_seconds,
    )
    count = plan.attempts if plan.mode == "agent" else 1
    with tempfile.TemporaryDirectory(prefix="frognano-eval-") as scratch:
        repo_dir = Path(scratch) / "repo"
        try:
            gitdir = find_repository(plan.repos, instance.repo)
            await asyncio.to_thread(check_out, gitdir, instance.base_commit, repo_dir)
            base = await HostTree.scan(repo_dir, ())
        except (ConfigError, OSError) as exc:
            attempts = [_failed(n, f"the base could not be checked out: {exc}") for n in (1,)]
            return _result(plan, instance, attempts)

        async def attempt(number: int) -> Attempt:
            async with gate:
                return await _attempt(
                    plan, ports, instance, (policy, source), how, base, folder, number
                )

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(attempt(n)) for n in range(1, count + 1)]
    return _result(plan, instance, [t.result() for t in tasks])


def _result(plan: EvalPlan, instance: Instance, attempts: Sequence[Attempt]) -> InstanceResult:
    """The instance's attempts, and the one FrogNano's own evidence ranks strongest (the key
    ranking.py computed from each attempt's report; an attempt with no verdict ranks last)."""
    last = [float("inf")]
    keys = [a.verdict.strength if a.verdict is not None else last for a in attempts]
    chosen = min(range(len(keys)), key=lambda i: (keys[i], i))
    return InstanceResult(
        instance_id=instance.instance_id,
        mode=plan.mode,
        model_name_or_path=plan.model_name,
        attempts=list(attempts),
        chosen=chosen,
    )


def _fresh(folder: Path) -> None:
    """An empty folder for the instance: what an interrupted run (or the one `--redo`
    replaces) left is never mixed with the new results."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)


def _policy_for(policy: EffectivePolicy, instance: Instance) -> EffectivePolicy:
    """The policy with the instance's own test command and setup, where it names them."""
    verify, sandbox = policy.verify, policy.sandbox
    if instance.test_command is not None:
        verify = verify.model_copy(update={"command": instance.test_command})
    if instance.setup is not None:
        sandbox = sandbox.model_copy(update={"setup": list(instance.setup)})
    return policy.model_copy(update={"verify": verify, "sandbox": sandbox})


def _failed(number: int, why: str) -> Attempt:
    empty = TestsStatus(success=[], failure=[])
    official = Official(
        status="error",
        reason=why,
        patch_applied=False,
        fail_to_pass=empty,
        pass_to_pass=empty,
        seconds=0.0,
    )
    return Attempt(attempt=number, model_patch="", official=official, error=why)


async def _attempt(  # noqa: PLR0917 - one attempt's inputs, in the order they are made
    plan: EvalPlan,
    ports: RunPorts,
    instance: Instance,
    policy_and_source: tuple[EffectivePolicy, str],
    how: EvalCommand,
    base: HostTree,
    folder: Path,
    number: int,
) -> Attempt:
    policy, source = policy_and_source
    run_dir = folder / f"attempt-{number}"
    run_dir.mkdir()

    async def sandbox() -> Sandbox:
        return await _evaluation_sandbox(plan, ports, policy)

    if plan.mode != "agent":
        patch = instance.patch if plan.mode == "gold" else plan.predictions[instance.instance_id]
        (run_dir / "model.patch").write_text(patch, encoding="utf-8")
        official = await evaluate(instance, base, patch, how, sandbox)
        _write_test_output(run_dir, official)
        return Attempt(attempt=number, model_patch=patch, official=official, run_dir=run_dir.name)
    job = SolveJob(
        repo_dir=base.root,
        title=instance.title,
        body=instance.problem_statement,
        out_dir=run_dir,
        repo=instance.repo,
        policy=policy,
        policy_source=source,
        backend=plan.backend,
        python_env=plan.python_env,
        run_id=new_run_id(),
        exclude=(),
        baseline_cache=plan.baseline_cache,
    )
    # A configuration error or an unfit host stops the whole eval (exit 2): every other
    # instance would fail the same way.
    outcome = await solve(ports, job)
    report = outcome.report
    diff = run_dir / "patch.diff"
    patch = diff.read_text(encoding="utf-8", errors="surrogateescape") if diff.is_file() else ""
    failure = _run_failure(report)
    if failure is not None:
        # The run failed (the model server, a sandbox): an error, never an empty patch, and
        # tried again when the eval is resumed.
        official = _failed(number, f"the agent's run failed: {failure}").official
    else:
        official = await evaluate(instance, base, patch, how, sandbox)
    _write_test_output(run_dir, official)
    await asyncio.to_thread(_write_trajectory_page, run_dir)
    strength = strength_of(report)
    tokens = report["tokens"]
    return Attempt(
        attempt=number,
        model_patch=patch,
        official=official,
        verdict=Verdict(
            ready=outcome.patch_ready,
            reason=outcome.reason,
            strength=list(strength.key()),
            evidence=strength.describe(),
        ),
        steps=report["steps"],
        prompt_tokens=tokens["prompt"],
        completion_tokens=tokens["completion"],
        agent_seconds=report["durations"].get("agent", 0.0),
        stop_reason=report["stop_reason"],
        error=failure,
        run_dir=run_dir.name,
    )


_FAILED_STOPS = frozenset({"model_error", "sandbox_error", "cancelled"})
"""How a run ends when something other than the model's choices stopped it."""


def _run_failure(report: RunReport) -> str | None:
    """Why the agent's run failed, or None when it ran (whatever it then produced)."""
    if report["error"] is not None:
        return report["error"]
    stop = report["stop_reason"]
    if stop in _FAILED_STOPS:
        detail = report["stop_detail"]
        return f"the agent stopped: {stop}" + (f" ({detail})" if detail else "")
    return None


async def _check_model(ports: RunPorts, policy: EffectivePolicy) -> None:
    """Before any instance: a model server that does not answer stops the eval with what to
    do (every instance would fail the same way, and be an error to run again)."""
    session = ports.model(limits_for(policy.agent)[1])
    try:
        if session.base_url is not None:
            await session.check(wait=False)
    finally:
        await session.aclose()


async def _evaluation_sandbox(plan: EvalPlan, ports: RunPorts, policy: EffectivePolicy) -> Sandbox:
    """A fresh sandbox built as a run's verification sandboxes are (the same options)."""
    options = ports.sandboxes.options(
        python_env=plan.python_env,
        repo_venv=None,
        limits=SandboxLimits(
            memory_bytes=quantity_bytes(policy.sandbox.memory),
            disk_bytes=quantity_bytes(policy.sandbox.ephemeral_storage),
        ),
        spec=sandbox_spec(policy, run_id=new_run_id(), purpose="evaluation"),
    )
    options = dataclasses.replace(options, tool_files=collector_files())
    return await ports.sandboxes.create(plan.backend, options.for_purpose("evaluation"))


def _write_test_output(run_dir: Path, official: Official) -> None:
    (run_dir / "test_output.txt").write_text(official.test_output, encoding="utf-8")


def _write_trajectory_page(run_dir: Path) -> None:
    """trajectory.html beside trajectory.jsonl, as `frognano trajectory show --format html`
    writes it, for the summary page to link to."""
    from frognano.agent.trajectory_html import render_html  # noqa: PLC0415 - only here

    trajectory = run_dir / "trajectory.jsonl"
    if not trajectory.is_file():
        return
    read = read_events(trajectory)
    if read.events:
        page = render_html(read.events, source=trajectory.name, files=run_files(trajectory))
        (run_dir / "trajectory.html").write_text(page, encoding="utf-8")


__all__ = ["EvalEvents", "EvalPlan", "finished", "instance_dir", "run_eval"]
