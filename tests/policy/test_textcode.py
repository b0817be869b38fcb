"""Text-level test weakening: the exact hits per line, and where an encoded binary starts."""

from __future__ import annotations

import base64
from collections.abc import Sequence

import pytest

from frognano.policy.gate import textcode
from frognano.policy.gate.textcode import hidden_text_hits, option_label, text_hits

OPTIONS = (
    "pytest options or settings that leave tests out (--deselect, -p no:, --ignore, "
    "--collect-only, testpaths, ...)"
)
RULES = (
    "a change to pytest's settings (addopts, filterwarnings, xfail_strict, ...), which decide "
    "what counts as a failure"
)
JUNIT = "a change to the JUnit XML report that verification reads"
OTHER = (
    "a test skip, focus or early exit of another language's test framework (it.skip, "
    "describe.only, t.Skip, os.Exit, #[ignore], @Disabled, ...)"
)
HIDDEN = (
    "invisible bidirectional-text control characters, which make code read differently from "
    "how it runs"
)
BLOB = "an encoded binary (a long base64 or hex run of non-text bytes), which cannot be reviewed"


def hits(path: str, lines: Sequence[str]) -> list[tuple[int, str]]:
    return list(text_hits(path, lines))


def test_the_option_label_names_what_leaves_tests_out() -> None:
    assert option_label() == OPTIONS


@pytest.mark.parametrize(
    "line",
    [
        "pytest --deselect tests/test_a.py::test_b",
        "--deselect x",
        'pytest.main(["--ignore", "tests"])',
        "addargs=--ignore-glob=*slow*",
        "run --collect-only",
        "run --co",
        "run --continue-on-collection-errors",
        "run --noconftest",
        "run --override-ini=x=1",
        "run -o addopts=",
        "run -o'xfail_strict=",
        'run -o "testpaths=',
        "run -p no:randomly",
        "run -p'no:x'",
        "run -pno:x",
        "[no:cacheprovider]",
        "(no:x.y-z)",
        "run -k not slow",
        "run -k 'not slow'",
        "run -m not network",
        'run -m"not network"',
        "export PYTEST_ADDOPTS=-x",
        "PYTEST_PLUGINS=x",
        "env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1",
        "testpaths = tests",
        "  python_files: check_*.py",
        "python_classes=X",
        "python_functions = check",
        "norecursedirs = tests",
        "collect_ignore = ['x']",
        "confcutdir: .",
    ],
)
def test_options_and_settings_that_leave_tests_out_are_one_hit(line: str) -> None:
    assert hits("tox.ini", ["ok", line]) == [(1, OPTIONS)]


@pytest.mark.parametrize(
    "line",
    [
        "run --deselected",
        "run x--deselect",
        "run --coverage",
        "run --cov",
        "run --ignored",
        "run -k slow",
        "run -m network",
        "run -p xdist",
        "run -o verbose",
        "PYTEST_ADDOPTSX=1",
        "MY_PYTEST_ADDOPTS=1",
        "x testpaths = tests",
        "testpaths",
        "print('it.skip(')",
        "t.Skip()",
        "junitparser",
        "",
    ],
)
def test_ordinary_text_is_no_hit(line: str) -> None:
    assert hits("tox.ini", [line]) == []


@pytest.mark.parametrize(
    "line",
    [
        "addopts = -x",
        "  filterwarnings: error",
        "xfail_strict=true",
        "usefixtures = db",
        "required_plugins = pytest-x",
        "pythonpath = src",
        "empty_parameter_set_mark = xfail",
        "minversion = 8",
    ],
)
def test_settings_that_decide_failures_are_one_hit(line: str) -> None:
    assert hits("setup.cfg", [line]) == [(0, RULES)]


@pytest.mark.parametrize(
    "line", ["run --junitxml=out.xml", "run --junit-prefix=x", "junit_family = xunit1", "JUNIT_XML"]
)
def test_junit_report_changes_are_one_hit(line: str) -> None:
    assert hits("pytest.ini", [line]) == [(0, JUNIT)]


def test_one_line_gets_every_kind_it_shows_in_a_fixed_order() -> None:
    line = "addopts = --deselect x --junitxml=r.xml"
    assert hits("pytest.ini", ["", line]) == [(1, OPTIONS), (1, RULES), (1, JUNIT)]


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("a.js", "it.skip('x')"),
        ("a.jsx", "describe.only('x')"),
        ("a.mjs", "test.todo('x')"),
        ("a.cjs", "context.skip()"),
        ("A.TS", "suite.only()"),
        ("a.tsx", "specify.skip()"),
        ("a.mts", "xit('x', f)"),
        ("a.cts", "fdescribe ('x')"),
        ("a.ts", "xtest('x')"),
        ("a.ts", "fcontext('x')"),
        ("a.js", "process.exit (0)"),
        ("a_test.go", "t.Skip()"),
        ("a_test.go", "t.SkipNow()"),
        ("a_test.go", "t.Skipf('x')"),
        ("main.go", "os.Exit(0)"),
        ("lib.rs", "#[ignore]"),
        ("lib.rs", '#[ignore = "slow"]'),
        ("lib.rs", "std::process::exit(0)"),
        ("lib.rs", "process::abort()"),
        ("ATest.java", "@Disabled"),
        ("ATest.kt", "@Ignore"),
        ("build.kts", "System.exit(1)"),
        ("A.scala", "@Ignore"),
        ("a_spec.rb", "  skip 'later'"),
        ("a_spec.rb", "pending"),
        ("a_spec.rb", "xit 'does'"),
        ("a_spec.rb", "xdescribe 'x'"),
    ],
)
def test_another_frameworks_skips_are_a_hit_in_its_own_files(path: str, line: str) -> None:
    assert hits(path, [line]) == [(0, OTHER)]


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("a.py", "it.skip('x')"),
        ("a.go", "it.skip('x')"),
        ("a.js", "t.Skip()"),
        ("a.js", "quit.skip()"),
        ("a.js", "exit('x')"),
        ("a.jsonl", "it.skip('x')"),
        ("a.rs", "@Disabled"),
        ("a.java", "#[ignore]"),
        ("a.rb", "do_skip"),
        ("a.rb", "x = skip"),
        ("a.go", "t.Skipped()"),
    ],
)
def test_a_skip_of_another_framework_counts_only_in_its_own_files(path: str, line: str) -> None:
    assert hits(path, [line]) == []


@pytest.mark.parametrize(
    "char", ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2069"]
)
def test_bidirectional_controls_are_a_hidden_text_hit(char: str) -> None:
    assert list(hidden_text_hits(["a", f"x = 1{char}"])) == [(1, HIDDEN)]


@pytest.mark.parametrize("char", ["\u2029", "\u202f", "\u2065", "\u206a", "\u200b"])
def test_neighbouring_characters_are_no_hidden_text_hit(char: str) -> None:
    assert list(hidden_text_hits([f"x = 1{char}"])) == []


BINARY = bytes(range(256)) * 4
"""Bytes with NULs: not text."""


def test_a_base64_binary_of_256_characters_is_a_hit_and_of_255_is_not() -> None:
    run = base64.b64encode(BINARY).decode()
    assert list(hidden_text_hits(["x", f"data = '{run[:256]}'"])) == [(1, BLOB)]
    assert list(hidden_text_hits([f"data = '{run[:255]}'"])) == []


def test_a_hex_binary_is_a_hit() -> None:
    assert list(hidden_text_hits([BINARY[:300].hex()])) == [(0, BLOB)]


def test_one_line_can_be_hidden_text_and_a_blob() -> None:
    run = base64.b64encode(BINARY).decode()
    assert list(hidden_text_hits(["\u202e" + run])) == [(0, HIDDEN), (0, BLOB)]


def test_encoded_text_is_no_blob_hit() -> None:
    text = ("The quick brown fox jumps over the lazy dog, 0123456789 times. " * 20).encode()
    assert list(hidden_text_hits([base64.b64encode(text).decode(), text.hex()])) == []


def binary_run(run: str) -> bool:
    return textcode._binary_run(run)


TEXT = b"The quick brown fox jumps over the lazy dog at 12:34, 5678 times!?"
"""66 bytes of text (base64 without padding): its hex has 16 digits, its base64 over 24."""


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize(
    ("run", "binary"),
    [
        # hex
        (BINARY[:256].hex(), True),
        (TEXT.hex(), False),
        ((TEXT * 100).hex()[:4094] + "00", True),  # the NUL is inside the first 4096 digits
        ((TEXT * 100).hex()[:4096] + "00", False),  # ... and here just past them
        ((BINARY * 4).hex()[:4098], True),
        (BINARY[:256].hex()[:-1], False),  # odd: read as base64, with fewer than 24 characters
        (BINARY[:256].hex() + "g0", False),  # not all hex: read as base64, too few characters
        ("00" + "0123456789ab" * 10, True),  # 12 different digits
        ("00" + "0123456789a" * 10 + "0", False),  # 11
        ("0123456789ABCDEF" * 10, True),  # no NUL, but not UTF-8 from its fifth byte
        # base64
        ("ABCDEFGHIJKLMNOPQRSTUVWX" * 4, True),  # 24 different characters, NULs inside
        ("ABCDEFGHIJKLMNOPQRSTUVW" * 4, False),  # 23
        (b64(TEXT), False),
        (b64(TEXT * 80), False),
        (b64(TEXT + bytes(1)), True),
        (b64(TEXT[:-2] + b"\xff"), False),  # a character cut at the end
        (b64(TEXT[:-1] + b"\xffabc"), False),  # 4 bytes from the end: still a cut character
        (b64(TEXT[:-2] + b"\xffabcd"), True),  # 5 bytes from the end
        (b64(TEXT) + "X" * 12, True),  # the X run decodes to `]u\xd7` four times
        (b64(TEXT)[:-2] + "=", False),  # missing padding is restored
        (b64(BINARY)[:265], True),  # 265 characters: the last one is dropped
        ("ABCDEFGHIJKLMNOPQRSTUVWXY===", False),  # 25 data characters: not base64
    ],
)
def test_a_run_is_binary_when_its_start_decodes_to_non_text(run: str, binary: bool) -> None:
    assert binary_run(run) is binary
