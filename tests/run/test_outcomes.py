"""One test run's own verdicts: when it counts, whether it passed, and how it is described."""

from __future__ import annotations

import pytest

from frognano.run.outcomes import ROLE_TITLES, TestRun, failure_signature, file_of
from tests.run.test_evidence import A, B, C, run


def test_a_clean_run_has_no_trouble() -> None:
    clean = run({A: "passed", B: "failed"})
    assert (clean.complete, clean.clean) == (True, True)
    assert clean.trouble() == ""


def test_a_timeout_is_trouble_and_outranks_everything_else() -> None:
    timed_out = run({A: "passed"}, timed_out=True, problems=("x",), collection_errors={"a": "E"})
    assert (timed_out.complete, timed_out.clean, timed_out.passed) == (False, False, False)
    assert timed_out.trouble() == "the tests timed out after 2 s"
    assert timed_out.summary == "timed out after 2 s"


def test_problems_are_trouble_and_at_most_three_are_named() -> None:
    untrusted = run({A: "passed"}, problems=("one", "two", "three", "four"))
    assert (untrusted.complete, untrusted.clean, untrusted.passed) == (False, False, False)
    assert untrusted.trouble() == "its results cannot be trusted: one; two; three"


def test_collection_errors_leave_a_run_complete_but_not_clean() -> None:
    errors = {f"tests/test_{i}.py": "ImportError" for i in (6, 1, 5, 2, 4, 3, 0)}
    partial = run({A: "passed"}, collection_errors=errors)
    assert (partial.complete, partial.clean, partial.passed) == (True, False, False)
    assert partial.trouble() == (
        "pytest could not collect 7 module(s): tests/test_0.py, tests/test_1.py, "
        "tests/test_2.py, tests/test_3.py, tests/test_4.py"
    )


@pytest.mark.parametrize(
    ("outcomes", "exit_code", "passed"),
    [
        ({A: "passed"}, 0, True),
        ({A: "passed", B: "xpassed", C: "skipped"}, 0, True),
        ({A: "xpassed"}, 0, True),
        ({A: "passed"}, 1, False),  # the outcomes say pass, the exit status does not
        ({A: "passed"}, None, False),
        ({A: "skipped", B: "xfailed"}, 0, False),  # nothing passed
        ({}, 0, False),
        ({A: "passed", B: "failed"}, 0, False),
        ({A: "passed", B: "error"}, 0, False),
    ],
)
def test_a_run_passed_only_when_something_passed_and_nothing_failed(
    outcomes: dict[str, str], exit_code: int | None, passed: bool
) -> None:
    found = TestRun("patched", "pytest", exit_code, False, 1.0, "", outcomes)  # type: ignore[arg-type]
    assert found.passed is passed


def test_the_summary_follows_pytest_order_and_names_what_cannot_be_trusted() -> None:
    outcomes = {
        "e": "error", "x1": "xpassed", "s": "skipped", "p1": "passed", "f": "failed",
        "p2": "passed", "xf": "xfailed",
    }  # fmt: skip
    every = run(outcomes, collection_errors={"a.py": "E", "b.py": "E"}, problems=("x",))  # type: ignore[arg-type]
    assert every.summary == (
        "1 failed, 2 passed, 1 skipped, 1 xfailed, 1 xpassed, 1 error, 2 collection error(s) "
        "(results not trusted)"
    )
    assert run({}, collection_errors={"a.py": "E"}).summary == "1 collection error(s)"


def test_a_failure_signature_ignores_addresses_temporary_folders_and_spacing() -> None:
    assert failure_signature(
        "failed", "  <Obj at 0x7f12ab34cd>\n\t/tmp/pytest-of-root/pytest-3/x  "
    ) == ("failed: <Obj at 0x…> /tmp/pytest-of-USER/pytest-N/x")
    # Short hexadecimal numbers are values, not addresses.
    assert failure_signature("error", "assert 0x1f == 0x20") == "error: assert 0x1f == 0x20"
    assert failure_signature("failed", "") == "failed: "


def test_file_of_a_node_id() -> None:
    assert file_of("tests/test_x.py::T::test_y[a::b]") == "tests/test_x.py"
    assert file_of("tests/test_x.py") == "tests/test_x.py"


def test_every_role_has_a_title() -> None:
    assert set(ROLE_TITLES) == {"baseline", "patched", "new_on_patched", "new_on_base"}
