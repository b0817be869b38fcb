"""Verifying a patch: each test run in a fresh sandbox from a pristine tree, all at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from frognano.log import get_logger
from frognano.policy.models import EffectivePolicy
from frognano.run.baselines import (
    BaselineCache,
    cache_key,
    dump_run,
    environment_digest,
    load_run,
)
from frognano.run.changedlines import ChangedLines, changed_lines, measured_files
from frognano.run.collector import collector_digest
from frognano.run.evidence import Evidence, Rules, Runs, decide
from frognano.run.necessity import Necessity, Wanted, check_hunks
from frognano.run.outcomes import Role, TestRun
from frognano.run.plan import Plan
from frognano.run.testrun import run_tests
from frognano.run.trees import HostTree, Overlay, build_tree
from frognano.run.workspace import run_setup
from frognano.sandbox.base import Sandbox

log = get_logger(__name__)

SandboxFactory = Callable[[Role], Awaitable[Sandbox]]
"""Starts a fresh sandbox for one test run (the role names it, e.g. in a pod's labels)."""


@dataclass(frozen=True)
class Verification:
    """Everything verification found out, for the verdict and the report."""

    rules: Rules
    evidence: Evidence
    runs: Runs | None = None
    plan: Plan | None = None
    notes: tuple[str, ...] = ()
    """How the runs were made, where that matters to a reviewer (cache, collector copy)."""
    limits: tuple[str, ...] = ()
    """What the evidence cannot show, in plain sentences."""
    necessity: Necessity | None = None
    """Which hunks of the fix the tests need (policy verify.hunks), once the evidence held."""
    changed: ChangedLines | None = None
    """Which changed lines of the fix the tests executed (verify.changed_line_coverage)."""
    unmet: str = ""
    """Why verify.hunks: require_needed is not met; empty when it is (or not asked)."""

    @property
    def held(self) -> bool:
        return self.evidence.held and not self.unmet

    @property
    def reason(self) -> str:
        return self.unmet or self.evidence.reason


def rules_of(policy: EffectivePolicy) -> Rules:
    verify = policy.verify
    return Rules(
        require=verify.require,
        fails_differently=verify.fails_differently,
        fail_to_pass=tuple(verify.fail_to_pass),
        pass_to_pass=tuple(verify.pass_to_pass),
    )


@dataclass
class _Context:
    base: HostTree
    policy: EffectivePolicy
    sandboxes: SandboxFactory
    identity: str
    cache: BaselineCache | None
    notes: list[str] = field(default_factory=list)
    cover: tuple[str, ...] = ()
    """The fix's Python files, measured in the runs with the patch."""

    def base_file(self, path: str) -> tuple[str, bytes] | None:
        entry = self.base.entry(path)
        if entry is None or entry.kind == "dir":
            return None
        return entry.mode, self.base.read(path)


async def verify(
    plan: Plan,
    base: HostTree,
    policy: EffectivePolicy,
    sandboxes: SandboxFactory,
    *,
    identity: str,
    cache: BaselineCache | None = None,
) -> Verification:
    """Run the plan's test runs concurrently, each in its own fresh sandbox, and judge them.

    - baseline: the base alone (reused from `cache` when the same inputs ran before);
    - patched: the base + the fix, without the patch's new tests and with every protected
      or harness file as on the base: this run judges the repository's own tests;
    - new_on_patched / new_on_base: only the patch's new test files, with and without the
      fix (their module-level code never runs next to the repository's tests).
    `identity` names what else the runs depend on (backend, image) for the cache key.
    """
    rules = rules_of(policy)
    if not plan.source:
        why = (
            "the patch only adds tests; it changes no code"
            if plan.new_tests
            else "the patch changes nothing once protected test and harness files are restored"
        )
        evidence = decide(rules, None, why_no_runs=why)
        return Verification(rules, evidence, plan=plan, limits=limits(plan, None, evidence))
    context = _Context(base, policy, sandboxes, identity, cache)
    minimum = policy.verify.changed_line_coverage_min
    if policy.verify.changed_line_coverage == "report" or minimum > 0:
        context.cover = measured_files(plan.source)
    select = plan.new_test_files
    wanted: asyncio.Future[Wanted] = asyncio.get_running_loop().create_future()
    # Started with the runs: the hunk checks' sandboxes and pytest start-up overlap them.
    hunks = None
    if policy.verify.hunks != "off":
        hunks = asyncio.create_task(_necessity(context, plan, wanted))
    try:
        try:
            patched, baseline, new_runs = await _all_runs(context, plan, select)
        except BaseExceptionGroup as failed:
            # One run's sandbox or setup failed: the others were cancelled. Say what failed.
            raise _first(failed) from None
        runs = Runs(
            patched=patched,
            baseline=baseline,
            new_on_patched=None if new_runs is None else new_runs[0],
            new_on_base=None if new_runs is None else new_runs[1],
        )
        evidence = decide(rules, runs)
        necessity = None
        if hunks is not None and evidence.held:
            comparison = evidence.comparison
            tests = tuple(dict.fromkeys((*comparison.fixed, *comparison.new_evidence)))
            wanted.set_result(Wanted(tests, comparison.new_evidence))
            necessity = await hunks
    finally:
        if hunks is not None and not hunks.done():
            hunks.cancel()  # verification did not hold, or failed: the checks end unrun
            await asyncio.wait([hunks])
        if hunks is not None and not hunks.cancelled():
            hunks.exception()  # retrieved: what the runs raised is the error to report
    changed = None
    if context.cover:
        measured = (runs.patched, runs.new_on_patched)
        changed = await asyncio.to_thread(changed_lines, plan.source, context.base_file, measured)
    why_not = unmet(necessity) if policy.verify.hunks == "require_needed" else ""
    return Verification(
        rules,
        evidence,
        runs=runs,
        plan=plan,
        notes=tuple(dict.fromkeys(context.notes)),
        limits=limits(plan, runs, evidence),
        necessity=necessity,
        changed=changed,
        unmet=why_not or coverage_unmet(changed, minimum),
    )


async def _necessity(context: _Context, plan: Plan, wanted: asyncio.Future[Wanted]) -> Necessity:
    verify = context.policy.verify

    async def run(role: Role, layer: Overlay, later: Awaitable[Sequence[str]]) -> TestRun:
        return await _run(context, role, layer, later=later)

    try:
        return await check_hunks(
            plan,
            context.base_file,
            wanted,
            run,
            limit=verify.hunk_limit,
            parallel=verify.parallel_runs,
        )
    except BaseExceptionGroup as failed:
        raise _first(failed) from None


def coverage_unmet(changed: ChangedLines | None, minimum: float) -> str:
    """Why verify.changed_line_coverage.min is not met; empty when it is (or is 0)."""
    if minimum <= 0 or changed is None:
        return ""
    if changed.error:
        return f"the changed lines' coverage could not be measured ({changed.error})"
    share = changed.share
    if share is not None and share < minimum:
        return (
            f"the tests executed {changed.executed} of the {changed.total} changed statements "
            f"({share:.0%}), less than verify.changed_line_coverage_min ({minimum:.0%})"
        )
    return ""


def unmet(necessity: Necessity | None) -> str:
    """Why `require_needed` does not hold: a hunk no test needs, or one that could not tell."""
    if necessity is None:
        return ""
    # What was not checked is doubt, never a pass.
    if not necessity.checks:
        return (
            "policy verify.hunks requires every hunk to be needed by a test, and none was "
            f"checked: {necessity.note}"
        )
    if necessity.unchecked:
        shown = ", ".join(necessity.unchecked[:5])
        return (
            "policy verify.hunks requires every hunk to be needed by a test, and "
            f"{len(necessity.unchecked)} file(s) past verify.hunk_limit were not checked: {shown}"
        )
    for check in necessity.checks:
        if check.problem:
            return f"the check of {check.unit.hunks[0].where} could not tell: {check.problem}"
    if necessity.unneeded:
        shown = ", ".join(c.unit.hunks[0].where for c in necessity.unneeded[:5])
        return (
            f"policy verify.hunks requires every hunk to be needed by a test, and no test "
            f"needs {shown}"
        )
    return ""


async def _all_runs(
    context: _Context, plan: Plan, select: Sequence[str]
) -> tuple[TestRun, TestRun | None, tuple[TestRun, TestRun] | None]:
    """The plan's runs at once: patched, baseline (if the policy wants it), new tests."""
    async with asyncio.TaskGroup() as group:
        cover = context.cover
        patched = group.create_task(_run(context, "patched", plan.patched, cover=cover))
        baseline = group.create_task(_baseline(context)) if context.policy.verify.baseline else None
        new_runs = (
            group.create_task(
                _run(context, "new_on_patched", plan.with_new_tests, select, cover=cover)
            ),
            group.create_task(_run(context, "new_on_base", plan.new_tests_only, select)),
        ) if select else None  # fmt: skip
    return (
        patched.result(),
        None if baseline is None else baseline.result(),
        None if new_runs is None else (new_runs[0].result(), new_runs[1].result()),
    )


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first failure of a task group that is not a cancellation it caused."""
    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        elif not isinstance(exc, asyncio.CancelledError):
            leaves.append(exc)

    walk(group)
    return leaves[0] if leaves else group


async def _run(
    context: _Context,
    role: Role,
    layer: Overlay,
    select: Sequence[str] = (),
    *,
    cover: Sequence[str] = (),
    later: Awaitable[Sequence[str]] | None = None,
) -> TestRun:
    async with await context.sandboxes(role) as box:
        return await _in(box, context, role, layer, select, cover=cover, later=later)


async def _in(
    box: Sandbox,
    context: _Context,
    role: Role,
    layer: Overlay,
    select: Sequence[str] = (),
    *,
    cover: Sequence[str] = (),
    later: Awaitable[Sequence[str]] | None = None,
) -> TestRun:
    verify = context.policy.verify
    await build_tree(box, context.base, layer)
    await run_setup(box, context.policy.sandbox.setup)
    run, note = await run_tests(
        box, role, verify.command, verify.timeout_seconds, select=select, cover=cover, later=later
    )
    if note:
        context.notes.append(note)
    log.info("verify.run", role=role, summary=run.summary, seconds=round(run.duration, 3))
    return run


async def _baseline(context: _Context) -> TestRun:
    """The base's run, from the cache when its inputs are unchanged."""
    async with await context.sandboxes("baseline") as box:
        key = None
        if context.cache is not None:
            key = await _key(box, context)
            cached = await _cache_get(context.cache, key)
            if cached is not None:
                context.notes.append(
                    "The baseline run was reused from an earlier run on the same base, setup, "
                    "test command and environment."
                )
                return cached
        run = await _in(box, context, "baseline", Overlay())
        if context.cache is not None and key is not None and run.complete:
            await _cache_put(context.cache, key, run)
        return run


async def _key(box: Sandbox, context: _Context) -> str:
    verify, sandbox = context.policy.verify, context.policy.sandbox
    tree, environment = await asyncio.gather(
        asyncio.to_thread(context.base.digest), environment_digest(box)
    )
    return cache_key(
        {
            "tree": tree,
            "environment": environment,
            "identity": context.identity,
            "setup": list(sandbox.setup),
            "command": verify.command,
            "timeout": verify.timeout_seconds,
            "memory": sandbox.memory,
            "collector": collector_digest(),
        }
    )


async def _cache_get(cache: BaselineCache, key: str) -> TestRun | None:
    try:
        data = await cache.get(key)
    except Exception as exc:  # a cache outage costs one run, never the verdict
        log.warning("verify.cache_unavailable", error=str(exc))
        return None
    return None if data is None else load_run(data)


async def _cache_put(cache: BaselineCache, key: str, run: TestRun) -> None:
    try:
        await cache.put(key, dump_run(run))
    except Exception as exc:  # a cache outage costs one run, never the verdict
        log.warning("verify.cache_unavailable", error=str(exc))


def limits(plan: Plan, runs: Runs | None, evidence: Evidence) -> tuple[str, ...]:
    """What this verification cannot rule out, for the reviewer, shortest first."""
    said = [
        "Tests show only what they exercise: behaviour no test reaches is unverified, and a "
        "test can pass by asserting a hard-coded expected value.",
    ]
    if runs is not None:
        said.append(
            "The code under test runs in the same process as FrogNano's result collector; "
            "a patch written to forge results could, so read the diff, not just the verdict."
        )
    if evidence.comparison.new_evidence and not evidence.comparison.fixed:
        said.append(
            "The evidence comes from tests the agent wrote itself; check that they test what "
            "the issue describes."
        )
    if plan.restored:
        shown = ", ".join(r.path for r in plan.restored[:5])
        more = f" and {len(plan.restored) - 5} more" if len(plan.restored) > 5 else ""
        said.append(
            f"{len(plan.restored)} file(s) the patch changes were put back to the base for "
            f"verification and are left out of the pull request: {shown}{more}."
        )
    return (*said, *evidence.notes)
