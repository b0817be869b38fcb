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

RunTests = Callable[[Role, Overlay, Sequence[str]], Awaitable[TestRun]]
"""Runs the test command in a fresh sandbox over base + the overlay, selecting node ids."""


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
    tests: Sequence[str],
    agent_tests: Sequence[str],
    run: RunTests,
    *,
    limit: int,
    parallel: int,
) -> Necessity:
    """Revert each unit of the fix's code (never its new test files) on the tree the new tests
    ran in, and run `tests` there, each in a fresh sandbox, `parallel` at a time."""
    chosen = tuple(dict.fromkeys(tests))
    agents = tuple(t for t in chosen if t in set(agent_tests))
    if not chosen:
        return Necessity((), (), note="No test changed outcome with the fix, so none was run.")
    units, note = units_of(plan.source, base, limit)
    gate = asyncio.Semaphore(parallel)

    async def one(unit: Unit) -> HunkCheck:
        layer = _without(plan, unit.reverted)
        async with gate:
            result = await run("hunk", layer, chosen)
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
    checked = {unit.path for unit in units}
    unchecked = tuple(c.path for c in plan.source if c.path not in checked)
    return Necessity(chosen, agents, tuple(t.result() for t in tasks), note, unchecked)


def _without(plan: Plan, reverted: AppliedFile) -> Overlay:
    """The tree the new tests ran in, with one file of the fix as `reverted` says."""
    kept = [change for change in plan.source if change.path != reverted.path]
    return overlay([*kept, reverted, *plan.new_tests])
