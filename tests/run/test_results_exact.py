"""The collector's stream read back whole, and each problem it can show, word for word.

The problems end up on the draft as the reason a run does not count, so their text is pinned
here; so is every field of a session, which the report shows."""

from __future__ import annotations

import json
from types import MappingProxyType

import pytest

from frognano.run.collected import CollectError, Problem, Session, TestResult
from frognano.run.records import consistent, decode
from frognano.run.results import NO_SESSION, TAMPERED, CollectorReport, check_exit_code
from tests.run.streams import PASSED, PHASES, TOKEN, parse
from tests.run.streams import Session as Stream

A, B, C = "t.py::a", "t.py::b", "t.py::c"


def finish(s: Stream, exitstatus: int = 0, testsfailed: int = 0, **fields: object) -> object:
    values: dict[str, object] = {
        "exitstatus": exitstatus, "testscollected": 0, "testsfailed": testsfailed,
        "conftests": [],
    }  # fmt: skip
    return s.record("session_finish", **{**values, **fields})


def test_every_field_of_a_session_is_read() -> None:
    s = Stream(pid=77)
    crash, message = "E" * 600, "M" * 700
    report = parse(
        s.start(python="3.12.1", rootdir="/w", xdist="controller", select=2),
        s.collected(A, B),
        s.collect_error("t2.py", message),
        s.test(A, "failed", crash=crash, duration=3),
        s.test(B),
        finish(s, 1, 2, testscollected=2, conftests=["tests/conftest.py"]),
    )
    assert report == CollectorReport(
        sessions=(
            Session(
                pid=77,
                pytest_version="9.2.0",
                python_version="3.12.1",
                rootdir="/w",
                xdist_controller=True,
                selected_files=2,
                collected=(A, B),
                exitstatus=1,
                testscollected=2,
                testsfailed=2,
                conftests=("tests/conftest.py",),
            ),
        ),
        tests=MappingProxyType(
            {
                A: TestResult(A, "failed", 3.0, PHASES["failed"], "E" * 500, 77),  # type: ignore[arg-type]
                B: TestResult(B, "passed", 0.01, PASSED, None, 77),  # type: ignore[arg-type]
            }
        ),
        collected=(A, B),
        collect_errors=(CollectError("t2.py", "M" * 500, 77),),
        problems=(),
    )
    assert isinstance(report.tests[A].duration, float)


def test_a_session_that_never_said_what_it_collected_or_finished() -> None:
    s = Stream()
    (session,) = parse(s.start()).sessions
    assert session == Session(
        pid=4242, pytest_version="9.2.0", python_version="3.11.7", rootdir="/workspace",
        xdist_controller=False, selected_files=None, collected=None, exitstatus=None,
        testscollected=None, testsfailed=None, conftests=(),
    )  # fmt: skip


def problems(*records: object) -> list[tuple[str, str]]:
    return [(p.kind, p.message) for p in parse(*records).problems]


def tampered(line: int, why: str) -> tuple[str, str]:
    return ("tampered", f"line {line}: {why}: {TAMPERED}")


WHO = "pytest (pid 4242)"


def test_records_out_of_place_say_which_line_and_why() -> None:
    s, other = Stream(), Stream(pid=99)
    other.seq = 3
    start = s.start()
    start["seq"] = 2
    s.seq = 1
    out_of_order = s.record("collected", ids=[A])
    out_of_order["seq"] = 5
    assert problems(start, other.collected(A), out_of_order) == [
        tampered(1, "a session that does not start at its first record"),
        tampered(2, "a record of process 99, which has no session under way"),
        tampered(3, "record 5 of process 4242 where 1 was due"),
        ("unfinished", f"{WHO} started a session that never finished: the run ended early "
         "(os._exit, a crash, a kill or a timeout), so its results are incomplete"),
    ]  # fmt: skip


def test_a_second_list_a_result_too_early_and_a_contradicted_outcome() -> None:
    s = Stream()
    assert problems(
        s.start(),
        s.test(A),
        s.collected(A),
        s.collected(A),
        s.test(A, "passed", phases=PHASES["failed"]),
        s.test(A),
        finish(s),
    ) == [
        tampered(2, "a test result before the list of collected tests"),
        tampered(4, "a second list of collected tests"),
        tampered(5, "a test outcome (passed) its phases contradict"),
    ]


def test_a_duplicate_an_unexpected_and_an_unreported_test() -> None:
    s = Stream()
    long_id = "t.py::" + "x" * 300
    assert problems(
        s.start(), s.collected(A, B, C, C), s.test(A), s.test(A), s.test(long_id), finish(s)
    ) == [
        ("duplicate", f"{WHO} reported {A} twice"),
        ("unexpected", f"{WHO} reported {long_id[:200]}..., which it did not collect"),
        ("duplicate", f"{WHO} collected {C} more than once (--keep-duplicates, or the same "
         "file given twice), so one id stands for several results"),
        ("unreported", f"{WHO} collected 2 tests it never reported ({B}, {C}): the run stopped "
         "early (-x, --maxfail, pytest.exit(), a crash)"),
    ]  # fmt: skip


def test_an_id_of_exactly_200_characters_is_shown_whole() -> None:
    s = Stream()
    exact = "t.py::" + "y" * 194
    assert problems(s.start(), s.collected(A), s.test(A), s.test(exact), finish(s)) == [
        ("unexpected", f"{WHO} reported {exact}, which it did not collect"),
    ]


@pytest.mark.parametrize(("count", "more"), [(5, ""), (6, " and 1 more"), (8, " and 3 more")])
def test_at_most_five_ids_are_named(count: int, more: str) -> None:
    s = Stream()
    ids = [f"t.py::t{i}" for i in range(count)]
    shown = ", ".join(ids[:5])
    assert problems(s.start(), s.collected(*ids), finish(s)) == [
        ("unreported", f"{WHO} collected {count} tests it never reported ({shown}{more}): the "
         "run stopped early (-x, --maxfail, pytest.exit(), a crash)"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("tests", "status", "unreported"),
    [
        ((), 2, False),  # pytest runs nothing when a file fails to collect
        ((A,), 2, True),
        ((), 1, True),
    ],
)
def test_collection_errors_excuse_unrun_tests_only_when_pytest_stopped_for_them(
    tests: tuple[str, ...], status: int, unreported: bool
) -> None:
    s = Stream()
    found = parse(
        s.start(), s.collected(A, B), s.collect_error("t2.py"), *(s.test(t) for t in tests),
        finish(s, status, 1),
    )  # fmt: skip
    assert ("unreported" in [p.kind for p in found.problems]) is unreported


@pytest.mark.parametrize(("status", "said"), [(0, True), (1, True), (5, True), (2, False)])
def test_a_session_without_a_collected_list(status: int, said: bool) -> None:
    s = Stream()
    found = problems(s.start(), finish(s, status))
    assert ((
        "unreported", f"{WHO} finished without saying what it collected"
    ) in found) is said  # fmt: skip


@pytest.mark.parametrize(
    ("status", "outcomes", "testsfailed", "errors", "message"),
    [
        (0, {A: "failed"}, 1, False, f"exit status 0 (all passed) though {A} failed"),
        (0, {A: "passed"}, 0, True, "exit status 0 (all passed) though collection failed"),
        (0, {}, 0, False, "exit status 0 (all passed) though no test was collected"),
        (1, {A: "passed"}, 0, False,
         "exit status 1 (tests failed) though no test failed and all was collected"),
        (2, {A: "passed"}, 0, False,
         "exit status 2: the run was interrupted (pytest.exit(), Ctrl-C, a signal)"),
        (3, {A: "passed"}, 0, False, "exit status 3: pytest stopped on an internal error"),
        (4, {A: "passed"}, 0, False, "exit status 4: pytest was called wrongly (a usage error)"),
        (5, {A: "passed"}, 0, False,
         "exit status 5 (no tests collected) though tests were collected or failed"),
        (5, {}, 0, True,
         "exit status 5 (no tests collected) though tests were collected or failed"),
        (7, {A: "passed"}, 0, False,
         "exit status 7, which pytest itself never uses (pytest.exit())"),
        (1, {A: "failed"}, 0, False, "pytest counted 0 failures, which the results contradict"),
        (0, {A: "passed"}, 2, False, "pytest counted 2 failures, which the results contradict"),
        (1, {A: "failed"}, 1, False, None),
        (0, {A: "passed"}, 0, False, None),
        (2, {}, 1, True, None),
        (1, {}, 1, True, None),
    ],
)  # fmt: skip
def test_the_exit_status_against_the_results(
    status: int, outcomes: dict[str, str], testsfailed: int, errors: bool, message: str | None
) -> None:
    s = Stream()
    records: list[object] = [s.start(), s.collected(*outcomes)]
    if errors:
        records.append(s.collect_error("t2.py"))
    records += [s.test(i, o) for i, o in outcomes.items()]  # type: ignore[arg-type]
    records.append(finish(s, status, testsfailed))
    found = [m for kind, m in problems(*records) if kind == "exit_status"]
    assert found == ([] if message is None else [f"{WHO}: {message}"])


def test_a_selection_error_is_a_problem_of_its_own() -> None:
    s = Stream()
    assert problems(s.start(select_error="cannot read /tmp/x"), s.collected(), finish(s, 5)) == [
        ("selection", f"{WHO}: cannot read /tmp/x"),
    ]


def test_sessions_merge_in_the_order_they_started() -> None:
    one, two = Stream(pid=1), Stream(pid=2)
    report = parse(
        one.start(), two.start(), two.collected(A, C), one.collected(A, B),
        two.test(A, "failed"), two.test(C), finish(two, 1, 1),
        one.test(A), one.test(B), finish(one),
    )  # fmt: skip
    assert report.collected == (A, B, C)
    assert report.outcomes == {A: "passed", B: "passed", C: "passed"}
    assert [p.message for p in report.problems] == [f"more than one pytest session reported {A}"]
    assert report.problems[0].kind == "duplicate"


def test_no_session_at_all() -> None:
    assert problems() == [("no_session", NO_SESSION)]


@pytest.mark.parametrize(
    ("exit_code", "statuses", "message"),
    [
        (None, (0,), "the test command did not exit: timed out or killed"),
        (2, (0, 0), "the test command exited 2 though every pytest session it ran reported "
         "success: something besides pytest failed, or a test ended the process with its own "
         "exit code"),
        (0, (0, 5, 1), "the test command exited 0 though pytest (pid 3) reported exit status "
         "1: the command hides pytest's failure"),
        (1, (0, 1), None),
        (0, (0, 5), None),
        (1, (5,), None),
    ],
)  # fmt: skip
def test_the_exit_code_against_the_sessions(
    exit_code: int | None, statuses: tuple[int, ...], message: str | None
) -> None:
    records: list[object] = []
    for pid, status in enumerate(statuses, 1):
        s = Stream(pid=pid)
        outcome = "failed" if status == 1 else "passed"
        ids = [] if status == 5 else [f"t{pid}.py::a"]
        records += [s.start(), s.collected(*ids), *(s.test(i, outcome) for i in ids),  # type: ignore[arg-type]
                    finish(s, status, int(status == 1))]  # fmt: skip
    report = parse(*records)
    assert report.problems == ()
    checked = check_exit_code(report, exit_code)
    expected = () if message is None else (Problem("exit_code", message),)
    assert checked.problems == expected


RECORD = Stream().test(A)


@pytest.mark.parametrize(
    ("change", "valid"),
    [
        ({}, True),
        ({"crash": None}, True),
        ({"crash": "boom"}, True),
        ({"crash": 3}, False),
        ({"duration": 0}, True),
        ({"duration": 0.0}, True),
        ({"duration": -0.5}, False),
        ({"duration": float("inf")}, False),
        ({"duration": True}, False),
        ({"duration": "1"}, False),
        ({"id": ""}, False),
        ({"id": 3}, False),
        ({"outcome": "broken"}, False),
        ({"phases": {"setup": "passed", "call": "passed", "teardown": "passed", "x": "passed"}},
         False),
        ({"phases": {"setup": "passed", "call": "errored"}}, False),
        ({"phases": []}, False),
        ({"v": 2}, False),
        ({"v": True}, False),
        ({"pid": 0}, False),
        ({"pid": "1"}, False),
        ({"seq": -1}, False),
        ({"seq": 1.0}, False),
        ({"kind": 3}, None),
    ],
)  # fmt: skip
def test_a_test_record_field_by_field(change: dict[str, object], valid: bool | None) -> None:
    found = decode(json.dumps({**RECORD, **change}).encode(), TOKEN.encode())
    if valid:
        assert found == {**RECORD, **change}
    elif valid is None:
        assert found == "no record kind the collector writes"
    else:
        assert found == "a test record of the wrong version or shape"


@pytest.mark.parametrize(
    ("fields", "valid"),
    [
        ({}, True),
        ({"xdist": "controller"}, True),
        ({"xdist": "worker"}, False),
        ({"select": 3, "select_error": "x"}, True),
        ({"select": "3"}, False),
        ({"select_error": 3}, False),
        ({"python": None}, False),
    ],
)
def test_a_session_start_field_by_field(fields: dict[str, object], valid: bool) -> None:
    record = Stream().start(**fields)
    found = decode(json.dumps(record).encode(), TOKEN.encode())
    assert found == (record if valid else "a session_start record of the wrong version or shape")


@pytest.mark.parametrize(
    ("ids", "valid"), [([], True), ([A, B], True), ([A, ""], False), ([A, 3], False), (A, False)]
)
def test_a_collected_list_holds_non_empty_ids(ids: object, valid: bool) -> None:
    record = Stream().record("collected", ids=ids)
    found = decode(json.dumps(record).encode(), TOKEN.encode())
    assert found == (record if valid else "a collected record of the wrong version or shape")


def test_a_finish_names_its_conftests_as_strings() -> None:
    s = Stream()
    good, bad = finish(s, conftests=["a/conftest.py"]), finish(s, conftests=["a", 1])
    assert decode(json.dumps(good).encode(), TOKEN.encode()) == good
    assert decode(json.dumps(bad).encode(), TOKEN.encode()) == (
        "a session_finish record of the wrong version or shape"
    )


@pytest.mark.parametrize(
    ("outcome", "phases", "expected"),
    [
        ("failed", {"setup": "passed", "call": "failed", "teardown": "passed"}, True),
        ("failed", {"setup": "passed", "call": "passed", "teardown": "failed"}, False),
        ("error", {"setup": "failed", "teardown": "passed"}, True),
        ("error", {"setup": "passed", "call": "passed", "teardown": "failed"}, True),
        ("error", {"setup": "passed", "teardown": "passed"}, True),  # the call never ran
        ("error", {"setup": "passed", "call": "passed"}, True),  # no teardown report
        ("error", {"setup": "passed", "call": "failed", "teardown": "passed"}, False),
        ("error", PASSED, False),
        ("passed", PASSED, True),
        ("xpassed", PASSED, True),
        ("passed", {"setup": "passed", "call": "passed"}, False),
        ("passed", {"setup": "passed", "call": "skipped", "teardown": "passed"}, False),
        ("skipped", {"setup": "skipped", "teardown": "passed"}, True),
        ("skipped", {"setup": "passed", "call": "skipped", "teardown": "passed"}, True),
        ("xfailed", {"setup": "passed", "call": "skipped", "teardown": "passed"}, True),
        ("skipped", {"setup": "passed", "call": "skipped", "teardown": "failed"}, False),
        ("skipped", PASSED, False),
    ],
)
def test_which_phases_make_which_outcome(
    outcome: str, phases: dict[str, str], expected: bool
) -> None:
    assert consistent(outcome, phases) is expected  # type: ignore[arg-type]
