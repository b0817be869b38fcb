"""What `verify.hunks: require_needed` makes of checks that are missing: doubt, never a pass."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence

import pytest

from frognano.run.apply import AppliedFile
from frognano.run.collected import Outcome
from frognano.run.necessity import Wanted, check_hunks
from frognano.run.outcomes import Role, TestRun
from frognano.run.plan import Plan
from frognano.run.trees import Overlay
from frognano.run.verification import unmet

BASES = {"a.py": b"x = 1\n", "b.py": b"y = 1\n"}
PLAN = Plan(
    source=(AppliedFile("a.py", "100644", b"x = 2\n"), AppliedFile("b.py", "100644", b"y = 2\n")),
    new_tests=(),
    restored=(),
)


async def _wanted(*tests: str) -> Wanted:
    return Wanted(tests, ())


def _base(path: str) -> tuple[str, bytes] | None:
    return ("100644", BASES[path]) if path in BASES else None


async def _fails_without_a(role: Role, layer: Overlay, select: Awaitable[Sequence[str]]) -> TestRun:
    """The fixed test needs a.py's change: it fails whenever a.py is back to the base."""
    assert tuple(await select) == ("t::x",)
    reverted = any(f.path == "a.py" and f.content == BASES["a.py"] for f in layer.files)
    outcome: Outcome = "failed" if reverted else "passed"
    return TestRun(role, "pytest", 1 if reverted else 0, False, 0.1, "", {"t::x": outcome})


async def test_files_past_the_limit_are_unchecked_and_never_meet_the_requirement() -> None:
    found = await check_hunks(PLAN, _base, _wanted("t::x"), _fails_without_a, limit=1, parallel=2)
    assert [check.needed for check in found.checks] == [True]
    assert found.unchecked == ("b.py",)
    assert "1 file(s) past verify.hunk_limit were not checked: b.py" in unmet(found)


async def test_every_hunk_checked_and_needed_meets_it_and_one_not_needed_does_not() -> None:
    found = await check_hunks(PLAN, _base, _wanted("t::x"), _fails_without_a, limit=5, parallel=2)
    assert found.unchecked == ()
    assert "no test needs b.py:1" in unmet(found)


async def test_no_test_to_run_is_no_evidence_for_any_hunk() -> None:
    found = await check_hunks(PLAN, _base, _wanted(), _fails_without_a, limit=5, parallel=2)
    assert "none was checked" in unmet(found)


async def test_a_checked_test_that_did_not_run_is_doubt_unless_its_module_broke() -> None:
    async def vanished(role: Role, layer: Overlay, select: Awaitable[Sequence[str]]) -> TestRun:
        await select
        return TestRun(role, "pytest", 5, False, 0.1, "", {})

    found = await check_hunks(PLAN, _base, _wanted("t::x"), vanished, limit=5, parallel=2)
    assert [c.problem for c in found.checks] == ["the run with it reverted did not run t::x"] * 2
    assert "could not tell" in unmet(found)

    async def broke_import(role: Role, layer: Overlay, select: Awaitable[Sequence[str]]) -> TestRun:
        await select
        reverted = any(f.path == "a.py" and f.content == BASES["a.py"] for f in layer.files)
        if reverted:  # the test module imports what a.py's change adds
            return TestRun(role, "pytest", 2, False, 0.1, "", {}, collection_errors={"t": "E"})
        return TestRun(role, "pytest", 0, False, 0.1, "", {"t::x": "passed"})

    found = await check_hunks(PLAN, _base, _wanted("t::x"), broke_import, limit=5, parallel=2)
    assert [c.needed_by for c in found.checks] == [("t::x",), ()]


async def test_the_checks_start_before_the_selection_is_known_and_end_when_cancelled() -> None:
    started: list[str] = []
    cancelled: list[str] = []
    both = asyncio.Event()

    async def run(role: Role, layer: Overlay, select: Awaitable[Sequence[str]]) -> TestRun:
        reverted = next(f.path for f in layer.files if f.content in BASES.values())
        started.append(reverted)
        if len(started) == 2:
            both.set()
        try:
            chosen = tuple(await select)
        except asyncio.CancelledError:
            cancelled.append(reverted)
            raise
        return TestRun(role, "pytest", 0, False, 0.1, "", dict.fromkeys(chosen, "passed"))

    async def after_both_started() -> Wanted:
        await both.wait()  # never set if the checks waited for the selection to start
        return Wanted(("t::x",), ())

    found = await asyncio.wait_for(
        check_hunks(PLAN, _base, after_both_started(), run, limit=5, parallel=2), timeout=30
    )
    assert sorted(started) == ["a.py", "b.py"]
    assert [check.needed for check in found.checks] == [False, False]

    # Verification did not hold: the caller cancels, and every started check ends unrun.
    started.clear()
    never: asyncio.Future[Wanted] = asyncio.get_running_loop().create_future()
    both.clear()
    task = asyncio.ensure_future(check_hunks(PLAN, _base, never, run, limit=5, parallel=2))
    await asyncio.wait_for(both.wait(), timeout=30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == ["a.py", "b.py"]
