"""The collector's stream checked from hand-built records: every problem it must catch."""

from __future__ import annotations

import hashlib
import json

import pytest

from frognano.run import collector
from frognano.run.collector import frognano_collector as plugin
from frognano.run.records import RECORD_VERSION
from frognano.run.results import (
    NO_SESSION,
    CollectorReport,
    Counts,
    Outcome,
    check_exit_code,
    parse_records,
)

TOKEN = "0123456789abcdef"
PASSED = {"setup": "passed", "call": "passed", "teardown": "passed"}
PHASES: dict[str, dict[str, str]] = {
    "passed": PASSED,
    "xpassed": PASSED,
    "failed": {"setup": "passed", "call": "failed", "teardown": "passed"},
    "error": {"setup": "failed", "teardown": "passed"},
    "skipped": {"setup": "passed", "call": "skipped", "teardown": "passed"},
    "xfailed": {"setup": "passed", "call": "skipped", "teardown": "passed"},
}


class Session:
    """Records of one pytest process, numbered as the collector numbers them."""

    def __init__(self, pid: int = 4242, token: str = TOKEN) -> None:
        self.pid = pid
        self.token = token
        self.seq = 0

    def record(self, kind: str, **fields: object) -> dict[str, object]:
        record: dict[str, object] = {"v": 1, "kind": kind, "token": self.token}
        record.update(pid=self.pid, seq=self.seq, **fields)
        self.seq += 1
        return record

    def start(self, **fields: object) -> dict[str, object]:
        values: dict[str, object] = {
            "pytest": "9.2.0",
            "python": "3.11.7",
            "rootdir": "/workspace",
            "root": "/workspace",
            "xdist": None,
            "select": None,
            "select_error": None,
        }
        return self.record("session_start", **{**values, **fields})

    def collected(self, *ids: str) -> dict[str, object]:
        return self.record("collected", ids=list(ids))

    def test(
        self, test_id: str, outcome: Outcome = "passed", /, **fields: object
    ) -> dict[str, object]:
        values: dict[str, object] = {
            "id": test_id,
            "outcome": outcome,
            "duration": 0.01,
            "phases": PHASES[outcome],
            "crash": "AssertionError: no" if outcome in ("failed", "error") else None,
        }
        return self.record("test", **{**values, **fields})

    def collect_error(self, node_id: str, message: str = "ImportError") -> dict[str, object]:
        return self.record("collect_error", id=node_id, message=message)

    def finish(self, exitstatus: int = 0, testsfailed: int = 0) -> dict[str, object]:
        return self.record(
            "session_finish",
            exitstatus=exitstatus,
            testscollected=0,
            testsfailed=testsfailed,
            conftests=[],
        )

    def run(self, outcomes: dict[str, Outcome], exitstatus: int | None = None) -> list[object]:
        """A whole session: start, collected, one record per test, finish."""
        failed = sum(outcome in ("failed", "error") for outcome in outcomes.values())
        status = exitstatus if exitstatus is not None else (1 if failed else 0)
        return [
            self.start(),
            self.collected(*outcomes),
            *(self.test(i, o) for i, o in outcomes.items()),
            self.finish(status, failed),
        ]


def stream(*records: object) -> bytes:
    return b"".join(
        record if isinstance(record, bytes) else json.dumps(record).encode() + b"\n"
        for record in records
    )


def parse(*records: object) -> CollectorReport:
    return parse_records(stream(*records), TOKEN)


def kinds(report: CollectorReport) -> list[str]:
    return [problem.kind for problem in report.problems]


def test_a_clean_session() -> None:
    s = Session()
    report = parse(*s.run({"t.py::a": "passed", "t.py::b": "skipped", "t.py::c": "xfailed"}))
    assert report.problems == ()
    assert report.passed
    assert report.usable_baseline
    assert report.trustworthy
    assert dict(report.outcomes) == {
        "t.py::a": "passed",
        "t.py::b": "skipped",
        "t.py::c": "xfailed",
    }
    assert report.collected == ("t.py::a", "t.py::b", "t.py::c")
    assert report.summary == "1 passed, 1 skipped, 1 xfailed"
    (session,) = report.sessions
    assert (session.pid, session.exitstatus, session.pytest_version) == (4242, 0, "9.2.0")


def test_failures_are_results_not_problems() -> None:
    report = parse(*Session().run({"t.py::a": "failed", "t.py::b": "error", "t.py::c": "passed"}))
    assert report.problems == ()
    assert not report.passed
    assert report.usable_baseline
    assert report.crashes == {"t.py::a": "AssertionError: no", "t.py::b": "AssertionError: no"}
    assert report.summary == "1 passed, 1 failed, 1 error"


def test_nothing_at_all_says_what_to_fix() -> None:
    report = parse_records(b"", TOKEN)
    assert kinds(report) == ["no_session"]
    assert report.problems[0].message == NO_SESSION
    assert "did not load the collector" in NO_SESSION
    assert "file descriptor 87" in NO_SESSION
    assert not report.passed


def _record_with(**changes: object) -> bytes:
    record = Session().start()
    record.update(changes)
    return json.dumps({k: v for k, v in record.items() if v is not ...}).encode() + b"\n"


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"all tests passed\n", "not JSON"),
        (b"\xff\xfe{}\n", "not JSON"),
        (b"\n", "not JSON"),
        (b"[" * 100_000 + b"\n", "not JSON"),
        (b"[1, 2]\n", "not a JSON object"),
        (b'{"kind": ["session_start"]}\n', "no record kind"),
        (_record_with(kind="verdict"), "no record kind"),
        (_record_with(v=2), "a session_start record of the wrong version"),
        (_record_with(v=True), "a session_start record of the wrong version"),
        (_record_with(pid=...), "a session_start record of the wrong version"),
        (_record_with(pid=True), "a session_start record of the wrong version"),
        (_record_with(extra="field"), "a session_start record of the wrong version"),
        (_record_with(xdist="worker"), "a session_start record of the wrong version"),
        (_record_with(token="fedcba9876543210"), "the wrong token"),  # noqa: S106
        (_record_with(token="\ud800"), "the wrong token"),  # noqa: S106
        (_record_with(token=TOKEN + "0"), "the wrong token"),
    ],
)
def test_a_line_the_collector_did_not_write(line: bytes, why: str) -> None:
    report = parse_records(line, TOKEN)
    assert kinds(report) == ["tampered", "no_session"]
    message = report.problems[0].message
    assert message.startswith(f"line 1: {why}")
    assert message.endswith(
        "a record that FrogNano's collector did not write: the stream was tampered with"
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"outcome": "won"},
        {"duration": -1},
        {"duration": float("nan")},
        {"duration": "0.1"},
        {"phases": {"call": "rerun"}},
        {"phases": {"cleanup": "passed"}},
        {"phases": ["setup"]},
        {"crash": 7},
        {"id": ""},
    ],
)
def test_a_test_record_of_the_wrong_shape(fields: dict[str, object]) -> None:
    s = Session()
    report = parse(s.start(), s.collected("t.py::a"), s.test("t.py::a", **fields), s.finish())
    assert kinds(report)[0] == "tampered"
    assert "line 3" in report.problems[0].message
    assert report.tests == {}


@pytest.mark.parametrize(
    ("outcome", "phases"),
    [
        ("passed", {"setup": "passed", "call": "failed", "teardown": "passed"}),
        ("passed", {"setup": "passed", "call": "passed", "teardown": "failed"}),
        ("passed", {"setup": "passed", "call": "passed"}),
        ("failed", PASSED),
        ("error", PASSED),
        ("skipped", PASSED),
        ("xpassed", {"setup": "passed", "call": "skipped", "teardown": "passed"}),
    ],
)
def test_an_outcome_its_phases_contradict(outcome: Outcome, phases: dict[str, str]) -> None:
    s = Session()
    records = [s.start(), s.collected("t.py::a"), s.test("t.py::a", outcome, phases=phases)]
    report = parse(*records, s.finish(0))
    assert "tampered" in kinds(report)
    assert "its phases contradict" in report.problems[0].message


def test_a_cut_off_last_line() -> None:
    s = Session()
    data = stream(*s.run({"t.py::a": "passed"})) + b'{"v": 1, "kind": "te'
    report = parse_records(data, TOKEN)
    assert kinds(report) == ["tampered"]
    assert report.problems[0].message.startswith("line 5: a line cut off before its end")


def test_a_flood_of_garbage_is_summed_up() -> None:
    report = parse(*[b"junk\n"] * 1000, *Session().run({"t.py::a": "passed"}))
    assert kinds(report) == ["tampered"] * 6
    assert report.problems[-1].message == "995 more such lines"


def test_records_out_of_order() -> None:
    s = Session()
    start, collected, test, finish = (
        s.start(),
        s.collected("t.py::a"),
        s.test("t.py::a"),
        s.finish(),
    )
    cases = {
        "before its session": [test, start, collected, finish],
        "after its session": [start, collected, test, finish, s.test("t.py::b")],
        "skipping one": [start, test, finish],
        "repeated": [start, collected, collected, test, finish],
    }
    for name, records in cases.items():
        assert "tampered" in kinds(parse(*records)), name
    late = Session()
    late.seq = 3
    assert "does not start at its first record" in parse(late.start()).problems[0].message


def test_a_second_list_of_collected_tests() -> None:
    s = Session()
    records = [s.start(), s.collected("t.py::a"), s.collected("t.py::a", "t.py::b")]
    report = parse(*records, s.test("t.py::a"), s.finish())
    assert "a second list of collected tests" in report.problems[0].message


def test_a_result_before_the_collected_list() -> None:
    s = Session()
    report = parse(s.start(), s.test("t.py::a"), s.collected("t.py::a"), s.finish())
    assert "before the list of collected tests" in report.problems[0].message


def test_a_session_that_never_finished() -> None:
    s = Session()
    report = parse(s.start(), s.collected("t.py::a"), s.test("t.py::a"))
    assert kinds(report) == ["unfinished"]
    assert "os._exit, a crash, a kill" in report.problems[0].message
    assert dict(report.outcomes) == {"t.py::a": "passed"}
    assert not report.passed
    assert report.sessions[0].exitstatus is None


def test_a_process_that_starts_again_before_finishing() -> None:
    first, second = Session(), Session()
    records = [first.start(), first.collected("t.py::a"), *second.run({"t.py::b": "passed"})]
    assert kinds(parse(*records)) == ["unfinished"]


def test_collected_tests_never_reported() -> None:
    s = Session()
    ids = [f"t.py::test_{n}" for n in range(8)]
    report = parse(s.start(), s.collected(*ids), s.test(ids[0], "failed"), s.finish(1, 1))
    assert kinds(report) == ["unreported"]
    message = report.problems[0].message
    assert "collected 7 tests it never reported" in message
    assert "t.py::test_1, t.py::test_2, t.py::test_3, t.py::test_4, t.py::test_5 and 2 more" in (
        message
    )


def test_a_result_for_a_test_that_was_not_collected() -> None:
    s = Session()
    records = [s.start(), s.collected("t.py::a"), s.test("t.py::a"), s.test("t.py::forged")]
    report = parse(*records, s.finish())
    assert kinds(report) == ["unexpected"]
    assert "t.py::forged" not in report.outcomes


def test_a_test_reported_twice_in_one_session() -> None:
    s = Session()
    records = [s.start(), s.collected("t.py::a"), s.test("t.py::a", "failed"), s.test("t.py::a")]
    report = parse(*records, s.finish(1, 1))
    assert kinds(report) == ["duplicate"]
    assert report.outcomes["t.py::a"] == "failed"  # the first report stands


def test_a_test_collected_twice() -> None:
    s = Session()
    records = [s.start(), s.collected("t.py::a", "t.py::a"), s.test("t.py::a")]
    report = parse(*records, s.test("t.py::a"), s.finish())
    assert kinds(report) == ["duplicate", "duplicate"]
    assert "more than once" in report.problems[1].message


def test_sessions_merge_and_a_test_reported_by_two_is_a_problem() -> None:
    one, two = Session(pid=10), Session(pid=11)
    # Interleaved, as two pytest processes of one command could write them.
    a, b = one.run({"u.py::a": "passed"}), two.run({"w.py::b": "failed"})
    report = parse(*(record for pair in zip(a, b, strict=True) for record in pair))
    assert report.problems == ()
    assert dict(report.outcomes) == {"u.py::a": "passed", "w.py::b": "failed"}
    assert [s.pid for s in report.sessions] == [10, 11]

    one, two = Session(pid=10), Session(pid=11)
    report = parse(*one.run({"u.py::a": "failed"}), *two.run({"u.py::a": "passed"}))
    assert kinds(report) == ["duplicate"]
    assert "more than one pytest session reported u.py::a" in report.problems[0].message
    assert report.outcomes["u.py::a"] == "failed"


@pytest.mark.parametrize(
    ("outcomes", "exitstatus", "problem"),
    [
        ({"t::a": "passed"}, 0, None),
        ({"t::a": "failed"}, 1, None),
        ({}, 5, None),
        ({"t::a": "failed"}, 0, "exit status 0 (all passed) though t::a failed"),
        ({}, 0, "exit status 0 (all passed) though no test was collected"),
        ({"t::a": "passed", "t::b": "xpassed"}, 1, "exit status 1 (tests failed) though"),
        ({"t::a": "passed"}, 2, "exit status 2: the run was interrupted"),
        ({"t::a": "passed"}, 3, "exit status 3: pytest stopped on an internal error"),
        ({"t::a": "passed"}, 4, "exit status 4: pytest was called wrongly"),
        ({"t::a": "passed"}, 5, "exit status 5 (no tests collected) though"),
        ({"t::a": "passed"}, 7, "exit status 7, which pytest itself never uses"),
    ],
)
def test_exit_status_against_the_results(
    outcomes: dict[str, Outcome], exitstatus: int, problem: str | None
) -> None:
    report = parse(*Session().run(outcomes, exitstatus))
    if problem is None:
        assert report.problems == ()
    else:
        assert kinds(report) == ["exit_status"]
        assert problem in report.problems[0].message


def test_pytests_own_failure_count_must_agree() -> None:
    s = Session()
    records = [s.start(), s.collected("t::a"), s.test("t::a"), s.finish(0, testsfailed=2)]
    report = parse(*records)
    assert kinds(report) == ["exit_status"]
    assert "pytest counted 2 failures" in report.problems[0].message


def test_collection_errors_are_failures_of_the_run() -> None:
    s = Session()
    records = [s.start(), s.collect_error("tests/test_x.py", "ImportError: no"), s.collected()]
    report = parse(*records, s.finish(2, testsfailed=1))
    assert report.problems == ()
    assert [(e.id, e.message) for e in report.collect_errors] == [
        ("tests/test_x.py", "ImportError: no")
    ]
    assert not report.usable_baseline
    assert not report.passed
    assert report.summary == "1 collection error"

    s = Session()
    records = [s.start(), s.collect_error("tests/test_x.py"), s.collected("t::a"), s.test("t::a")]
    report = parse(*records, s.finish(0, testsfailed=1))
    assert kinds(report) == ["exit_status"]
    assert "though collection failed" in report.problems[0].message


def test_a_selection_the_collector_could_not_read() -> None:
    s = Session()
    records = [s.start(select=0, select_error="cannot read the selection file: gone")]
    report = parse(*records, s.collected(), s.finish(5))
    assert kinds(report) == ["selection"]
    assert "cannot read the selection file" in report.problems[0].message
    assert report.sessions[0].selected_files == 0


@pytest.mark.parametrize(
    ("statuses", "exit_code", "problem"),
    [
        ([0], 0, None),
        ([1], 1, None),
        ([5], 5, None),
        ([0, 5], 0, None),
        ([0, 1], 1, None),
        ([0], 3, "exited 3 though every pytest session it ran reported success"),
        ([0, 0], -9, "exited -9 though every pytest session"),
        ([1], 0, "exited 0 though pytest (pid 1) reported exit status 1"),
        ([0, 1], 0, "exited 0 though pytest (pid 2) reported exit status 1"),
        ([0], None, "did not exit: timed out or killed"),
    ],
)
def test_the_exit_code_against_the_sessions(
    statuses: list[int], exit_code: int | None, problem: str | None
) -> None:
    records: list[object] = []
    for pid, status in enumerate(statuses, 1):
        outcomes: dict[str, Outcome] = {} if status == 5 else {f"t{pid}::a": "failed"}
        if status == 0:
            outcomes = {f"t{pid}::a": "passed"}
        records += Session(pid=pid).run(outcomes, status)
    report = parse(*records)
    assert report.problems == ()
    checked = check_exit_code(report, exit_code)
    if problem is None:
        assert checked.problems == ()
    else:
        assert [p.kind for p in checked.problems] == ["exit_code"]
        assert problem in checked.problems[0].message
        assert not checked.trustworthy


def test_the_exit_code_adds_to_the_problems_already_found() -> None:
    report = check_exit_code(parse_records(b"", TOKEN), 0)
    assert kinds(report) == ["no_session"]
    assert kinds(check_exit_code(report, None)) == ["no_session", "exit_code"]


def test_long_text_from_the_tested_code_is_cut_short() -> None:
    s = Session()
    long_id = "t.py::" + "x" * 1000
    records = [s.start(), s.collected(), s.test(long_id, "failed", crash="E" * 5000)]
    report = parse(*records, s.finish(1, 1))
    assert report.problems[0].kind == "unexpected"
    assert len(report.problems[0].message) < 300
    s = Session()
    records = [s.start(), s.collected("t::a"), s.test("t::a", "failed", crash="E" * 5000)]
    assert len(parse(*records, s.finish(1, 1)).crashes["t::a"]) == 500


def test_counts_read_like_pytest() -> None:
    assert Counts().summary() == "no tests ran"
    assert Counts(passed=3, failed=1, skipped=2, error=1).summary() == (
        "3 passed, 1 failed, 1 error, 2 skipped"
    )
    assert Counts(error=2, collect_errors=1).summary() == "2 errors, 1 collection error"
    assert Counts(xfailed=1, xpassed=2, collect_errors=3).summary() == (
        "1 xfailed, 2 xpassed, 3 collection errors"
    )


def test_a_token_is_required() -> None:
    with pytest.raises(ValueError, match="token"):
        parse_records(b"", "")


def test_the_plugin_and_the_host_agree_on_the_format() -> None:
    assert plugin.RECORD_VERSION == RECORD_VERSION
    assert plugin.MODULE == collector.COLLECTOR_MODULE == plugin.__name__.rsplit(".", 1)[1]
    assert (plugin.ENV_FD, plugin.ENV_TOKEN, plugin.ENV_ROOT, plugin.ENV_SELECT) == (
        collector.ENV_FD,
        collector.ENV_TOKEN,
        collector.ENV_ROOT,
        collector.ENV_SELECT,
    )
    # Imported here, without its variables, it took nothing and will report nothing.
    assert plugin._SETTINGS is None


def test_the_plugin_file_for_the_sandbox() -> None:
    source = collector.collector_source()
    assert source.startswith(b'"""FrogNano\'s pytest plugin')
    assert collector.collector_sha256() == hashlib.sha256(source).hexdigest()
    assert (collector.collector_dir() / collector.COLLECTOR_FILE).read_bytes() == source
    # Standard library and pytest only: it runs in the tested repository's environment.
    imports = {
        line.split()[1].split(".")[0]
        for line in source.decode().splitlines()
        if line.startswith(("import ", "from "))
    }
    assert imports <= {
        "__future__",
        "collections",
        "json",
        "math",
        "os",
        "posixpath",
        "sys",
        "typing",
        "pytest",
    }


def test_the_environment_for_the_test_command() -> None:
    env = collector.collector_env(
        plugin_dir="/opt/frognano",
        token="abc",  # noqa: S106
        select_file="/tmp/select",
        pythonpath="src",
    )
    assert env == {
        "PYTHONPATH": "/opt/frognano:src",
        "PYTEST_PLUGINS": "frognano_collector",
        "FROGNANO_COLLECTOR_FD": "87",
        "FROGNANO_COLLECTOR_TOKEN": "abc",
        "FROGNANO_COLLECTOR_ROOT": "/workspace",
        "FROGNANO_COLLECTOR_SELECT": "/tmp/select",
    }
    assert collector.new_token() != collector.new_token()
