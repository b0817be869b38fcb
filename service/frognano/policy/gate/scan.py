"""The gate's content scan: secrets and test-weakening code in each file, within a budget."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from frognano.policy.gate import secrets, textcode
from frognano.policy.gate.diff import FileChange
from frognano.policy.gate.findings import (
    SUBMODULE,
    SYMLINK,
    Finding,
    Severity,
    TreeFacts,
    count_lines,
    display,
)
from frognano.policy.gate.python import code as pycode
from frognano.policy.gate.python.rules import ENCODING, TAMPERING
from frognano.policy.models import GatePolicy

MAX_SCANNED_CHARS = 24_000_000
"""Characters scanned in all: the added text, plus the whole new text of each Python file, which
is parsed. A patch at the default limits fits (20 files of 1 MB, each of them Python); the worst
case takes minutes, not hours (docs/verification.md has the measurements). A patch past it is
blocked: what was not scanned cannot be published."""
MAX_SCANNED_LINES = 400_000
"""Lines scanned in all, so the per-line cost is bounded too."""
SHOWN_CHARS = 200
"""Longest line quoted in a finding."""
_MARGIN = 256  # quoted lines are cut this far past SHOWN_CHARS before redaction: secrets stay whole
_PYTHON_SUFFIXES = (".py", ".pyw")


def binary(change: FileChange, facts: TreeFacts) -> bool:
    """Whether the file's new bytes are not text: read from the bytes themselves, never from
    `.gitattributes` (which the patch could have written)."""
    if change.status == "deleted" or change.new_mode in (SYMLINK, SUBMODULE):
        return False
    data = facts.contents.get(change.path)
    if data is not None:
        return text_of(data) is None
    # Without the bytes: git's own marker, or what decoding the diff's lines gave away.
    return change.binary or any("\0" in line or "\ufffd" in line for line in change.added_lines)


def text_of(data: bytes) -> str | None:
    """`data` as text: None when it has a NUL byte or is not UTF-8."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass(frozen=True)
class _View:
    """The text of one file to scan."""

    lines: tuple[str, ...]
    """The added lines (every line, when git showed the text as binary)."""
    numbers: tuple[int, ...]
    """Their 1-based line numbers in the new file."""
    source: str | None
    """The whole new text, when known."""
    python: bool = False
    """Whether the file is Python (by name or `#!` line), to be read as a syntax tree."""


def _view(change: FileChange, facts: TreeFacts) -> _View | None:
    """What to scan of `change`; None for binary files, submodules and deletions."""
    if change.status == "deleted" or SUBMODULE in (change.old_mode, change.new_mode):
        return None
    lines, numbers = change.added_lines, change.added_line_numbers
    if change.new_mode == SYMLINK:
        return _View(lines, numbers, None)
    data = facts.contents.get(change.path)
    if data is None:
        if binary(change, facts):
            return None
        source = "\n".join(lines) + "\n" if change.status == "added" else None
        return _View(lines, numbers, source, _is_python(change.path, source or ""))
    text = text_of(data)
    if text is None:
        return None
    if change.binary:  # a base .gitattributes hid the text from the diff: scan all of it
        lines = tuple(text.removesuffix("\n").split("\n")) if text else ()
        numbers = tuple(range(1, len(lines) + 1))
    return _View(lines, numbers, text, _is_python(change.path, text))


def scan(changes: Sequence[FileChange], facts: TreeFacts, gate: GatePolicy) -> Iterator[Finding]:
    """Secrets and test-weakening code, within the scan budget."""
    chars_left, lines_left = MAX_SCANNED_CHARS, MAX_SCANNED_LINES
    unscanned: list[str] = []
    for change in changes:
        view = _view(change, facts)
        if view is None:
            continue
        cost = sum(map(len, view.lines)) + len(view.lines)
        cost += len(view.source) if view.python and view.source else 0
        if cost > chars_left or len(view.lines) > lines_left:
            unscanned.append(display(change.path))
            continue
        chars_left -= cost
        lines_left -= len(view.lines)
        yield from _scan_file(change.path, view, gate)
    if unscanned:
        listed = ", ".join(unscanned[:3]) + (", ..." if len(unscanned) > 3 else "")
        yield Finding(
            "block",
            "scan_incomplete",
            f"the scan for secrets and test-weakening code would pass its budget "
            f"({MAX_SCANNED_CHARS} characters, {MAX_SCANNED_LINES} lines) with "
            f"{len(unscanned)} file(s) left ({listed}); a patch that was not scanned in full "
            "is not published, so narrow it",
        )


def _is_python(path: str, source: str) -> bool:
    if path.lower().endswith(_PYTHON_SUFFIXES):
        return True
    first = source.partition("\n")[0]
    return first.startswith("#!") and "python" in first


def _scan_file(path: str, view: _View, gate: GatePolicy) -> Iterator[Finding]:
    shown = display(path)
    index_of = {number: index for index, number in enumerate(view.numbers)}
    suspicious: list[tuple[int, str]] = []
    strings: list[secrets.BuiltString] = []
    if view.python:
        if view.source is None:  # the new text is unknown: what the diff shows, line by line
            analysis = pycode.analyse_added(view.lines, view.numbers)
        else:
            numbers = view.numbers or tuple(range(1, view.source.count("\n") + 2))
            analysis = pycode.analyse(view.source, numbers)
        if analysis.error is not None:
            error = secrets.redact(analysis.error)
            yield _not_analysed(path, f"it does not parse as Python: {error}")
        suspicious += [(index_of.get(hit.line, 0), hit.label) for hit in analysis.hits]
        strings += [
            secrets.BuiltString(index_of.get(string.line, 0), string.value, string.pieces)
            for string in analysis.strings
        ]
    else:
        suspicious += textcode.text_hits(path, view.lines)
    suspicious += textcode.hidden_text_hits(view.lines)

    hits = secrets.scan_file(path, view.lines, view.numbers, strings) if gate.secret_scan else []
    known = tuple(value for hit in hits for value in hit.redact)
    scrubbed = {hit.index for hit in hits if hit.scrub}

    def quote(index: int) -> str:
        line = view.lines[index] if index < len(view.lines) else ""
        return _shown_line(line, known, index in scrubbed)

    for kind, indexes in _grouped((hit.index, hit.kind) for hit in hits):
        heuristic = any(hit.heuristic for hit in hits if hit.kind == kind)
        severity: Severity = gate.high_entropy if heuristic else "block"
        advice = (
            "if it is a hash, a checksum or test data, set gate.high_entropy: warn for this "
            "repository (a `repos` rule); otherwise remove it, and rotate it if it is real"
            if heuristic
            else "remove it, and rotate it if it is real"
        )
        yield Finding(
            severity,
            "secret",
            f"{shown} adds what looks like a secret ({kind}, {count_lines(len(indexes))}); "
            + advice,
            path,
            quote(indexes[0]),
        )
    for label, indexes in _grouped(suspicious):
        tampering = _is_tampering(label)
        yield Finding(
            gate.tampering if tampering else gate.suspicious_patterns,
            "tampering" if tampering else "suspicious",
            f"{shown} adds {label} ({count_lines(len(indexes))}), which can make failing "
            "tests pass without a fix; "
            + (
                "a fix does not need it, so it is refused (gate.tampering)"
                if tampering and gate.tampering == "block"
                else "check that it is justified"
            ),
            path,
            quote(indexes[0]),
        )


def _is_tampering(label: str) -> bool:
    # The encoding label is formatted with the encoding's name: compare its fixed start.
    return label in TAMPERING or label.startswith(ENCODING.split("{", 1)[0])


def _grouped(pairs: Iterable[tuple[int, str]]) -> Iterator[tuple[str, list[int]]]:
    """(key, sorted distinct line indexes) per key, keys in order of their first line."""
    groups: dict[str, set[int]] = {}
    for index, key in pairs:
        groups.setdefault(key, set()).add(index)
    ordered = sorted(groups.items(), key=lambda item: (min(item[1]), item[0]))
    for key, indexes in ordered:
        yield key, sorted(indexes)


def _not_analysed(path: str, why: str) -> Finding:
    return Finding(
        "warn",
        "not_analysed",
        f"{display(path)} was not checked for test-weakening code because {why}; review it by hand",
        path,
    )


def _shown_line(line: str, known: Sequence[str] = (), scrub: bool = False) -> str:
    # Only the start is shown; the margin keeps any secret that reaches into it whole.
    text = secrets.redact(line.strip()[: SHOWN_CHARS + _MARGIN], known)
    if scrub:
        text = secrets.scrub(text)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."
