"""The scan's small parts, exactly: tampering labels, not-analysed findings and shown lines."""

from __future__ import annotations

import pytest

from frognano.policy.gate import scan
from frognano.policy.gate.findings import Finding
from frognano.policy.gate.python import rules as pyrules
from tests.policy.fakes import GITHUB_TOKEN
from tests.policy.test_gate_python import findings_for

R = "[REDACTED]"


@pytest.mark.parametrize(
    ("label", "tampering"),
    [
        (pyrules.ENCODING.format("utf-7"), True),
        (pyrules.ENCODING.format(""), True),
        (pyrules.EXIT, True),
        (pyrules.SYS_EXIT, False),
        (pyrules.PYTEST_SKIP, False),
        ("a source encoding", False),
    ],
)
def test_tampering_labels_include_every_encoding_declaration(label: str, tampering: bool) -> None:
    assert scan._is_tampering(label) is tampering


def test_a_file_not_analysed_is_a_warning_naming_it_and_why() -> None:
    assert scan._not_analysed("src/a.py", "it does not parse") == Finding(
        "warn",
        "not_analysed",
        "src/a.py was not checked for test-weakening code because it does not parse; "
        "review it by hand",
        "src/a.py",
    )
    assert scan._not_analysed("b\udcff.py", "x").reason.startswith("b\ufffd.py was not")


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("  x = 1  ", "x = 1"),
        ("a" * scan.SHOWN_CHARS, "a" * scan.SHOWN_CHARS),
        ("a" * (scan.SHOWN_CHARS + 1), "a" * (scan.SHOWN_CHARS - 3) + "..."),
        (" " + "a" * scan.SHOWN_CHARS + " ", "a" * scan.SHOWN_CHARS),
        ("x" * 190 + GITHUB_TOKEN, "x" * 190 + R),  # the token reaches past 200: hidden whole
        ("x = 'abc'", "x = 'abc'"),
    ],
)
def test_a_shown_line_is_stripped_redacted_and_cut(line: str, shown: str) -> None:
    assert scan._shown_line(line) == shown


def test_a_shown_line_hides_known_values_and_scrubs_on_request() -> None:
    assert scan._shown_line("key = abc123", ["abc123"]) == f"key = {R}"
    assert scan._shown_line("x = 'abc'", scrub=True) == f"x = '{R}'"


@pytest.mark.parametrize(
    ("base", "inherited"),
    [
        ("builtins.SystemExit", True),
        ("builtins.KeyboardInterrupt", True),
        ("os._exit", True),
        ("unittest.SkipTest", True),
        ("builtins.ValueError", False),
        ("mymodule.Error", False),
    ],
)
def test_subclasses_stand_for_exit_exceptions_and_dangerous_bases(
    base: str, inherited: bool
) -> None:
    assert pyrules.inherited(base) is inherited


@pytest.mark.parametrize(
    ("owner", "patched"),
    [
        ("builtins", True),
        ("pytest", True),
        ("_pytest.runner", True),
        ("unittest", True),
        ("unittest.TestCase", True),
        ("unittest.mock", False),
        ("unittest.mock.patch", False),
        ("unittest.mockery", True),
        ("builtins.open", False),
        ("json", False),
    ],
)
def test_patching_counts_for_the_runner_and_builtins_not_mock(owner: str, patched: bool) -> None:
    assert pyrules.patched(owner) is patched


def test_under_the_default_policy_tampering_is_refused_and_other_suspicious_code_warns() -> None:
    found = findings_for("src/m.py", "import os, sys\nsys.exit(0)\nos._exit(0)\n")
    assert [(f.severity, f.kind, f.reason) for f in found] == [
        ("warn", "suspicious", f"src/m.py adds {pyrules.SYS_EXIT} (1 line), which can make "
         "failing tests pass without a fix; check that it is justified"),
        ("block", "tampering", f"src/m.py adds {pyrules.EXIT} (1 line), which can make failing "
         "tests pass without a fix; a fix does not need it, so it is refused (gate.tampering)"),
    ]  # fmt: skip
