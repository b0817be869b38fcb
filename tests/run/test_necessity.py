"""What `verify.hunks: require_needed` makes of checks that are missing: doubt, never a pass."""

from __future__ import annotations

from collections.abc import Sequence

from frognano.run.apply import AppliedFile
from frognano.run.collected import Outcome
from frognano.run.necessity import check_hunks
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


def _base(path: str) -> tuple[str, bytes] | None:
    return ("100644", BASES[path]) if path in BASES else None


async def _fails_without_a(role: Role, layer: Overlay, select: Sequence[str]) -> TestRun:
    """The fixed test needs a.py's change: it fails whenever a.py is back to the base."""
    reverted = any(f.path == "a.py" and f.content == BASES["a.py"] for f in layer.files)
    outcome: Outcome = "failed" if reverted else "passed"
    return TestRun(role, "pytest", 1 if reverted else 0, False, 0.1, "", {"t::x": outcome})


async def test_files_past_the_limit_are_unchecked_and_never_meet_the_requirement() -> None:
    found = await check_hunks(PLAN, _base, ["t::x"], [], _fails_without_a, limit=1, parallel=2)
    assert [check.needed for check in found.checks] == [True]
    assert found.unchecked == ("b.py",)
    assert "1 file(s) past verify.hunk_limit were not checked: b.py" in unmet(found)


async def test_every_hunk_checked_and_needed_meets_it_and_one_not_needed_does_not() -> None:
    found = await check_hunks(PLAN, _base, ["t::x"], [], _fails_without_a, limit=5, parallel=2)
    assert found.unchecked == ()
    assert "no test needs b.py:1" in unmet(found)


async def test_no_test_to_run_is_no_evidence_for_any_hunk() -> None:
    found = await check_hunks(PLAN, _base, [], [], _fails_without_a, limit=5, parallel=2)
    assert "none was checked" in unmet(found)


async def test_a_checked_test_that_did_not_run_is_doubt_unless_its_module_broke() -> None:
    async def vanished(role: Role, layer: Overlay, select: Sequence[str]) -> TestRun:
        return TestRun(role, "pytest", 5, False, 0.1, "", {})

    found = await check_hunks(PLAN, _base, ["t::x"], [], vanished, limit=5, parallel=2)
    assert [c.problem for c in found.checks] == ["the run with it reverted did not run t::x"] * 2
    assert "could not tell" in unmet(found)

    async def broke_import(role: Role, layer: Overlay, select: Sequence[str]) -> TestRun:
        reverted = any(f.path == "a.py" and f.content == BASES["a.py"] for f in layer.files)
        if reverted:  # the test module imports what a.py's change adds
            return TestRun(role, "pytest", 2, False, 0.1, "", {}, collection_errors={"t": "E"})
        return TestRun(role, "pytest", 0, False, 0.1, "", {"t::x": "passed"})

    found = await check_hunks(PLAN, _base, ["t::x"], [], broke_import, limit=5, parallel=2)
    assert [c.needed_by for c in found.checks] == [("t::x",), ()]
