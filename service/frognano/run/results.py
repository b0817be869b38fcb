"""The collector's stream read and checked: per-test outcomes, and every reason to doubt them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import cast

from frognano.run.collected import (
    FAILING,
    OUTCOMES,
    CollectError,
    CollectorReport,
    Counts,
    Outcome,
    Phase,
    PhaseOutcome,
    Problem,
    ProblemKind,
    Session,
    TestResult,
)
from frognano.run.records import consistent, decode

MAX_TEXT = 500
SHOWN_IDS = 5
SHOWN_TAMPERING = 5
TAMPERED = "a record that FrogNano's collector did not write: the stream was tampered with"
NO_SESSION = (
    "FrogNano's pytest collector reported nothing: pytest did not run, or did not load the "
    "collector (the test command must pass the environment and file descriptor 87 through "
    "to pytest)"
)


def _ids(ids: Iterable[str]) -> str:
    """A few ids for a message, each cut short: ids are names the tested code chose."""
    listed = list(ids)
    shown = ", ".join(i if len(i) <= 200 else i[:200] + "..." for i in listed[:SHOWN_IDS])
    more = len(listed) - SHOWN_IDS
    return shown + (f" and {more} more" if more > 0 else "")


@dataclass
class _Open:
    """A session being read."""

    start: dict[str, object]
    order: int
    next_seq: int = 1
    collected: list[str] | None = None
    collected_set: frozenset[str] = frozenset()
    tests: dict[str, TestResult] = field(default_factory=dict)
    errors: list[CollectError] = field(default_factory=list)
    finish: dict[str, object] | None = None
    coverage: dict[str, object] | None = None


class _Reader:
    def __init__(self, token: str) -> None:
        self.token = token.encode()
        self.open: dict[int, _Open] = {}
        self.done: list[_Open] = []
        self.problems: list[Problem] = []
        self.tampered = 0

    def tamper(self, number: int, why: str) -> None:
        self.tampered += 1
        if self.tampered <= SHOWN_TAMPERING:
            self.problems.append(Problem("tampered", f"line {number}: {why}: {TAMPERED}"))

    def problem(self, kind: ProblemKind, message: str) -> None:
        self.problems.append(Problem(kind, message))

    def line(self, number: int, raw: bytes) -> None:
        record = decode(raw, self.token)
        if isinstance(record, str):
            self.tamper(number, record)
        else:
            self.record(number, record)

    def record(self, number: int, record: dict[str, object]) -> None:
        kind, pid, seq = record["kind"], cast(int, record["pid"]), cast(int, record["seq"])
        if kind == "session_start":
            if seq != 0:
                self.tamper(number, "a session that does not start at its first record")
            if pid in self.open:
                self.close(pid)
            self.open[pid] = _Open(record, order=len(self.open) + len(self.done))
            return
        session = self.open.get(pid)
        if session is None:
            self.tamper(number, f"a record of process {pid}, which has no session under way")
            return
        if seq != session.next_seq:
            self.tamper(number, f"record {seq} of process {pid} where {session.next_seq} was due")
        session.next_seq = seq + 1
        if kind == "collected":
            if session.collected is not None:
                self.tamper(number, "a second list of collected tests")
            session.collected = cast(list[str], record["ids"])
            session.collected_set = frozenset(session.collected)
        elif kind == "collect_error":
            message = cast(str, record["message"])[:MAX_TEXT]
            session.errors.append(CollectError(cast(str, record["id"]), message, pid))
        elif kind == "test":
            self.test(number, session, record, pid)
        elif kind == "coverage":
            if session.coverage is not None:
                self.tamper(number, "a second coverage record")
            session.coverage = record
        else:
            session.finish = record
            self.close(pid)

    def test(self, number: int, session: _Open, record: dict[str, object], pid: int) -> None:
        outcome = cast(Outcome, record["outcome"])
        phases = cast(dict[Phase, PhaseOutcome], record["phases"])
        if not consistent(outcome, phases):
            self.tamper(number, f"a test outcome ({outcome}) its phases contradict")
            return
        if session.collected is None:
            self.tamper(number, "a test result before the list of collected tests")
            return
        crash = cast("str | None", record["crash"])
        result = TestResult(
            id=cast(str, record["id"]),
            outcome=outcome,
            duration=float(cast(float, record["duration"])),
            phases=MappingProxyType(dict(phases)),
            crash=crash[:MAX_TEXT] if crash else None,
            pid=pid,
        )
        if result.id in session.tests:
            self.problem("duplicate", f"pytest (pid {pid}) reported {_ids([result.id])} twice")
        elif result.id not in session.collected_set:
            self.problem(
                "unexpected",
                f"pytest (pid {pid}) reported {_ids([result.id])}, which it did not collect",
            )
        else:
            session.tests[result.id] = result

    def close(self, pid: int) -> None:
        session = self.open.pop(pid)
        self.done.append(session)
        self.check(session, pid)

    def check(self, session: _Open, pid: int) -> None:
        who = f"pytest (pid {pid})"
        if session.start["select_error"] is not None:
            self.problem("selection", f"{who}: {session.start['select_error']}")
        if session.finish is None:
            self.problem(
                "unfinished",
                f"{who} started a session that never finished: the run ended early "
                "(os._exit, a crash, a kill or a timeout), so its results are incomplete",
            )
            return
        finish = session.finish
        collected = session.collected or []
        doubled = sorted(i for i, n in Counter(collected).items() if n > 1)
        if doubled:
            self.problem(
                "duplicate",
                f"{who} collected {_ids(doubled)} more than once (--keep-duplicates, or the "
                "same file given twice), so one id stands for several results",
            )
        missing = [i for i in dict.fromkeys(collected) if i not in session.tests]
        # pytest runs nothing when a file fails to collect (exit status 2): that is a failure
        # of the run, reported with the collection errors, not a run cut short.
        stopped_by_errors = session.errors and finish["exitstatus"] == 2 and not session.tests
        if missing and not stopped_by_errors:
            self.problem(
                "unreported",
                f"{who} collected {len(missing)} tests it never reported ({_ids(missing)}): "
                "the run stopped early (-x, --maxfail, pytest.exit(), a crash)",
            )
        if session.collected is None and finish["exitstatus"] in (0, 1, 5):
            self.problem("unreported", f"{who} finished without saying what it collected")
        self.check_exit_status(session, who)

    def check_exit_status(self, session: _Open, who: str) -> None:
        finish = cast(dict[str, object], session.finish)
        status, testsfailed = cast(int, finish["exitstatus"]), cast(int, finish["testsfailed"])
        failing = [i for i, t in session.tests.items() if t.outcome in FAILING]
        failed = bool(failing or session.errors)
        message = ""
        if status == 0 and failed:
            message = f"exit status 0 (all passed) though {_ids(failing) or 'collection'} failed"
        elif status == 0 and not session.collected:
            message = "exit status 0 (all passed) though no test was collected"
        elif status == 1 and not failed:
            message = "exit status 1 (tests failed) though no test failed and all was collected"
        elif status == 2 and not session.errors:
            message = "exit status 2: the run was interrupted (pytest.exit(), Ctrl-C, a signal)"
        elif status == 3:
            message = "exit status 3: pytest stopped on an internal error"
        elif status == 4:
            message = "exit status 4: pytest was called wrongly (a usage error)"
        elif status == 5 and (session.collected or session.tests or failed):
            message = "exit status 5 (no tests collected) though tests were collected or failed"
        elif status not in (0, 1, 2, 5):
            message = f"exit status {status}, which pytest itself never uses (pytest.exit())"
        elif (testsfailed > 0) != failed:
            message = f"pytest counted {testsfailed} failures, which the results contradict"
        if message:
            self.problem("exit_status", f"{who}: {message}")


def parse_records(data: bytes, token: str) -> CollectorReport:
    """Read the collector's stream of one test command, whose records carry `token`.

    Anything the code under test could have done to the stream becomes a problem, never an
    exception and never a pass.
    """
    if not token:
        raise ValueError("parse_records needs the run's token")
    reader = _Reader(token)
    *lines, tail = data.split(b"\n")
    for number, raw in enumerate(lines, 1):
        reader.line(number, raw)
    if tail:
        reader.tamper(len(lines) + 1, "a line cut off before its end")
    if reader.tampered > SHOWN_TAMPERING:
        reader.problem("tampered", f"{reader.tampered - SHOWN_TAMPERING} more such lines")
    for pid in list(reader.open):
        reader.close(pid)
    return _merge(reader)


def _merge(reader: _Reader) -> CollectorReport:
    # In the order the sessions started: of an id reported twice, the first report stands.
    sessions = sorted(reader.done, key=lambda s: s.order)
    tests: dict[str, TestResult] = {}
    twice: list[str] = []
    collected: dict[str, None] = {}
    for session in sessions:
        collected.update(dict.fromkeys(session.collected or ()))
        for test_id, result in session.tests.items():
            if test_id in tests:
                twice.append(test_id)
            else:
                tests[test_id] = result
    if twice:
        reader.problem("duplicate", f"more than one pytest session reported {_ids(twice)}")
    if not reader.done:
        reader.problem("no_session", NO_SESSION)
    measured = [s.coverage for s in sessions if s.coverage is not None]
    executed: dict[str, frozenset[int]] = {}
    for record in measured:
        for path, lines in cast(dict[str, list[int]], record["files"]).items():
            executed[path] = executed.get(path, frozenset()) | frozenset(lines)
    errors = [cast(str, r["error"]) for r in measured if r["error"]]
    return CollectorReport(
        sessions=tuple(_session(s) for s in sessions),
        tests=MappingProxyType(tests),
        collect_errors=tuple(e for s in sessions for e in s.errors),
        problems=tuple(reader.problems),
        collected=tuple(collected),
        executed=MappingProxyType(executed) if measured else None,
        coverage_error="; ".join(dict.fromkeys(errors))[:MAX_TEXT],
    )


def _session(session: _Open) -> Session:
    start, finish = session.start, session.finish or {}
    return Session(
        pid=cast(int, start["pid"]),
        pytest_version=cast(str, start["pytest"]),
        python_version=cast(str, start["python"]),
        rootdir=cast(str, start["rootdir"]),
        xdist_controller=start["xdist"] == "controller",
        selected_files=cast("int | None", start["select"]),
        collected=None if session.collected is None else tuple(session.collected),
        exitstatus=cast("int | None", finish.get("exitstatus")),
        testscollected=cast("int | None", finish.get("testscollected")),
        testsfailed=cast("int | None", finish.get("testsfailed")),
        conftests=tuple(cast(list[str], finish.get("conftests", []))),
    )


def check_exit_code(report: CollectorReport, exit_code: int | None) -> CollectorReport:
    """`report` with a problem added when the test command's exit code contradicts it."""
    problems: list[Problem] = []
    if exit_code is None:
        problems.append(Problem("exit_code", "the test command did not exit: timed out or killed"))
    elif report.sessions:
        statuses = [(s.pid, s.exitstatus) for s in report.sessions]
        if exit_code != 0 and all(status == 0 for _, status in statuses):
            problems.append(
                Problem(
                    "exit_code",
                    f"the test command exited {exit_code} though every pytest session it ran "
                    "reported success: something besides pytest failed, or a test ended the "
                    "process with its own exit code",
                )
            )
        failures = [(pid, s) for pid, s in statuses if s is not None and s not in (0, 5)]
        if exit_code == 0 and failures:
            pid, status = failures[0]
            problems.append(
                Problem(
                    "exit_code",
                    f"the test command exited 0 though pytest (pid {pid}) reported exit status "
                    f"{status}: the command hides pytest's failure",
                )
            )
    return replace(report, problems=report.problems + tuple(problems))


__all__ = [
    "FAILING",
    "NO_SESSION",
    "OUTCOMES",
    "CollectError",
    "CollectorReport",
    "Counts",
    "Outcome",
    "Phase",
    "PhaseOutcome",
    "Problem",
    "ProblemKind",
    "Session",
    "TestResult",
    "check_exit_code",
    "parse_records",
]
