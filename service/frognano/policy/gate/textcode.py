"""Test-weakening text where no Python syntax tree applies: pytest options, foreign skips."""

from __future__ import annotations

import base64
import binascii
import re
import string
from collections.abc import Iterator, Sequence

_OPTIONS_LABEL = ("pytest options or settings that leave tests out (--deselect, -p no:, "
                  "--ignore, --collect-only, testpaths, ...)")  # fmt: skip
OPTIONS = re.compile(
    r"(?:^|[\s'\"=\[,(])(?:--deselect\b|--ignore(?:-glob)?\b|--collect-only\b|--co\b"
    r"|--continue-on-collection-errors\b|--noconftest\b|--override-ini\b|-o\s*['\"]?\w+="
    r"|-p\s*['\"]?no:|no:[\w.-]+\b|-[km]\s*['\"]?not\b)"
    r"|\bPYTEST_(?:ADDOPTS|PLUGINS|DISABLE_PLUGIN_AUTOLOAD)\b"
)
"""pytest command-line options, also inside Python strings (`pytest.main(["--deselect", ...])`)."""
_SETTINGS = re.compile(
    r"^\s*(?:testpaths|python_files|python_classes|python_functions|norecursedirs|collect_ignore"
    r"|confcutdir)\s*[=:]"
)
_JUNIT = re.compile(r"--junit|junit[-_](?:xml|family|suite_name|logging)", re.IGNORECASE)
_JUNIT_LABEL = "a change to the JUnit XML report that verification reads"
_OTHER_LABEL = ("a test skip, focus or early exit of another language's test framework "
                "(it.skip, describe.only, t.Skip, os.Exit, #[ignore], @Disabled, ...)")  # fmt: skip
_JAVASCRIPT = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
_OTHER: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (_JAVASCRIPT, re.compile(r"\b(?:it|describe|test|context|suite|specify)\.(?:skip|only|todo)\b"
                             r"|\b[xf](?:it|describe|test|context)\s*\(|\bprocess\.exit\s*\(")),
    ((".go",), re.compile(r"\bt\.Skip(?:Now|f)?\s*\(|\bos\.Exit\s*\(")),
    ((".rs",), re.compile(r"#\[ignore\b|\bprocess::(?:exit|abort)\s*\(")),
    ((".java", ".kt", ".kts", ".scala"), re.compile(r"@(?:Disabled|Ignore)\b|\bSystem\.exit\s*\(")),
    ((".rb",), re.compile(r"^\s*(?:skip|pending|xit|xdescribe)\b")),
)  # fmt: skip


# Settings that decide what counts as a failure (warnings as errors, strict xfail and markers).
_RULES = re.compile(
    r"^\s*(?:addopts|filterwarnings|xfail_strict|usefixtures|required_plugins|pythonpath"
    r"|empty_parameter_set_mark|minversion)\s*[=:]"
)
_RULES_LABEL = ("a change to pytest's settings (addopts, filterwarnings, xfail_strict, ...), "
                "which decide what counts as a failure")  # fmt: skip
# Long base64 or hex runs of bytes that are not text: a binary shipped as text.
_BLOB = re.compile(r"[A-Za-z0-9+/]{256,}={0,2}|(?:[0-9a-fA-F]{2}){256,}")
_BLOB_LABEL = (
    "an encoded binary (a long base64 or hex run of non-text bytes), which cannot be reviewed"
)


def option_label() -> str:
    """The label of pytest options that leave tests out."""
    return _OPTIONS_LABEL


def text_hits(path: str, lines: Sequence[str]) -> Iterator[tuple[int, str]]:
    """(line index, label) of test-weakening text in the added `lines` of a non-Python file."""
    lowered = path.lower()
    others = [pattern for suffixes, pattern in _OTHER if lowered.endswith(suffixes)]
    for index, line in enumerate(lines):
        if OPTIONS.search(line) or _SETTINGS.search(line):
            yield index, _OPTIONS_LABEL
        if _RULES.search(line):
            yield index, _RULES_LABEL
        if _JUNIT.search(line):
            yield index, _JUNIT_LABEL
        if any(pattern.search(line) for pattern in others):
            yield index, _OTHER_LABEL


_HIDDEN = re.compile("[\u202a-\u202e\u2066-\u2069]")
_HIDDEN_LABEL = ("invisible bidirectional-text control characters, which make code read "
                 "differently from how it runs")  # fmt: skip


def hidden_text_hits(lines: Sequence[str]) -> Iterator[tuple[int, str]]:
    """(line index, label) of lines whose text shows other than it is ("Trojan Source") or hides
    a binary in base64 or hex; for every kind of file."""
    for index, line in enumerate(lines):
        if _HIDDEN.search(line):
            yield index, _HIDDEN_LABEL
        if any(_binary_run(match.group(0)) for match in _BLOB.finditer(line)):
            yield index, _BLOB_LABEL


def _binary_run(run: str) -> bool:
    """Whether the start of a base64 or hex run decodes to bytes that are not text."""
    head = run[:4096]
    hexadecimal = len(head) % 2 == 0 and all(char in string.hexdigits for char in head)
    if len(set(head)) < (12 if hexadecimal else 24):
        return False  # `xxxx...` or `0000...`: padding or a pattern, not an encoded file
    try:
        if hexadecimal:
            data = bytes.fromhex(head)
        else:
            data = base64.b64decode(head[: len(head) - len(head) % 4].rstrip("=") + "==")
    except (ValueError, binascii.Error):
        return False
    if b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(data) - 4  # not merely a character cut at the end
    return False
