"""Changed statements of a fix, and what the tests' measurement says of them."""

from __future__ import annotations

from frognano.run.apply import AppliedFile
from frognano.run.changedlines import changed_lines, changed_statements, not_executed, spans
from frognano.run.outcomes import TestRun
from frognano.run.verification import coverage_unmet

BASE = b"def f(x):\n    return x\n"
FIXED = b'def f(x):\n    """Doc."""\n    # why\n    if x:\n        return 1\n    return x\n'


def _run(executed: dict[str, frozenset[int]] | None, error: str = "") -> TestRun:
    return TestRun("patched", "pytest", 0, False, 1.0, "", executed=executed, coverage_error=error)


def test_only_added_or_changed_statements_count() -> None:
    # The docstring and the comment are no statements; `return x` moved but did not change.
    assert changed_statements(FIXED, BASE) == {4, 5}
    assert changed_statements(b"x = 1\n\ny = 2\n", None) == {1, 3}
    assert changed_statements(b"def broken(:\n", BASE) is None


def test_missed_lines_by_file_and_the_share() -> None:
    changes = [AppliedFile("m.py", "100644", FIXED), AppliedFile("notes.txt", "100644", b"x")]
    result = changed_lines(
        changes,
        lambda path: ("100644", BASE) if path == "m.py" else None,
        [_run({"m.py": frozenset({1, 4, 6})}), None],
    )
    assert (result.total, result.executed, result.share) == (2, 1, 0.5)
    assert not_executed(result) == {"m.py": "5"}
    assert coverage_unmet(result, 0.0) == ""
    assert "1 of the 2 changed statements (50%)" in coverage_unmet(result, 0.75)


def test_a_missing_measurement_is_never_a_pass() -> None:
    result = changed_lines(
        [AppliedFile("m.py", "100644", FIXED)],
        lambda _: ("100644", BASE),
        [_run(None, "coverage.py is not installed in the sandbox's Python environment")],
    )
    assert result.error.startswith("coverage.py is not installed")
    assert "could not be measured" in coverage_unmet(result, 0.1)
    assert coverage_unmet(result, 0.0) == ""


def test_spans() -> None:
    assert spans([3, 7, 8, 9, 12]) == "3, 7-9, 12"
    assert spans([]) == ""
