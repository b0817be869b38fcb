"""Per-test outcomes of a test command, as FrogNano's collector reported them, and problems."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

Outcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
OUTCOMES: tuple[Outcome, ...] = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
FAILING: frozenset[Outcome] = frozenset({"failed", "error"})
Phase = Literal["setup", "call", "teardown"]
PhaseOutcome = Literal["passed", "failed", "skipped"]
ProblemKind = Literal[
    "tampered",  # a record the collector did not write, or records out of order
    "no_session",  # no pytest session reported at all
    "unfinished",  # a session started and never finished
    "unreported",  # collected tests without a result
    "unexpected",  # a result for a test that was not collected
    "duplicate",  # a test id collected or reported more than once
    "exit_status",  # pytest's exit status is a failure of the run, or contradicts the results
    "exit_code",  # the test command's exit code contradicts what pytest reported
    "selection",  # the collector could not read the list of test files to run
]


@dataclass(frozen=True)
class Problem:
    """Why the results cannot be taken as they are."""

    kind: ProblemKind
    message: str


@dataclass(frozen=True)
class TestResult:
    """One test's result, as one pytest session reported it."""

    __test__ = False  # a result type, not a pytest test class

    id: str
    outcome: Outcome
    duration: float
    phases: Mapping[Phase, PhaseOutcome]
    crash: str | None
    """Why the deciding phase failed, for failed and error outcomes."""
    pid: int


@dataclass(frozen=True)
class CollectError:
    """A file (or other collector node) pytest could not collect."""

    id: str
    message: str
    pid: int


@dataclass(frozen=True)
class Session:
    """One pytest process's session."""

    pid: int
    pytest_version: str
    python_version: str
    rootdir: str
    xdist_controller: bool
    selected_files: int | None
    """How many files the selection named; None when everything collected was to run."""
    collected: tuple[str, ...] | None
    """None when the session never said what it collected."""
    exitstatus: int | None
    """None when the session never finished."""
    testscollected: int | None
    testsfailed: int | None
    conftests: tuple[str, ...]
    """The conftest.py files pytest loaded, relative to the repository root."""


@dataclass(frozen=True)
class Counts:
    """Tests by outcome, and collection errors."""

    passed: int = 0
    failed: int = 0
    error: int = 0
    skipped: int = 0
    xfailed: int = 0
    xpassed: int = 0
    collect_errors: int = 0

    def summary(self) -> str:
        """`3 passed, 1 failed, 2 skipped, 1 error`, pytest's way; `no tests ran` for none."""
        parts = [
            f"{self.passed} passed" if self.passed else "",
            f"{self.failed} failed" if self.failed else "",
            _plural(self.error, "error"),
            f"{self.skipped} skipped" if self.skipped else "",
            f"{self.xfailed} xfailed" if self.xfailed else "",
            f"{self.xpassed} xpassed" if self.xpassed else "",
            _plural(self.collect_errors, "collection error"),
        ]
        return ", ".join(part for part in parts if part) or "no tests ran"


@dataclass(frozen=True)
class CollectorReport:
    """Everything the collector's stream said, merged over the command's pytest sessions."""

    sessions: tuple[Session, ...]
    tests: Mapping[str, TestResult]
    """By test id; the first report of an id reported more than once."""
    collected: tuple[str, ...]
    """Every collected test id, in order, each once."""
    collect_errors: tuple[CollectError, ...]
    problems: tuple[Problem, ...]
    executed: Mapping[str, frozenset[int]] | None = None
    """Relative path -> lines executed, of the files the run asked to measure; None when it
    asked for none or no session reported them."""
    coverage_error: str = ""
    """Why the measurement is missing or partial; empty when it is whole."""

    @property
    def outcomes(self) -> Mapping[str, Outcome]:
        return MappingProxyType({test_id: t.outcome for test_id, t in self.tests.items()})

    @property
    def crashes(self) -> Mapping[str, str]:
        return MappingProxyType({i: t.crash for i, t in self.tests.items() if t.crash})

    @property
    def counts(self) -> Counts:
        tally = {outcome: 0 for outcome in OUTCOMES}
        for result in self.tests.values():
            tally[result.outcome] += 1
        return Counts(**tally, collect_errors=len(self.collect_errors))

    @property
    def summary(self) -> str:
        return self.counts.summary()

    @property
    def trustworthy(self) -> bool:
        """No problem found: the stream is complete and consistent. (Code running inside the
        test process could still write a consistent forgery: see frognano_collector.py.)"""
        return not self.problems

    @property
    def usable_baseline(self) -> bool:
        """Trustworthy and everything collected: outcomes to compare another run against."""
        return self.trustworthy and not self.collect_errors

    @property
    def passed(self) -> bool:
        """Trustworthy, everything collected, at least one test, and none failed."""
        return (
            self.usable_baseline
            and bool(self.tests)
            and not any(t.outcome in FAILING for t in self.tests.values())
        )


def _plural(count: int, noun: str) -> str:
    return "" if not count else f"{count} {noun}" + ("s" if count != 1 else "")
