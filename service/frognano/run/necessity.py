"""Which hunks of a fix the tests need: each reverted alone, the fixed tests run again."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from frognano.run.apply import AppliedFile
from frognano.run.hunks import Base, Unit, units_of
from frognano.run.outcomes import PASSING, Role, TestRun
from frognano.run.plan import Plan
from frognano.run.trees import Overlay, overlay

RunTests = Callable[[Role, Overlay, Awaitable[Sequence[str]]], Awaitable[TestRun]]
"""Runs the test command in a fresh sandbox over base + the overlay, selecting the node ids
the awaitable gives: the run starts at once and waits for them before it collects."""


@dataclass(frozen=True)
class Wanted:
    """What each check runs, known once verification has held."""

    tests: tuple[str, ...]
    """The tests the fix made pass (fail on the base, pass with it)."""
    agent_tests: tuple[str, ...]
    """Those the agent added."""


@dataclass(frozen=True)
class HunkCheck:
    """One unit of the fix, reverted alone."""

    unit: Unit
    needed_by: tuple[str, ...] = ()
    """The checked tests that no longer pass with this unit reverted."""
    problem: str = ""
    """Why this check could not tell (its run was incomplete); empty when it could."""

    @property
    def needed(self) -> bool:
        return bool(self.needed_by)


@dataclass(frozen=True)
class Necessity:
    """What the tests stand behind, hunk by hunk."""

    tests: tuple[str, ...]
    """The tests each check runs: those the fix made pass (fail on the base, pass with it)."""
    agent_tests: tuple[str, ...]
    """Those of `tests` that the agent added: a hunk only they need is backed by the agent's
    own word, not the repository's."""
    checks: tuple[HunkCheck, ...] = ()
    note: str = ""
    """How the hunks were grouped, or why nothing was checked."""
    unchecked: tuple[str, ...] = ()
    """Files of the fix past verify.hunk_limit, which no check reverted."""

    @property
    def unneeded(self) -> tuple[HunkCheck, ...]:
        return tuple(c for c in self.checks if not c.needed and not c.problem)

    def backed_by_repository(self, check: HunkCheck) -> bool:
        return any(test not in self.agent_tests for test in check.needed_by)


async def check_hunks(
    plan: Plan,
    base: Base,
    wanted: Awaitable[Wanted],
    run: RunTests,
    *,
    limit: int,
    parallel: int,
) -> Necessity:
    """Revert each unit of the fix's code (never its new test files) on the tree the new tests
    ran in, and run the wanted tests there, each in a fresh sandbox, `parallel` at a time.

    The units are known from the plan alone, so the first `parallel` checks start at once,
    while verification still runs, and wait before collecting for `wanted` (what the fix made
    pass): their pytest start-up overlaps verification instead of following it."""
    units, note = units_of(plan.source, base, limit)
    known = asyncio.ensure_future(wanted)
    gate = asyncio.Semaphore(parallel)

    async def selection() -> Sequence[str]:
        # Shielded: a check that is cancelled must not cancel what the others wait for.
        tests = (await asyncio.shield(known)).tests
        if not tests:
            raise _NothingToRun
        return tests

    async def one(unit: Unit) -> HunkCheck:
        layer = _without(plan, unit.reverted)
        # A task, not a bare coroutine: a run cancelled before it waits for the selection
        # leaves nothing unawaited behind.
        selected = asyncio.ensure_future(selection())
        try:
            async with gate:
                result = await run("hunk", layer, selected)
        except _NothingToRun:
            return HunkCheck(unit, problem="no test to run")  # not reported: see below
        finally:
            selected.cancel()
            if selected.done() and not selected.cancelled():
                selected.exception()  # retrieved: a _NothingToRun no run awaited is no error
        chosen = known.result().tests
        if not result.complete:
            why = "it timed out" if result.timed_out else "; ".join(result.problems)
            return HunkCheck(unit, problem=f"the run with it reverted is incomplete: {why}")
        absent = [t for t in chosen if t not in result.outcomes]
        if absent and not result.collection_errors:
            # Not run and no module failed to import: nothing says the revert broke it.
            return HunkCheck(unit, problem=f"the run with it reverted did not run {absent[0]}")
        failing = tuple(t for t in chosen if result.outcomes.get(t) not in PASSING)
        return HunkCheck(unit, needed_by=failing)

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(unit)) for unit in units]
    got = await known
    if not got.tests:
        return Necessity((), (), note="No test changed outcome with the fix, so none was run.")
    chosen = tuple(dict.fromkeys(got.tests))
    agents = tuple(t for t in chosen if t in set(got.agent_tests))
    checked = {unit.path for unit in units}
    unchecked = tuple(c.path for c in plan.source if c.path not in checked)
    return Necessity(chosen, agents, tuple(t.result() for t in tasks), note, unchecked)


class _NothingToRun(Exception):
    """No test changed outcome with the fix: the checks started early stop unrun."""


def _without(plan: Plan, reverted: AppliedFile) -> Overlay:
    """The tree the new tests ran in, with one file of the fix as `reverted` says."""
    kept = [change for change in plan.source if change.path != reverted.path]
    return overlay([*kept, reverted, *plan.new_tests])
