"""Test runs inside the sandbox, and what their output says."""

from __future__ import annotations

import re
from dataclasses import dataclass

from frognano.sandbox.base import WORKSPACE, Sandbox

DEFAULT_TEST_COMMAND = "python -m pytest -q"
DEFAULT_TEST_TIMEOUT = 1800.0
OUTPUT_TAIL_CHARS = 20_000

# pytest's closing line: "3 passed in 0.01s", "== 1 failed, 2 passed in 0.12s ==",
# "no tests ran in 0.01s"; unittest's "Ran 3 tests in 0.001s" then "OK" / "FAILED (...)".
_PYTEST_SUMMARY = re.compile(
    r"^=*\s*((?:\d+ \w+(?:, )?)+|no tests ran)(?: in [\d.]+s(?: \([\d:]+\))?)?\s*=*$"
)
_UNITTEST_RESULT = re.compile(r"^(OK|FAILED)(?: \(.*\))?$")


@dataclass(frozen=True)
class TestRun:
    command: str
    exit_code: int | None
    timed_out: bool
    duration: float
    summary: str
    """The runner's own closing line when recognised, else a description of the exit."""
    output_tail: str

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


async def run_tests(
    sandbox: Sandbox, command: str = DEFAULT_TEST_COMMAND, timeout: float = DEFAULT_TEST_TIMEOUT
) -> TestRun:
    """Run the test command in /workspace and summarise it; failures are results, not errors."""
    result = await sandbox.exec(command, cwd=WORKSPACE, timeout=timeout)
    output = result.output
    tail = output[-OUTPUT_TAIL_CHARS:]
    if result.timed_out:
        summary = f"timed out after {timeout:g} s"
    else:
        summary = summarize(output) or f"exit code {result.exit_code}"
    return TestRun(command, result.exit_code, result.timed_out, result.duration, summary, tail)


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
