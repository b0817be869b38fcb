"""The verdict rules over hand-built test runs: every rule, and every way a run fails to count."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from frognano.run.evidence import Rules, Runs, compare, decide
from frognano.run.outcomes import Outcome, Role, TestRun, failure_signature

A, B, C = "tests/test_a.py::test_a", "tests/test_b.py::test_b", "tests/test_c.py::T::test_c[1]"
NEW = "tests/test_new.py::test_new"


def run(
    outcomes: Mapping[str, Outcome],
    *,
    role: Role = "patched",
    crashes: Mapping[str, str] | None = None,
    exit_code: int | None = None,
    problems: tuple[str, ...] = (),
    collection_errors: Mapping[str, str] | None = None,
    timed_out: bool = False,
) -> TestRun:
    failing = any(o in ("failed", "error") for o in outcomes.values())
    if exit_code is None and not timed_out:
        exit_code = 1 if failing or collection_errors else (0 if outcomes else 5)
    return TestRun(
        role=role,
        command="python -m pytest -q",
        exit_code=exit_code,
        timed_out=timed_out,
        duration=1.5,
        output="",
        outcomes=dict(outcomes),
        crashes=dict(crashes or {}),
        collection_errors=dict(collection_errors or {}),
        problems=problems,
    )


def base(outcomes: Mapping[str, Outcome], **kwargs: object) -> TestRun:
    return run(outcomes, role="baseline", **kwargs)  # type: ignore[arg-type]


FTP = Rules()


def test_a_fixed_failing_test_holds() -> None:
    evidence = decide(FTP, Runs(run({A: "passed", B: "passed"}), base({A: "failed", B: "passed"})))
    assert evidence.held
    assert evidence.reason == (
        "1 of the 1 test(s) that fail on the base pass with the patch, and none broke"
    )
    assert evidence.comparison.fixed == (A,)
    assert evidence.baseline_usable


def test_nothing_fixed_does_not_hold() -> None:
    evidence = decide(FTP, Runs(run({A: "failed", B: "passed"}), base({A: "failed", B: "passed"})))
    assert not evidence.held
    assert "none of the 1 test(s) that fail on the base passes with the patch" in evidence.reason


@pytest.mark.parametrize("now", ["failed", "error", "skipped", "xfailed", None])
def test_a_passing_test_that_stops_passing_is_broken(now: Outcome | None) -> None:
    after: dict[str, Outcome] = {A: "passed"}
    if now is not None:
        after[B] = now
    evidence = decide(FTP, Runs(run(after), base({A: "failed", B: "passed"})))
    assert not evidence.held
    assert evidence.comparison.broken == (B,)
    assert "1 test(s) that passed on the base do not pass with the patch" in evidence.reason


def test_xpassed_counts_as_passing_and_xfailed_does_not() -> None:
    evidence = decide(
        FTP, Runs(run({A: "xpassed", B: "passed"}), base({A: "xfailed", B: "passed"}))
    )
    assert not evidence.held  # xfailed on the base was never failing
    evidence = decide(FTP, Runs(run({A: "xpassed", B: "passed"}), base({A: "failed", B: "passed"})))
    assert evidence.held


def test_skipped_never_counts_as_passing() -> None:
    evidence = decide(FTP, Runs(run({A: "skipped", B: "passed"}), base({A: "failed", B: "passed"})))
    assert not evidence.held
    assert evidence.comparison.skipped == (A,)
    assert evidence.comparison.fixed == ()


def test_failing_differently_blocks_by_default_and_warns_when_asked() -> None:
    runs = Runs(
        run({A: "failed", B: "failed", C: "passed"}, crashes={A: "assert 2 == 3", B: "KeyError"}),
        base({A: "failed", B: "failed", C: "passed"}, crashes={A: "assert 1 == 3", B: "KeyError"}),
    )
    evidence = decide(FTP, runs)
    assert not evidence.held
    assert evidence.comparison.fails_differently == (A,)
    assert "fail both before and after the patch, but differently" in evidence.reason
    warned = decide(Rules(require="no_regressions", fails_differently="warn"), runs)
    assert warned.held
    assert any("differently" in note for note in warned.notes)


def test_failing_as_an_error_instead_of_a_failure_is_different() -> None:
    runs = Runs(run({A: "error"}, crashes={A: "x"}), base({A: "failed"}, crashes={A: "x"}))
    assert compare(runs).fails_differently == (A,)


def test_addresses_and_pytest_temp_folders_do_not_make_a_failure_different() -> None:
    one = failure_signature("failed", "<Obj at 0x7f12ab34cd> /tmp/pytest-of-root/pytest-3/x")
    two = failure_signature("failed", "<Obj at 0x7f99ef01aa> /tmp/pytest-of-root/pytest-12/x")
    assert one == two
    assert failure_signature("failed", "assert 1") != failure_signature("error", "assert 1")


def test_new_tests_do_not_count_while_old_tests_fail() -> None:
    runs = Runs(
        run({A: "failed", B: "passed"}),
        base({A: "failed", B: "passed"}),
        new_on_patched=run({NEW: "passed"}, role="new_on_patched"),
        new_on_base=run({NEW: "failed"}, role="new_on_base"),
    )
    evidence = decide(FTP, runs)
    assert not evidence.held
    assert evidence.comparison.new_evidence == (NEW,)
    assert "none of the 1 test(s) that fail on the base" in evidence.reason


def test_new_tests_count_when_nothing_failed_on_the_base() -> None:
    runs = Runs(
        run({A: "passed"}),
        base({A: "passed"}),
        new_on_patched=run({NEW: "passed"}, role="new_on_patched"),
        new_on_base=run({NEW: "failed"}, role="new_on_base"),
    )
    evidence = decide(FTP, runs)
    assert evidence.held
    assert "1 test(s) the patch adds fail without it and pass with it" in evidence.reason
    assert any("tests the agent wrote" in note for note in evidence.notes)


def test_a_new_test_whose_module_cannot_import_on_the_base_failed_there() -> None:
    runs = Runs(
        run({A: "passed"}),
        base({A: "passed"}),
        new_on_patched=run({NEW: "passed"}, role="new_on_patched"),
        new_on_base=run({}, role="new_on_base", collection_errors={"tests/test_new.py": "E"}),
    )
    assert decide(FTP, runs).held


def test_a_new_test_that_passes_on_the_base_is_no_evidence() -> None:
    runs = Runs(
        run({A: "passed"}),
        base({A: "passed"}),
        new_on_patched=run({NEW: "passed"}, role="new_on_patched"),
        new_on_base=run({NEW: "passed"}, role="new_on_base"),
    )
    evidence = decide(FTP, runs)
    assert not evidence.held
    assert "no test the patch adds fails without it" in evidence.reason


def test_new_tests_on_an_untrustworthy_base_run_are_no_evidence() -> None:
    runs = Runs(
        run({A: "passed"}),
        base({A: "passed"}),
        new_on_patched=run({NEW: "passed"}, role="new_on_patched"),
        new_on_base=run({NEW: "failed"}, role="new_on_base", problems=("unfinished",)),
    )
    assert not decide(FTP, runs).held


def test_a_failing_new_test_blocks() -> None:
    runs = Runs(
        run({A: "passed"}),
        base({A: "failed"}),
        new_on_patched=run({NEW: "failed"}, role="new_on_patched"),
        new_on_base=run({NEW: "failed"}, role="new_on_base"),
    )
    evidence = decide(FTP, runs)
    assert not evidence.held
    assert "1 test(s) the patch adds fail with it" in evidence.reason


def test_new_tests_that_cannot_run_with_the_patch_block() -> None:
    runs = Runs(
        run({A: "passed"}),
        base({A: "failed"}),
        new_on_patched=run({}, role="new_on_patched", collection_errors={"tests/x.py": "E"}),
    )
    assert "could not be run with it" in decide(FTP, runs).reason


@pytest.mark.parametrize(
    ("patched", "expected"),
    [
        (run({A: "passed"}, problems=("the session never finished",)), "cannot be trusted"),
        (run({}, problems=("FrogNano's pytest collector reported nothing",)), "reported nothing"),
        (run({A: "passed"}, timed_out=True), "timed out"),
        (run({A: "passed"}, collection_errors={"tests/test_b.py": "E"}), "could not collect"),
    ],
)
def test_a_patched_run_that_does_not_count_never_holds(patched: TestRun, expected: str) -> None:
    for rules in (FTP, Rules(require="all_pass"), Rules(require="no_regressions")):
        evidence = decide(rules, Runs(patched, base({A: "failed"})))
        assert not evidence.held
        assert "the run with the patch does not count" in evidence.reason
        assert expected in evidence.reason


def test_require_none_always_holds_and_still_compares() -> None:
    evidence = decide(Rules(require="none"), Runs(run({A: "failed"}), base({A: "passed"})))
    assert evidence.held
    assert evidence.comparison.broken == (A,)


def test_no_regressions_needs_no_fix() -> None:
    rules = Rules(require="no_regressions")
    assert decide(
        rules, Runs(run({A: "failed", B: "passed"}), base({A: "failed", B: "passed"}))
    ).held
    assert not decide(rules, Runs(run({B: "failed"}), base({B: "passed"}))).held


@pytest.mark.parametrize(
    ("outcomes", "held"),
    [
        ({A: "passed", B: "passed"}, True),
        ({A: "passed", B: "skipped"}, True),
        ({A: "passed", B: "failed"}, False),
        ({A: "skipped"}, False),
        ({}, False),
    ],
)
def test_all_pass(outcomes: Mapping[str, Outcome], held: bool) -> None:
    evidence = decide(Rules(require="all_pass"), Runs(run(outcomes), base({A: "failed"})))
    assert evidence.held is held


@pytest.mark.parametrize(
    "baseline",
    [
        None,
        base({A: "passed"}, problems=("a record FrogNano's collector did not write",)),
        base({A: "failed"}, timed_out=True),
        base({A: "passed"}, collection_errors={"tests/test_b.py": "ImportError"}),
    ],
)
def test_without_a_usable_baseline_every_test_must_pass(baseline: TestRun | None) -> None:
    passing = decide(FTP, Runs(run({A: "passed", B: "passed"}), baseline))
    assert passing.held
    assert "no usable baseline" in passing.reason
    assert not passing.baseline_usable
    failing = decide(FTP, Runs(run({A: "passed", B: "failed"}), baseline))
    assert not failing.held
    if baseline is not None:
        assert any(note.startswith("No usable baseline") for note in passing.notes)


def test_a_baseline_with_collection_errors_still_catches_what_it_collected() -> None:
    baseline = base({A: "passed"}, collection_errors={"tests/test_b.py": "ImportError"})
    evidence = decide(FTP, Runs(run({B: "passed"}), baseline))
    assert not evidence.held
    assert evidence.comparison.broken == (A,)


def test_an_exit_code_of_5_with_no_tests_is_an_empty_clean_baseline() -> None:
    baseline = base({}, exit_code=5)
    assert baseline.clean
    runs = Runs(
        run({}, exit_code=5),
        baseline,
        new_on_patched=run({NEW: "passed"}, role="new_on_patched"),
        new_on_base=run({NEW: "failed"}, role="new_on_base"),
    )
    assert decide(FTP, runs).held


def test_explicit_lists() -> None:
    rules = Rules(fail_to_pass=(A,), pass_to_pass=(B,))
    ok = decide(rules, Runs(run({A: "passed", B: "passed", C: "failed"}), base({A: "failed",
                B: "passed", C: "failed"})))  # fmt: skip
    assert ok.held
    assert ok.reason.startswith("every test listed in the policy passes with the patch")
    missing = decide(rules, Runs(run({B: "passed"}), base({A: "failed", B: "passed"})))
    assert not missing.held
    assert "verify.fail_to_pass do not pass with the patch: " + A + " (not collected)" in (
        missing.reason
    )
    broke = decide(rules, Runs(run({A: "passed", B: "failed"}), base({A: "failed", B: "passed"})))
    assert "verify.pass_to_pass" in broke.reason
    other = decide(rules, Runs(run({A: "passed", B: "passed", C: "failed"}),
                               base({A: "failed", B: "passed", C: "passed"})))  # fmt: skip
    assert not other.held
    assert other.comparison.broken == (C,)


def test_explicit_lists_may_name_new_tests() -> None:
    runs = Runs(
        run({A: "passed"}),
        base({A: "passed"}),
        new_on_patched=run({NEW: "passed"}, role="new_on_patched"),
        new_on_base=run({NEW: "failed"}, role="new_on_base"),
    )
    assert decide(Rules(fail_to_pass=(NEW,)), runs).held


def test_explicit_lists_with_all_pass_still_need_every_test_to_pass() -> None:
    rules = Rules(require="all_pass", fail_to_pass=(A,))
    evidence = decide(rules, Runs(run({A: "passed", B: "failed"}), base({A: "failed"})))
    assert not evidence.held
    assert "all tests must pass" in evidence.reason


def test_no_runs_says_why() -> None:
    evidence = decide(FTP, None, why_no_runs="the patch only adds tests; it changes no code")
    assert not evidence.held
    assert evidence.reason == "the patch only adds tests; it changes no code"
    assert decide(FTP, None).reason == "the patch was not tested"


def test_notes_name_what_was_left_out() -> None:
    runs = Runs(
        run({A: "passed", B: "failed", C: "skipped"}),
        base({A: "failed", B: "failed", C: "passed"}),
        new_on_patched=run({NEW: "skipped"}, role="new_on_patched"),
    )
    notes = " ".join(decide(Rules(require="none"), runs).notes)
    assert "1 test(s) fail before and after the patch: " + B in notes
    assert "skipped with the patch" in notes
    assert "the patch adds are skipped: " + NEW in notes


def test_the_run_summary_counts_outcomes() -> None:
    patched = run({A: "passed", B: "failed", C: "skipped"}, collection_errors={"x.py": "E"})
    assert patched.summary == "1 failed, 1 passed, 1 skipped, 1 collection error(s)"
    assert run({}, timed_out=True).summary == "timed out after 2 s"
    assert run({}).summary == "no tests ran"
    assert run({A: "passed"}, problems=("x",)).summary == "1 passed (results not trusted)"
    assert not run({A: "passed"}, exit_code=1).passed
    assert run({A: "passed"}).passed
