"""Summaries of test output, and a real test run in a sandbox."""

from __future__ import annotations

import pytest

from frognano.policy.models import VerifyPolicy
from frognano.sandbox.local import LocalSandbox
from frognano.verify import (
    EXIT_CODE_ID,
    TestRun,
    compare,
    decide,
    junit_command,
    parse_junit,
    run_tests,
    summarize,
)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("..F\nFAILED t.py::x\n1 failed, 2 passed in 0.12s\n", "1 failed, 2 passed in 0.12s"),
        ("=== 3 passed, 1 warning in 1.01s ===\n", "3 passed, 1 warning in 1.01s"),
        ("\nno tests ran in 0.01s\n", "no tests ran in 0.01s"),
        ("...\n-----\nRan 3 tests in 0.001s\n\nOK\n", "Ran 3 tests in 0.001s: OK"),
        (
            "Ran 2 tests in 0.1s\n\nFAILED (failures=1)\n",
            "Ran 2 tests in 0.1s: FAILED (failures=1)",
        ),
        ("make: *** [test] Error 2\n", ""),
        ("", ""),
    ],
)
def test_summarize(output: str, expected: str) -> None:
    assert summarize(output) == expected


async def test_run_tests_in_the_workspace(default_sandbox: LocalSandbox) -> None:
    await default_sandbox.write_file(
        "/workspace/test_x.py", b"def test_ok():\n    assert True\n\ndef test_no():\n    assert 0\n"
    )
    run = await run_tests(default_sandbox, "python -m pytest -q -p no:cacheprovider")
    assert not run.passed
    assert run.exit_code == 1
    assert run.summary.startswith("1 failed, 1 passed in ")
    assert "def test_no" in run.output
    slow = await run_tests(default_sandbox, "sleep 5", timeout=1)
    assert slow.timed_out
    assert not slow.passed
    assert slow.summary == "timed out after 1 s"

    assert run.outcomes == {"test_x::test_ok": "passed", "test_x::test_no": "failed"}
    assert "--junitxml=/tmp/frognano-junit-" in run.command


JUNIT = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="5">
<testcase classname="tests.test_a" name="test_ok" time="0.001"/>
<testcase classname="tests.test_a" name="test_bad"><failure message="x">boom</failure></testcase>
<testcase classname="tests.test_a" name="test_err"><error message="x"/></testcase>
<testcase classname="tests.test_a" name="test_skip"><skipped message="later"/></testcase>
<testcase classname="" name="tests.test_b"><error message="collection failure"/></testcase>
</testsuite></testsuites>"""


def test_parse_junit() -> None:
    assert parse_junit(JUNIT) == {
        "tests.test_a::test_ok": "passed",
        "tests.test_a::test_bad": "failed",
        "tests.test_a::test_err": "error",
        "tests.test_a::test_skip": "skipped",
        "tests.test_b": "error",
    }
    assert parse_junit(b'<testsuite><testcase name="t"/></testsuite>') == {"t": "passed"}


@pytest.mark.parametrize(
    "data",
    [
        b"not xml",
        b"<html></html>",
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>'
        b"<testsuite><testcase name='&b;'/></testsuite>",
    ],
)
def test_parse_junit_refuses_what_is_not_a_report(data: bytes) -> None:
    with pytest.raises(ValueError, match="JUnit"):
        parse_junit(data)


def test_junit_is_added_to_pytest_commands_only() -> None:
    command, report = junit_command("python -m pytest -q tests", VerifyPolicy())
    assert report is not None
    assert command == f"python -m pytest -q tests --junitxml={report}"
    assert junit_command("make test", VerifyPolicy()) == ("make test", None)
    named = VerifyPolicy(command="make test", junit_xml="build/junit.xml")
    assert junit_command("make test", named) == ("make test", "/workspace/build/junit.xml")


async def test_a_report_that_contradicts_the_exit_code_is_not_trusted(
    default_sandbox: LocalSandbox,
) -> None:
    forged = 'printf \'<testsuite><testcase classname="a" name="b"/></testsuite>\' > r.xml; exit 1'
    policy = VerifyPolicy(command=forged, junit_xml="r.xml")
    run = await run_tests(default_sandbox, forged, 30, policy=policy)
    assert run.outcomes is None
    assert "was not trusted" in run.report_note
    assert run.results() == {EXIT_CODE_ID: "failed"}


def fake_run(outcomes: dict[str, str] | None, exit_code: int = 0) -> TestRun:
    return TestRun("t", exit_code, False, 0.1, "s", "", outcomes)  # type: ignore[arg-type]


def test_compare_and_decide() -> None:
    base = fake_run({"a": "passed", "b": "failed", "c": "error", "d": "passed"}, 1)
    after = fake_run({"a": "passed", "b": "passed", "c": "error", "d": "skipped", "e": "passed"}, 1)
    comparison = compare(base, after)
    assert comparison.fixed == ("b", "e")
    assert comparison.broken == ("d",)
    assert comparison.still_failing == ("c",)
    assert comparison.skipped == ("d",)
    _, verdict = decide("fail_to_pass", base, after, ("x.py",))
    assert not verdict.held
    assert "1 test(s) that passed before fail now: d" in verdict.reason
    _, verdict = decide("none", base, after, ())
    assert not verdict.held  # an empty effective patch is never accepted
    # Without reports the runs compare as wholes.
    comparison = compare(fake_run(None, 1), fake_run(None, 0))
    assert comparison.fixed == (EXIT_CODE_ID,)
    # Without a baseline every rule but `none` needs everything to pass.
    _, verdict = decide("fail_to_pass", None, fake_run({"a": "passed"}), ("x.py",))
    assert verdict.held
    assert "(no baseline run)" in verdict.reason
