"""One test run as verification sees it: its role, its outcomes, and whether they count."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from frognano.run.collected import FAILING, Outcome

__all__ = ["FAILING", "PASSING", "Outcome", "Role", "TestRun", "failure_signature", "file_of"]

Role = Literal["baseline", "patched", "new_on_patched", "new_on_base", "hunk", "evaluation"]

PASSING: frozenset[str] = frozenset({"passed", "xpassed"})
# Skipped and xfailed tests are in neither set: no assertion of theirs held.

ROLE_TITLES: Mapping[Role, str] = {
    "baseline": "the base",
    "patched": "base + patch",
    "new_on_patched": "the patch's new tests, with the patch",
    "new_on_base": "the patch's new tests, on the base",
}


@dataclass(frozen=True)
class TestRun:
    """One run of the test command in a sandbox of its own, from a pristine tree."""

    __test__ = False  # a result type, not a pytest test class

    role: Role
    command: str
    exit_code: int | None
    timed_out: bool
    duration: float
    output: str
    """Head and tail of what the command printed (for people; it decides nothing)."""
    outcomes: Mapping[str, Outcome] = field(default_factory=dict)
    """pytest node id (from the repository root) -> outcome, from FrogNano's collector."""
    crashes: Mapping[str, str] = field(default_factory=dict)
    """node id -> the first line of what made a failing test fail."""
    collection_errors: Mapping[str, str] = field(default_factory=dict)
    """collector node id (usually a file) -> the error's first line."""
    problems: tuple[str, ...] = ()
    """Why these results cannot be trusted as a complete run; empty when they can."""
    cached: bool = False
    """Taken from the baseline cache instead of run again."""
    executed: Mapping[str, frozenset[int]] | None = None
    """Lines executed of the files the run measured (relative path -> line numbers); None
    when it measured none."""
    coverage_error: str = ""
    """Why that measurement is missing or partial."""

    @property
    def complete(self) -> bool:
        """Every collected test reported, consistently, within the time limit."""
        return not self.timed_out and not self.problems

    @property
    def clean(self) -> bool:
        """Complete, and every test module collected."""
        return self.complete and not self.collection_errors

    @property
    def passed(self) -> bool:
        """The run as a whole passed: clean, at least one test passed, none failed."""
        return (
            self.clean
            and self.exit_code == 0
            and any(o in PASSING for o in self.outcomes.values())
            and not any(o in FAILING for o in self.outcomes.values())
        )

    def trouble(self) -> str:
        """Why this run does not count, in one sentence part ("" when it is clean)."""
        if self.timed_out:
            return f"the tests timed out after {self.duration:.0f} s"
        if self.problems:
            return "its results cannot be trusted: " + "; ".join(self.problems[:3])
        if self.collection_errors:
            shown = ", ".join(sorted(self.collection_errors)[:5])
            return f"pytest could not collect {len(self.collection_errors)} module(s): {shown}"
        return ""

    @property
    def summary(self) -> str:
        """pytest-style counts, e.g. "3 passed, 1 failed, 2 skipped"."""
        if self.timed_out:
            return f"timed out after {self.duration:.0f} s"
        counts: dict[str, int] = {}
        for outcome in self.outcomes.values():
            counts[outcome] = counts.get(outcome, 0) + 1
        order = ("failed", "passed", "skipped", "xfailed", "xpassed", "error")
        parts = [f"{counts[name]} {name}" for name in order if counts.get(name)]
        if self.collection_errors:
            parts.append(f"{len(self.collection_errors)} collection error(s)")
        text = ", ".join(parts) or "no tests ran"
        return text + (" (results not trusted)" if self.problems else "")


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
_PYTEST_TMP = re.compile(r"/tmp/pytest-of-[^/\s]+/pytest-\d+/")  # noqa: S108 - a pattern
_SPACE = re.compile(r"\s+")


def failure_signature(outcome: str, crash: str) -> str:
    """What a failure looks like, with the parts that differ from run to run (object
    addresses, pytest's numbered temporary folders) made uniform."""
    text = _PYTEST_TMP.sub("/tmp/pytest-of-USER/pytest-N/", crash)  # noqa: S108 - a text
    text = _ADDRESS.sub("0x…", text)
    return f"{outcome}: {_SPACE.sub(' ', text).strip()}"


def file_of(test_id: str) -> str:
    """The file part of a node id (`tests/test_x.py::T::test_y` -> `tests/test_x.py`)."""
    return test_id.split("::", 1)[0]
