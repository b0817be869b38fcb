"""The collector's stream checked line by line: records it did not write, or out of order."""

from __future__ import annotations

import json

import pytest

from frognano.run.results import (
    NO_SESSION,
    Outcome,
    parse_records,
)
from tests.run.streams import PASSED, TOKEN, Session, kinds, parse, stream


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
