"""Test runs in the sandbox, per-test outcomes from JUnit XML, and what base vs patch shows."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from xml.etree.ElementTree import Element

from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from frognano.policy.models import VerifyPolicy
from frognano.sandbox.base import Sandbox
from frognano.sandbox.paths import WORKSPACE
from frognano.workspace import ChangedFile

DEFAULT_TEST_COMMAND = "python -m pytest -q"
DEFAULT_TEST_TIMEOUT = 1800.0
OUTPUT_KEPT_BYTES = 24_000
"""Head and tail of each run's output kept for the report."""
MAX_JUNIT_BYTES = 64 * 1024 * 1024

Outcome = Literal["passed", "failed", "error", "skipped"]

# pytest's closing line: "3 passed in 0.01s", "== 1 failed, 2 passed in 0.12s ==",
# "no tests ran in 0.01s"; unittest's "Ran 3 tests in 0.001s" then "OK" / "FAILED (...)".
_PYTEST_SUMMARY = re.compile(
    r"^=*\s*((?:\d+ \w+(?:, )?)+|no tests ran)(?: in [\d.]+s(?: \([\d:]+\))?)?\s*=*$"
)
_UNITTEST_RESULT = re.compile(r"^(OK|FAILED)(?: \(.*\))?$")
_PYTEST = re.compile(r"(^|[\s/;&|(])(py\.test|pytest)(\s|$)")
EXIT_CODE_ID = "(the test command's exit code)"
"""The pseudo-test standing for the whole run when no per-test report exists."""


@dataclass(frozen=True)
class TestRun:
    """One run of the test command."""

    __test__ = False  # a result type, not a pytest test class

    command: str
    exit_code: int | None
    timed_out: bool
    duration: float
    summary: str
    """The runner's own closing line when recognised, else a description of the exit."""
    output: str
    """Head and tail of the output."""
    outcomes: Mapping[str, Outcome] | None = None
    """Per-test outcomes from the JUnit report; None when there was none to read."""
    report_note: str = ""
    """Why `outcomes` is missing or was not trusted, if so."""

    @property
    def passed(self) -> bool:
        """The run as a whole passed: exit 0, in time, and no test failed."""
        if self.exit_code != 0 or self.timed_out:
            return False
        return not self.outcomes or all(o in ("passed", "skipped") for o in self.outcomes.values())

    def results(self) -> Mapping[str, Outcome]:
        """Per-test outcomes, or the whole run as one pseudo-test when there is no report."""
        if self.outcomes is not None:
            return self.outcomes
        if self.timed_out or self.exit_code is None:
            return {EXIT_CODE_ID: "error"}
        return {EXIT_CODE_ID: "passed" if self.exit_code == 0 else "failed"}


def junit_command(command: str, policy: VerifyPolicy) -> tuple[str, str | None]:
    """The command to run and the JUnit report it will write (None: no per-test outcomes)."""
    if policy.junit_xml:
        return command, f"{WORKSPACE}/{policy.junit_xml.lstrip('/')}"
    if _PYTEST.search(command):
        # A random name outside the tree: the code under test has no fixed path to forge.
        report = f"/tmp/frognano-junit-{secrets.token_hex(8)}.xml"  # noqa: S108 - the sandbox's /tmp
        return f"{command} --junitxml={report}", report
    return command, None


async def run_tests(
    sandbox: Sandbox,
    command: str = DEFAULT_TEST_COMMAND,
    timeout: float = DEFAULT_TEST_TIMEOUT,
    *,
    policy: VerifyPolicy | None = None,
) -> TestRun:
    """Run the test command in /workspace and read what it reports; never raises for a test
    failure, a crash or a timeout (they are results)."""
    policy = policy or VerifyPolicy(command=command, timeout_seconds=timeout)
    to_run, report = junit_command(command, policy)
    if report is not None:
        await sandbox.exec(f"rm -f -- {report}", cwd=WORKSPACE, timeout=30)
    result = await sandbox.exec(
        to_run, cwd=WORKSPACE, timeout=timeout, output_limit=OUTPUT_KEPT_BYTES
    )
    output = result.output
    if result.timed_out:
        summary = f"timed out after {timeout:g} s"
    else:
        summary = summarize(output) or f"exit code {result.exit_code}"
    outcomes: dict[str, Outcome] | None = None
    note = "" if report else "no per-test report: only the exit code counts"
    if report is not None and not result.timed_out:
        try:
            outcomes = parse_junit(await sandbox.read_file(report, max_bytes=MAX_JUNIT_BYTES))
        except (OSError, ValueError) as exc:
            note = f"no usable JUnit report at {report}: {exc}"
        else:
            if result.exit_code not in (0, 5) and not any(
                outcome in ("failed", "error") for outcome in outcomes.values()
            ):
                # The report says all is well but the runner failed: believe the failure.
                note = (
                    f"the JUnit report shows no failure but the command exited "
                    f"{result.exit_code}; the report was not trusted"
                )
                outcomes = None
    return TestRun(
        command=to_run,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        duration=result.duration,
        summary=summary,
        output=output,
        outcomes=outcomes,
        report_note=note,
    )


def parse_junit(data: bytes) -> dict[str, Outcome]:
    """`{test id: outcome}` from a JUnit XML report (pytest's, or any xUnit-style one)."""
    try:
        root = ElementTree.fromstring(data)
    except (ElementTree.ParseError, DefusedXmlException) as exc:
        raise ValueError(f"not valid JUnit XML ({exc})") from exc
    if root.tag not in ("testsuites", "testsuite"):
        raise ValueError(f"not a JUnit report (root element <{root.tag}>)")
    outcomes: dict[str, Outcome] = {}
    for case in root.iter("testcase"):
        classname = case.get("classname") or ""
        name = case.get("name") or ""
        test_id = f"{classname}::{name}" if classname else name
        outcomes[test_id] = _outcome(case)
    return outcomes


def _outcome(case: Element) -> Outcome:
    tags = {child.tag for child in case}
    if "error" in tags:
        return "error"
    if "failure" in tags:
        return "failed"
    if "skipped" in tags:
        return "skipped"
    return "passed"


def summarize(output: str) -> str:
    """The last summary line pytest or unittest printed, or "" when there is none."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        if _PYTEST_SUMMARY.match(line):
            return line.strip("= ").strip()
        if _UNITTEST_RESULT.match(line) and index > 0 and lines[index - 1].startswith("Ran "):
            return f"{lines[index - 1]}: {line}"
    return ""


@dataclass(frozen=True)
class Comparison:
    """What the patch changed, test by test (or for the whole run, without reports)."""

    fixed: tuple[str, ...] = ()
    """Not passing on base (failed, error, or not even collected), passing with the patch."""
    broken: tuple[str, ...] = ()
    """Passing on base, not passing (or gone) with the patch."""
    still_failing: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    """Skipped with the patch: never counted as passing."""
    passing: int = 0
    """Tests passing with the patch."""


def compare(base: TestRun, patched: TestRun) -> Comparison:
    """Base (with the agent's new test files) against base + patch."""
    before, after = base.results(), patched.results()
    if (EXIT_CODE_ID in before) != (EXIT_CODE_ID in after):
        # One run has a report, the other not: compare the runs as wholes.
        before = {EXIT_CODE_ID: "passed" if base.passed else "failed"}
        after = {EXIT_CODE_ID: "passed" if patched.passed else "failed"}
    fixed, broken, still, skipped = [], [], [], []
    for test_id in sorted(before.keys() | after.keys()):
        was, now = before.get(test_id), after.get(test_id)
        if now == "skipped":
            skipped.append(test_id)
        if was == "passed" and now != "passed":
            broken.append(test_id)
        elif was != "passed" and now == "passed":
            fixed.append(test_id)
        elif was in ("failed", "error") and now in ("failed", "error"):
            still.append(test_id)
    passing = sum(1 for outcome in after.values() if outcome == "passed")
    return Comparison(tuple(fixed), tuple(broken), tuple(still), tuple(skipped), passing)


@dataclass(frozen=True)
class Verdict:
    held: bool
    reason: str


@dataclass(frozen=True)
class Verification:
    """Everything verification found out, for the decision and the report."""

    require: str
    verification: TestRun | None = None
    baseline: TestRun | None = None
    comparison: Comparison | None = None
    restored: tuple[str, ...] = ()
    """Protected files the agent changed, restored to their base content for verification."""
    effective_files: tuple[str, ...] = ()
    """Files the patch still changes once protected files are restored."""
    changes: tuple[ChangedFile, ...] = ()
    """Those files with their modes and bytes: exactly what was verified, for publication."""
    verdict: Verdict = field(default_factory=lambda: Verdict(False, "not verified"))


def decide(  # noqa: PLR0911 - one return per rule and outcome reads best
    require: str,
    baseline: TestRun | None,
    verification: TestRun,
    effective_files: tuple[str, ...],
) -> tuple[Comparison | None, Verdict]:
    """Apply the policy's `require` rule to the runs."""
    comparison = compare(baseline, verification) if baseline is not None else None
    if not effective_files:
        return comparison, Verdict(
            False, "the patch changes nothing once protected test files are restored"
        )
    if verification.timed_out:
        return comparison, Verdict(require == "none", f"the tests {verification.summary}")
    if require == "none":
        return comparison, Verdict(True, "the policy requires no test evidence")
    if require == "all_pass" or comparison is None:
        # Without a baseline nothing tells a fixed test from a broken one: all must pass.
        rule = "all tests must pass" + ("" if comparison else " (no baseline run)")
        if verification.passed:
            return comparison, Verdict(True, f"{rule}, and they do ({verification.summary})")
        return comparison, Verdict(False, f"{rule}, and they do not ({verification.summary})")
    if comparison.broken:
        shown = ", ".join(comparison.broken[:5])
        more = f" and {len(comparison.broken) - 5} more" if len(comparison.broken) > 5 else ""
        return comparison, Verdict(
            False, f"{len(comparison.broken)} test(s) that passed before fail now: {shown}{more}"
        )
    if require == "no_regressions":
        return comparison, Verdict(True, "no test that passed before fails now")
    if not comparison.fixed:
        return comparison, Verdict(
            False,
            "no test goes from failing to passing with the patch, so nothing shows it "
            "fixes the issue",
        )
    return comparison, Verdict(
        True, f"{len(comparison.fixed)} test(s) go from failing to passing, and none broke"
    )


__all__ = [
    "DEFAULT_TEST_COMMAND",
    "DEFAULT_TEST_TIMEOUT",
    "Comparison",
    "TestRun",
    "Verdict",
    "Verification",
    "compare",
    "decide",
    "parse_junit",
    "run_tests",
    "summarize",
]
