"""The collector's sessions checked: merges, exit status, exit code, counts."""

from __future__ import annotations

import pytest

from frognano.run.results import (
    Counts,
    Outcome,
    check_exit_code,
    parse_records,
)
from tests.run.streams import TOKEN, Session, kinds, parse


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
