"""Summaries of test output, and a real test run in a sandbox."""

from __future__ import annotations

import pytest

from frognano.sandbox.local import LocalSandbox
from frognano.verify import run_tests, summarize


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
    assert "def test_no" in run.output_tail
    slow = await run_tests(default_sandbox, "sleep 5", timeout=1)
    assert slow.timed_out
    assert not slow.passed
    assert slow.summary == "timed out after 1 s"
