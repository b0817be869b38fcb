"""Every verdict path, asserted whole: held, reason, comparison, baseline and notes, word for word.

The reason and the notes are what a reviewer reads on the draft, so each scenario pins all of
the Evidence, not just `held`; a change to any of it must show up here."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from frognano.run.evidence import Comparison, Evidence, Rules, Runs, compare, decide
from frognano.run.outcomes import Outcome, Role, TestRun
from tests.run.test_evidence import base, run

A, B, C, D = (
    "tests/test_a.py::test_a",
    "tests/test_b.py::test_b",
    "tests/test_c.py::T::test_c[1]",
    "tests/test_d.py::test_d",
)
MANY = tuple(f"tests/test_m.py::test_{i}" for i in range(7))
NEW, NEW2 = "tests/test_new.py::test_new", "tests/test_new.py::test_new2"
FTP = Rules()


def new_on(outcomes: Mapping[str, Outcome], role: Role = "new_on_patched", **kw: object) -> TestRun:
    return run(outcomes, role=role, **kw)  # type: ignore[arg-type]


SCENARIOS: dict[str, tuple[Rules, Runs]] = {
    "fixed-one-of-two-new-tests-not-counted": (
        FTP,
        Runs(
            run({A: "passed", B: "failed", C: "passed"}, crashes={B: "AssertionError: 1 != 2"}),
            base({A: "failed", B: "failed", C: "passed"}, crashes={B: "AssertionError: 1 != 2"}),
            new_on({NEW: "passed"}),
            new_on({NEW: "failed"}, role="new_on_base"),
        ),
    ),
    "nothing-fixed-many-failing": (
        FTP,
        Runs(run({t: "failed" for t in MANY}), base({t: "failed" for t in MANY})),
    ),
    "many-broken": (
        FTP,
        Runs(
            run({A: "passed", **{t: "failed" for t in MANY}}),
            base({A: "failed", **{t: "passed" for t in MANY}}),
        ),
    ),
    "fails-differently-blocks": (
        FTP,
        Runs(
            run({A: "passed", B: "failed"}, crashes={B: "KeyError: 'x'"}),
            base({A: "failed", B: "failed"}, crashes={B: "AssertionError"}),
        ),
    ),
    "fails-differently-warns": (
        Rules(fails_differently="warn"),
        Runs(
            run({A: "passed", B: "error"}, crashes={B: "E"}),
            base({A: "failed", B: "failed"}, crashes={B: "E"}),
        ),
    ),
    "listed-fail-to-pass-missing": (
        Rules(fail_to_pass=(A, D)),
        Runs(run({A: "passed", B: "passed"}), base({A: "failed", B: "passed"})),
    ),
    "listed-pass-to-pass-failing": (
        Rules(pass_to_pass=(B,)),
        Runs(run({A: "passed", B: "skipped"}), base({A: "failed", B: "passed"})),
    ),
    "listed-both-hold-usable": (
        Rules(fail_to_pass=(A,), pass_to_pass=(B,)),
        Runs(run({A: "passed", B: "passed"}), base({A: "failed", B: "passed"})),
    ),
    "listed-pass-to-pass-only-holds-no-baseline": (
        Rules(pass_to_pass=(B,)),
        Runs(run({A: "passed", B: "passed"})),
    ),
    "listed-all-pass-fails": (
        Rules(require="all_pass", fail_to_pass=(A,)),
        Runs(run({A: "passed", C: "failed"}), base({A: "failed", C: "failed"})),
    ),
    "listed-all-pass-holds": (
        Rules(require="all_pass", fail_to_pass=(A,)),
        Runs(run({A: "passed", C: "passed"}), base({A: "failed", C: "failed"})),
    ),
    "require-none": (
        Rules(require="none"),
        Runs(run({A: "failed", B: "skipped"}), base({A: "passed", B: "passed"})),
    ),
    "all-pass-holds": (
        Rules(require="all_pass"),
        Runs(run({A: "passed", B: "xpassed"}), base({A: "failed", B: "xfailed"})),
    ),
    "all-pass-fails": (
        Rules(require="all_pass"),
        Runs(run({A: "passed", B: "failed"}), base({A: "failed", B: "failed"})),
    ),
    "no-baseline-run": (FTP, Runs(run({A: "passed"}))),
    "baseline-collection-error": (
        FTP,
        Runs(
            run({A: "passed", B: "passed"}),
            base({A: "failed"}, collection_errors={"tests/test_b.py": "ImportError: x"}),
        ),
    ),
    "baseline-timed-out": (FTP, Runs(run({A: "passed"}), base({}, timed_out=True))),
    "baseline-untrusted-patched-fails": (
        FTP,
        Runs(run({A: "passed", B: "failed"}), base({A: "failed"}, problems=("no records",))),
    ),
    "no-regressions": (
        Rules(require="no_regressions"),
        Runs(run({A: "failed", B: "passed"}), base({A: "failed", B: "passed"})),
    ),
    "new-tests-are-the-evidence": (
        FTP,
        Runs(
            run({A: "passed"}),
            base({A: "passed"}),
            new_on({NEW: "passed", NEW2: "skipped"}),
            new_on(
                {},
                role="new_on_base",
                collection_errors={"tests/test_new.py": "ImportError: cannot import name 'x'"},
            ),
        ),
    ),
    "new-tests-pass-on-base-too": (
        FTP,
        Runs(
            run({A: "passed"}),
            base({A: "passed"}),
            new_on({NEW: "passed"}),
            new_on({NEW: "passed"}, role="new_on_base"),
        ),
    ),
    "new-test-fails-with-patch": (
        FTP,
        Runs(
            run({A: "passed"}),
            base({A: "failed"}),
            new_on({NEW: "failed", NEW2: "error"}),
            new_on({NEW: "failed"}, role="new_on_base"),
        ),
    ),
    "new-tests-do-not-run": (
        FTP,
        Runs(run({A: "passed"}), base({A: "failed"}), new_on({}, timed_out=True), None),
    ),
    "skipped-with-patch": (
        FTP,
        Runs(
            run({A: "passed", B: "skipped", C: "xfailed"}),
            base({A: "failed", B: "skipped", C: "xfailed"}),
        ),
    ),
    "patched-untrusted": (
        FTP,
        Runs(run({A: "passed"}, problems=("a", "b", "c", "d")), base({A: "failed"})),
    ),
    "patched-collection-errors": (
        FTP,
        Runs(
            run({A: "passed"}, collection_errors={f"tests/test_{i}.py": "E" for i in range(7)}),
            base({A: "failed"}),
        ),
    ),
}


EXPECTED: dict[str, Evidence] = {
    "fixed-one-of-two-new-tests-not-counted": Evidence(
        held=True,
        reason="1 of the 2 test(s) that fail on the base pass with the patch, and none broke",
        comparison=Comparison(
            fixed=(A,), still_failing=(B,), new_tests=(NEW,), new_evidence=(NEW,), passing=2
        ),
        baseline_usable=True,
        notes=(
            (
                "The 1 test(s) the patch adds were not counted as evidence, because tests"
                " that failed on the base exist and decide instead."
            ),
            "1 test(s) fail before and after the patch: tests/test_b.py::test_b.",
        ),
    ),
    "nothing-fixed-many-failing": Evidence(
        held=False,
        reason=(
            "none of the 7 test(s) that fail on the base passes with the patch "
            "(tests/test_m.py::test_0, tests/test_m.py::test_1, tests/test_m.py::test_2, "
            "tests/test_m.py::test_3, tests/test_m.py::test_4 and 2 more), so nothing "
            "shows it fixes the issue"
        ),
        comparison=Comparison(still_failing=MANY),
        baseline_usable=True,
        notes=(
            (
                "7 test(s) fail before and after the patch: tests/test_m.py::test_0, "
                "tests/test_m.py::test_1, tests/test_m.py::test_2, "
                "tests/test_m.py::test_3, tests/test_m.py::test_4 and 2 more."
            ),
        ),
    ),
    "many-broken": Evidence(
        held=False,
        reason=(
            "7 test(s) that passed on the base do not pass with the patch: "
            "tests/test_m.py::test_0, tests/test_m.py::test_1, tests/test_m.py::test_2, "
            "tests/test_m.py::test_3, tests/test_m.py::test_4 and 2 more"
        ),
        comparison=Comparison(fixed=(A,), broken=MANY, passing=1),
        baseline_usable=True,
        notes=(),
    ),
    "fails-differently-blocks": Evidence(
        held=False,
        reason=(
            "1 test(s) fail both before and after the patch, but differently: "
            "tests/test_b.py::test_b"
        ),
        comparison=Comparison(fixed=(A,), still_failing=(B,), fails_differently=(B,), passing=1),
        baseline_usable=True,
        notes=(
            ("1 test(s) fail before and after the patch but differently: tests/test_b.py::test_b."),
        ),
    ),
    "fails-differently-warns": Evidence(
        held=True,
        reason="1 of the 2 test(s) that fail on the base pass with the patch, and none broke",
        comparison=Comparison(fixed=(A,), still_failing=(B,), fails_differently=(B,), passing=1),
        baseline_usable=True,
        notes=(
            ("1 test(s) fail before and after the patch but differently: tests/test_b.py::test_b."),
        ),
    ),
    "listed-fail-to-pass-missing": Evidence(
        held=False,
        reason=(
            "1 test(s) listed in verify.fail_to_pass do not pass with the patch: "
            "tests/test_d.py::test_d (not collected)"
        ),
        comparison=Comparison(fixed=(A,), passing=2),
        baseline_usable=True,
        notes=(),
    ),
    "listed-pass-to-pass-failing": Evidence(
        held=False,
        reason=(
            "1 test(s) listed in verify.pass_to_pass do not pass with the patch: "
            "tests/test_b.py::test_b (skipped)"
        ),
        comparison=Comparison(fixed=(A,), broken=(B,), skipped=(B,), passing=1),
        baseline_usable=True,
        notes=(("1 test(s) were skipped with the patch; a skipped test counts as not passing."),),
    ),
    "listed-both-hold-usable": Evidence(
        held=True,
        reason=(
            "every test listed in the policy passes with the patch, and none that passed "
            "on the base broke"
        ),
        comparison=Comparison(fixed=(A,), passing=2),
        baseline_usable=True,
        notes=(),
    ),
    "listed-pass-to-pass-only-holds-no-baseline": Evidence(
        held=True,
        reason="every test listed in the policy passes with the patch",
        comparison=Comparison(passing=2),
        baseline_usable=False,
        notes=(),
    ),
    "listed-all-pass-fails": Evidence(
        held=False,
        reason="all tests must pass, and they do not (1 failed, 1 passed)",
        comparison=Comparison(fixed=(A,), still_failing=(C,), passing=1),
        baseline_usable=True,
        notes=("1 test(s) fail before and after the patch: tests/test_c.py::T::test_c[1].",),
    ),
    "listed-all-pass-holds": Evidence(
        held=True,
        reason=(
            "every test listed in the policy passes with the patch, and none that passed "
            "on the base broke"
        ),
        comparison=Comparison(fixed=(A, C), passing=2),
        baseline_usable=True,
        notes=(),
    ),
    "require-none": Evidence(
        held=True,
        reason="the policy requires no test evidence",
        comparison=Comparison(broken=(A, B), skipped=(B,)),
        baseline_usable=True,
        notes=(("1 test(s) were skipped with the patch; a skipped test counts as not passing."),),
    ),
    "all-pass-holds": Evidence(
        held=True,
        reason="all tests must pass, and they do (1 passed, 1 xpassed)",
        comparison=Comparison(fixed=(A,), passing=2),
        baseline_usable=True,
        notes=(),
    ),
    "all-pass-fails": Evidence(
        held=False,
        reason="all tests must pass, and they do not (1 failed, 1 passed)",
        comparison=Comparison(fixed=(A,), still_failing=(B,), passing=1),
        baseline_usable=True,
        notes=("1 test(s) fail before and after the patch: tests/test_b.py::test_b.",),
    ),
    "no-baseline-run": Evidence(
        held=True,
        reason=(
            "with no usable baseline (no baseline run), all tests must pass, and they do (1 passed)"
        ),
        comparison=Comparison(passing=1),
        baseline_usable=False,
        notes=(),
    ),
    "baseline-collection-error": Evidence(
        held=True,
        reason=(
            "with no usable baseline (pytest could not collect 1 module(s): "
            "tests/test_b.py), all tests must pass, and they do (2 passed)"
        ),
        comparison=Comparison(fixed=(A,), passing=2),
        baseline_usable=False,
        notes=(
            (
                "No usable baseline: on the base, pytest could not collect 1 module(s): "
                "tests/test_b.py. FrogNano cannot tell which tests the patch fixed or "
                "whether one it broke is missing."
            ),
        ),
    ),
    "baseline-timed-out": Evidence(
        held=True,
        reason=(
            "with no usable baseline (the tests timed out after 2 s), all tests must "
            "pass, and they do (1 passed)"
        ),
        comparison=Comparison(passing=1),
        baseline_usable=False,
        notes=(
            (
                "No usable baseline: on the base, the tests timed out after 2 s. FrogNano"
                " cannot tell which tests the patch fixed or whether one it broke is "
                "missing."
            ),
        ),
    ),
    "baseline-untrusted-patched-fails": Evidence(
        held=False,
        reason=(
            "with no usable baseline (its results cannot be trusted: no records), all "
            "tests must pass, and they do not (1 failed, 1 passed)"
        ),
        comparison=Comparison(passing=1),
        baseline_usable=False,
        notes=(
            (
                "No usable baseline: on the base, its results cannot be trusted: no "
                "records. FrogNano cannot tell which tests the patch fixed or whether one"
                " it broke is missing."
            ),
        ),
    ),
    "no-regressions": Evidence(
        held=True,
        reason="no test that passed on the base fails with the patch",
        comparison=Comparison(still_failing=(A,), passing=1),
        baseline_usable=True,
        notes=("1 test(s) fail before and after the patch: tests/test_a.py::test_a.",),
    ),
    "new-tests-are-the-evidence": Evidence(
        held=True,
        reason=(
            "no test fails on the base; 1 test(s) the patch adds fail without it and pass"
            " with it, and none broke"
        ),
        comparison=Comparison(new_tests=(NEW, NEW2), new_evidence=(NEW,), passing=1),
        baseline_usable=True,
        notes=(
            (
                "The evidence comes from tests the agent wrote: check that they test what"
                " the issue describes and do not just assert the new behaviour's own "
                "output."
            ),
            "1 test(s) the patch adds are skipped: tests/test_new.py::test_new2.",
        ),
    ),
    "new-tests-pass-on-base-too": Evidence(
        held=False,
        reason=(
            "no test fails on the base, and no test the patch adds fails without it, so "
            "nothing shows the patch fixes the issue"
        ),
        comparison=Comparison(new_tests=(NEW,), passing=1),
        baseline_usable=True,
        notes=(),
    ),
    "new-test-fails-with-patch": Evidence(
        held=False,
        reason=(
            "2 test(s) the patch adds fail with it: tests/test_new.py::test_new, "
            "tests/test_new.py::test_new2"
        ),
        comparison=Comparison(fixed=(A,), new_tests=(NEW, NEW2), passing=1),
        baseline_usable=True,
        notes=(
            (
                "The 2 test(s) the patch adds were not counted as evidence, because tests"
                " that failed on the base exist and decide instead."
            ),
        ),
    ),
    "new-tests-do-not-run": Evidence(
        held=False,
        reason=("the tests the patch adds could not be run with it: the tests timed out after 2 s"),
        comparison=Comparison(fixed=(A,), passing=1),
        baseline_usable=True,
        notes=(),
    ),
    "skipped-with-patch": Evidence(
        held=True,
        reason="1 of the 1 test(s) that fail on the base pass with the patch, and none broke",
        comparison=Comparison(fixed=(A,), skipped=(B, C), passing=1),
        baseline_usable=True,
        notes=(("2 test(s) were skipped with the patch; a skipped test counts as not passing."),),
    ),
    "patched-untrusted": Evidence(
        held=False,
        reason="the run with the patch does not count: its results cannot be trusted: a; b; c",
        comparison=Comparison(fixed=(A,), passing=1),
        baseline_usable=True,
        notes=(),
    ),
    "patched-collection-errors": Evidence(
        held=False,
        reason=(
            "the run with the patch does not count: pytest could not collect 7 module(s):"
            " tests/test_0.py, tests/test_1.py, tests/test_2.py, tests/test_3.py, "
            "tests/test_4.py"
        ),
        comparison=Comparison(fixed=(A,), passing=1),
        baseline_usable=True,
        notes=(),
    ),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_whole_evidence(name: str) -> None:
    rules, runs = SCENARIOS[name]
    assert decide(rules, runs) == EXPECTED[name]


def test_every_scenario_has_its_expected_evidence() -> None:
    assert SCENARIOS.keys() == EXPECTED.keys()


def test_no_runs() -> None:
    assert decide(FTP, None) == Evidence(False, "the patch was not tested")
    assert decide(FTP, None, why_no_runs="the patch changes no file") == Evidence(
        False, "the patch changes no file"
    )


def test_compare_counts_passing_tests_and_keeps_new_tests_without_a_baseline() -> None:
    runs = Runs(
        run({A: "passed", B: "xpassed", C: "failed", D: "skipped"}),
        None,
        new_on({A: "passed", NEW: "passed", NEW2: "failed"}),
        new_on({NEW: "failed", NEW2: "failed"}, role="new_on_base"),
    )
    assert compare(runs) == Comparison(
        skipped=(D,), new_tests=(NEW, NEW2), new_evidence=(NEW,), passing=2
    )


def test_a_new_test_absent_from_a_base_run_that_collected_its_file_is_no_evidence() -> None:
    # Absent from the base run, but its file collected there: it was deselected, not failing.
    runs = Runs(
        run({A: "passed"}),
        base({A: "passed"}),
        new_on({NEW: "passed"}),
        new_on({NEW2: "failed"}, role="new_on_base"),
    )
    assert compare(runs).new_evidence == ()


def test_a_test_that_moves_between_failing_and_skipped_is_neither_fixed_nor_still_failing() -> None:
    runs = Runs(run({A: "skipped", B: "failed", C: "passed"}), base({A: "failed", B: "skipped"}))
    assert compare(runs) == Comparison(skipped=(A,), passing=1)


def test_exactly_five_ids_are_named_with_nothing_more() -> None:
    after: dict[str, Outcome] = {A: "passed", **dict.fromkeys(MANY[:5], "failed")}
    before: dict[str, Outcome] = {A: "failed", **dict.fromkeys(MANY[:5], "passed")}
    evidence = decide(FTP, Runs(run(after), base(before)))
    assert evidence.reason == (
        "5 test(s) that passed on the base do not pass with the patch: " + ", ".join(MANY[:5])
    )


def test_listed_tests_keep_their_notes_and_name_every_missing_test() -> None:
    listed = Rules(fail_to_pass=(A,))
    held = decide(listed, Runs(run({A: "passed", B: "skipped"}), base({A: "failed", B: "skipped"})))
    assert held.notes == (
        "1 test(s) were skipped with the patch; a skipped test counts as not passing.",
    )
    missing = decide(Rules(fail_to_pass=(A, B)), Runs(run({A: "failed"}), base({A: "failed"})))
    assert missing.reason == (
        f"2 test(s) listed in verify.fail_to_pass do not pass with the patch: {A} (failed), "
        f"{B} (not collected)"
    )


def test_nothing_to_show_keeps_its_notes() -> None:
    evidence = decide(
        FTP, Runs(run({A: "passed", B: "skipped"}), base({A: "passed", B: "skipped"}))
    )
    assert not evidence.held
    assert evidence.notes == (
        "1 test(s) were skipped with the patch; a skipped test counts as not passing.",
    )
