"""What the test runs show about a patch, and whether that meets the policy's `require`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from frognano.run.outcomes import FAILING, PASSING, TestRun, failure_signature, file_of

Require = Literal["all_pass", "fail_to_pass", "no_regressions", "none"]
SHOWN = 5


@dataclass(frozen=True)
class Rules:
    """The policy's `verify` keys that decide a verdict."""

    require: Require = "fail_to_pass"
    fails_differently: Literal["block", "warn"] = "block"
    fail_to_pass: tuple[str, ...] = ()
    """Explicit ids that must pass with the patch (SWE-bench's FAIL_TO_PASS)."""
    pass_to_pass: tuple[str, ...] = ()


@dataclass(frozen=True)
class Runs:
    """The runs of one verification; None where a run was not needed or not made."""

    patched: TestRun
    baseline: TestRun | None = None
    new_on_patched: TestRun | None = None
    new_on_base: TestRun | None = None


@dataclass(frozen=True)
class Comparison:
    """Test by test, base against base + patch."""

    fixed: tuple[str, ...] = ()
    """Failed (or errored) on the base, pass with the patch."""
    broken: tuple[str, ...] = ()
    """Passed on the base; fail, are skipped or are gone with the patch."""
    still_failing: tuple[str, ...] = ()
    fails_differently: tuple[str, ...] = ()
    """Fail in both runs, but not the same way."""
    skipped: tuple[str, ...] = ()
    """Skipped or xfailed with the patch: never counted as passing."""
    new_tests: tuple[str, ...] = ()
    """Tests the patch adds (they exist only with its new test files)."""
    new_evidence: tuple[str, ...] = ()
    """New tests that fail on the base and pass with the patch."""
    passing: int = 0


@dataclass(frozen=True)
class Evidence:
    held: bool
    reason: str
    comparison: Comparison = field(default_factory=Comparison)
    baseline_usable: bool = False
    notes: tuple[str, ...] = ()
    """What a reviewer should know: what was not counted, and why."""


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:SHOWN])
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def compare(runs: Runs) -> Comparison:
    """Base vs patched, plus the new tests' two runs; what is missing stays empty."""
    after = runs.patched.outcomes
    new_after = runs.new_on_patched.outcomes if runs.new_on_patched else {}
    new_tests = tuple(sorted(new_after.keys() - after.keys()))
    new_evidence = tuple(
        t for t in new_tests if new_after[t] in PASSING and _failed_on_base(runs, t)
    )
    skipped = tuple(sorted(t for t, o in after.items() if o not in PASSING | FAILING))
    passing = sum(1 for o in after.values() if o in PASSING)
    base = runs.baseline
    if base is None or not base.complete:
        return Comparison(skipped=skipped, new_tests=new_tests, new_evidence=new_evidence,
                          passing=passing)  # fmt: skip
    before = base.outcomes
    fixed, broken, still, different = [], [], [], []
    for test_id in sorted(before):
        was, now = before[test_id], after.get(test_id)
        if was in PASSING and now not in PASSING:
            broken.append(test_id)
        elif was in FAILING and now in PASSING:
            fixed.append(test_id)
        elif was in FAILING and now in FAILING:
            still.append(test_id)
            old = failure_signature(was, base.crashes.get(test_id, ""))
            new = failure_signature(now, runs.patched.crashes.get(test_id, ""))
            if old != new:
                different.append(test_id)
    return Comparison(
        tuple(fixed), tuple(broken), tuple(still), tuple(different), skipped,
        new_tests, new_evidence, passing,
    )  # fmt: skip


def _failed_on_base(runs: Runs, test_id: str) -> bool:
    """Whether a new test failed without the patch: it failed or errored, or its module
    could not even be imported there (typically: it imports what the patch adds)."""
    run = runs.new_on_base
    if run is None or not run.complete:
        return False
    if run.outcomes.get(test_id) in FAILING:
        return True
    return test_id not in run.outcomes and file_of(test_id) in run.collection_errors


def decide(rules: Rules, runs: Runs | None, *, why_no_runs: str = "") -> Evidence:  # noqa: PLR0911
    """The verdict of `rules` over `runs` (None: there was nothing to run, `why_no_runs`)."""
    if runs is None:
        return Evidence(False, why_no_runs or "the patch was not tested")
    comparison = compare(runs)
    patched, base = runs.patched, runs.baseline
    usable = base is not None and base.clean
    notes = list(_notes(runs, comparison, usable))
    if rules.require == "none":
        return Evidence(True, "the policy requires no test evidence", comparison, usable,
                        tuple(notes))  # fmt: skip

    def fail(reason: str) -> Evidence:
        return Evidence(False, reason, comparison, usable, tuple(notes))

    if not patched.clean:
        return fail(f"the run with the patch does not count: {patched.trouble()}")
    trouble = _new_tests_trouble(runs)
    if trouble:
        return fail(trouble)
    listed = _listed_failures(rules, runs)
    if listed:
        return fail(listed)
    if comparison.broken:
        return fail(
            f"{len(comparison.broken)} test(s) that passed on the base do not pass with the "
            f"patch: {_ids(comparison.broken)}"
        )
    if comparison.fails_differently and rules.fails_differently == "block":
        return fail(
            f"{len(comparison.fails_differently)} test(s) fail both before and after the patch, "
            f"but differently: {_ids(comparison.fails_differently)}"
        )
    if rules.fail_to_pass or rules.pass_to_pass:
        if rules.require == "all_pass" and not patched.passed:
            return fail(f"all tests must pass, and they do not ({patched.summary})")
        broke = ", and none that passed on the base broke" if usable else ""
        return Evidence(True, f"every test listed in the policy passes with the patch{broke}",
                        comparison, usable, tuple(notes))  # fmt: skip
    if rules.require == "all_pass" or not usable:
        return _all_pass(rules, runs, comparison, usable, notes)
    if rules.require == "no_regressions":
        return Evidence(True, "no test that passed on the base fails with the patch", comparison,
                        usable, tuple(notes))  # fmt: skip
    return _fail_to_pass(runs, comparison, notes)


def _all_pass(
    rules: Rules, runs: Runs, comparison: Comparison, usable: bool, notes: list[str]
) -> Evidence:
    """`all_pass`, or the fallback of the other rules when the base gave no usable baseline."""
    patched = runs.patched
    if rules.require == "all_pass":
        rule = "all tests must pass"
    else:
        why = "no baseline run" if runs.baseline is None else runs.baseline.trouble()
        rule = f"with no usable baseline ({why}), all tests must pass"
    held = patched.passed
    verb = "they do" if held else "they do not"
    return Evidence(held, f"{rule}, and {verb} ({patched.summary})", comparison, usable,
                    tuple(notes))  # fmt: skip


def _fail_to_pass(runs: Runs, comparison: Comparison, notes: list[str]) -> Evidence:
    base = runs.baseline
    assert base is not None  # noqa: S101 - decide() only comes here with a usable baseline
    failing_before = sorted(t for t, o in base.outcomes.items() if o in FAILING)
    if failing_before:
        if comparison.fixed:
            return Evidence(
                True,
                f"{len(comparison.fixed)} of the {len(failing_before)} test(s) that fail on the "
                "base pass with the patch, and none broke",
                comparison, True, tuple(notes),
            )  # fmt: skip
        return Evidence(
            False,
            f"none of the {len(failing_before)} test(s) that fail on the base passes with the "
            f"patch ({_ids(failing_before)}), so nothing shows it fixes the issue",
            comparison, True, tuple(notes),
        )  # fmt: skip
    if comparison.new_evidence:
        return Evidence(
            True,
            f"no test fails on the base; {len(comparison.new_evidence)} test(s) the patch adds "
            "fail without it and pass with it, and none broke",
            comparison, True, tuple(notes),
        )  # fmt: skip
    return Evidence(
        False,
        "no test fails on the base, and no test the patch adds fails without it, so nothing "
        "shows the patch fixes the issue",
        comparison, True, tuple(notes),
    )  # fmt: skip


def _new_tests_trouble(runs: Runs) -> str:
    new = runs.new_on_patched
    if new is None:
        return ""
    if not new.clean:
        return f"the tests the patch adds could not be run with it: {new.trouble()}"
    failing = sorted(t for t, o in new.outcomes.items() if o in FAILING)
    if failing:
        return f"{len(failing)} test(s) the patch adds fail with it: {_ids(failing)}"
    return ""


def _listed_failures(rules: Rules, runs: Runs) -> str:
    """The first explicitly listed test that does not pass, said as a reason ("" if none)."""
    outcomes: Mapping[str, str] = {
        **(runs.new_on_patched.outcomes if runs.new_on_patched else {}),
        **runs.patched.outcomes,
    }
    for kind, ids in (("verify.fail_to_pass", rules.fail_to_pass),
                      ("verify.pass_to_pass", rules.pass_to_pass)):  # fmt: skip
        missing = [t for t in ids if outcomes.get(t) not in PASSING]
        if missing:
            shown = ", ".join(f"{t} ({outcomes.get(t, 'not collected')})" for t in missing[:SHOWN])
            return f"{len(missing)} test(s) listed in {kind} do not pass with the patch: {shown}"
    return ""


def _notes(runs: Runs, comparison: Comparison, usable: bool) -> list[str]:
    notes = []
    base = runs.baseline
    if base is not None and not usable:
        notes.append(
            f"No usable baseline: on the base, {base.trouble()}. FrogNano cannot tell which "
            "tests the patch fixed or whether one it broke is missing."
        )
    if comparison.new_tests and usable and comparison.fixed:
        notes.append(
            f"The {len(comparison.new_tests)} test(s) the patch adds were not counted as "
            "evidence, because tests that failed on the base exist and decide instead."
        )
    if comparison.new_evidence and not comparison.fixed:
        notes.append(
            "The evidence comes from tests the agent wrote: check that they test what the issue "
            "describes and do not just assert the new behaviour's own output."
        )
    if comparison.fails_differently:
        notes.append(
            f"{len(comparison.fails_differently)} test(s) fail before and after the patch but "
            f"differently: {_ids(comparison.fails_differently)}."
        )
    unfixed = sorted(set(comparison.still_failing) - set(comparison.fails_differently))
    if unfixed:
        notes.append(f"{len(unfixed)} test(s) fail before and after the patch: {_ids(unfixed)}.")
    if comparison.skipped:
        notes.append(
            f"{len(comparison.skipped)} test(s) were skipped with the patch; a skipped test "
            "counts as not passing."
        )
    new = runs.new_on_patched
    if new is not None and new.clean:
        idle = sorted(t for t, o in new.outcomes.items() if o not in PASSING | FAILING)
        if idle:
            notes.append(f"{len(idle)} test(s) the patch adds are skipped: {_ids(idle)}.")
    return notes
