"""A strict parser of the agent's patch: `git diff --binary --no-renames` output, as bytes."""

# The gate trusts only what this parser can account for, and `frognano.run.apply` builds the
# published tree from what it returns, so anything it does not understand (a rename or copy
# header, a hunk shorter than its header says, stray text between files, a header git never
# prints) is a `ValueError` naming the line, never a silent skip or another exception.

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from frognano.policy.gate.gitbinary import MAX_INFLATED_TOTAL, BinaryPatch, parse_binary_patch
from frognano.policy.gate.gitquote import header_path, side_path

__all__ = ["NO_NEWLINE", "BinaryPatch", "FileChange", "Hunk", "HunkLine", "Status", "parse_diff"]

Status = Literal["added", "modified", "deleted"]
Marker = Literal[" ", "-", "+"]

NO_NEWLINE = b"\\ No newline at end of file"
_HUNK = re.compile(
    rb"@@ -(\d{1,10})(?:,(\d{1,10}))? \+(\d{1,10})(?:,(\d{1,10}))? @@(?: .*)?", re.DOTALL
)
_INDEX = re.compile(rb"index ([0-9a-f]{4,64})\.\.([0-9a-f]{4,64})(?: (.*))?", re.DOTALL)
_ZERO = re.compile(r"0+")
_MODE = re.compile(rb"[0-7]{6}")
_MODE_HEADERS = (
    (b"new file mode ", "new file"),
    (b"deleted file mode ", "deleted"),
    (b"old mode ", "old"),
    (b"new mode ", "new"),
)
# Extended headers git may print that a --no-renames diff never has: refuse rather than guess.
_UNSUPPORTED = (b"rename from ", b"rename to ", b"copy from ", b"copy to ", b"similarity index ",
                b"dissimilarity index ")  # fmt: skip
# The extended headers of each kind of change, in the order git prints them.
_LAYOUTS: dict[tuple[str, ...], Status] = {
    ("index",): "modified",
    ("old", "new", "index"): "modified",
    ("old", "new"): "modified",  # a mode change alone
    ("new file", "index"): "added",
    ("deleted", "index"): "deleted",
}


@dataclass(frozen=True, slots=True)
class HunkLine:
    """One line of a hunk."""

    marker: Marker
    """`" "` context, `-` removed, `+` added."""
    text: bytes
    """The line's bytes without the marker and the newline (a `\\r` stays: it is content)."""


@dataclass(frozen=True)
class Hunk:
    """One `@@ -old_start,old_count +new_start,new_count @@` hunk, as git numbers it: a side
    with no lines names the line before the change (0 for the start of the file)."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: tuple[HunkLine, ...]
    old_missing_newline: bool = False
    """The last old-side line of this hunk ends the old file without a newline."""
    new_missing_newline: bool = False
    """The last new-side line of this hunk ends the new file without a newline."""


@dataclass(frozen=True)
class FileChange:
    """One file of the patch."""

    path: str
    """New path (the old one for deletions); bytes that are not UTF-8 are kept as surrogate
    escapes (`os.fsdecode` style), so the path round-trips to the exact bytes git printed."""
    status: Status
    old_mode: str | None
    """`100644`, `100755`, `120000` (symlink) or `160000` (submodule); None for additions."""
    new_mode: str | None
    """None for deletions."""
    binary: bool
    added_lines: tuple[str, ...]
    """Text of the `+` lines without the `+`, decoded as UTF-8 with errors replaced."""
    removed_lines: int
    added_count: int
    added_line_numbers: tuple[int, ...] = ()
    """1-based line numbers of `added_lines` in the new file, in the same order."""
    hunks: tuple[Hunk, ...] = ()
    binary_patch: BinaryPatch | None = None
    """The forward block of a `GIT binary patch`; None for text and for `Binary files ...
    differ` (a diff made without --binary, which carries no data)."""
    old_id: str | None = None
    """Blob id of the old file from the `index OLD..NEW` line (full with --binary on binary
    files, abbreviated otherwise; zeros for additions); None for a mode change alone."""
    new_id: str | None = None
    """Blob id of the new file (zeros for deletions); None for a mode change alone."""


@dataclass
class _Headers:
    kinds: list[str] = field(default_factory=list)
    modes: dict[str, str] = field(default_factory=dict)
    old_id: str | None = None
    new_id: str | None = None
    index_mode: str | None = None


@dataclass
class _Body:
    next_index: int
    kind: Literal["none", "text", "binary", "no data"] = "none"
    old_label: str | None = None
    """Path on the `---` line; None for /dev/null."""
    new_label: str | None = None
    hunks: list[Hunk] = field(default_factory=list)
    binary_patch: BinaryPatch | None = None
    added: list[str] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    removed: int = 0
    old_ended: bool = False  # a "\ No newline" marker ended that side
    new_ended: bool = False


def parse_diff(diff: bytes) -> list[FileChange]:
    """The file changes of `diff`, in the order git printed them.

    A type change (e.g. a file replaced by a symlink) comes out as git prints it: a deletion
    and an addition of the same path. Raises ValueError, naming the line, on malformed input.
    """
    lines = diff.split(b"\n")
    if lines[-1] != b"":
        raise ValueError(f"line {len(lines)}: the diff does not end with a newline (cut off?)")
    lines.pop()
    changes: list[FileChange] = []
    index = 0
    budget = [MAX_INFLATED_TOTAL]  # what the diff's binary blocks may still inflate to
    while index < len(lines):
        if not lines[index].startswith(b"diff --git "):
            raise ValueError(
                f"line {index + 1}: expected a 'diff --git' header, got {_show(lines[index])}"
            )
        change, index = _parse_file(lines, index, budget)
        changes.append(change)
    return changes


def _parse_file(lines: list[bytes], start: int, budget: list[int]) -> tuple[FileChange, int]:
    """One file's section starting at its `diff --git` line; returns it and the next index."""
    path = header_path(lines[start], start + 1)
    headers, index = _parse_headers(lines, start + 1)
    body = _parse_body(lines, index, budget)
    if body.next_index < len(lines) and not lines[body.next_index].startswith(b"diff --git "):
        raise ValueError(
            f"line {body.next_index + 1}: unexpected line {_show(lines[body.next_index])}"
        )
    status, old_mode, new_mode = _check_file(path, headers, body, start + 1)
    change = FileChange(
        path=path,
        status=status,
        old_mode=old_mode,
        new_mode=new_mode,
        binary=body.kind in ("binary", "no data"),
        added_lines=tuple(body.added),
        removed_lines=body.removed,
        added_count=len(body.added),
        added_line_numbers=tuple(body.numbers),
        hunks=tuple(body.hunks),
        binary_patch=body.binary_patch,
        old_id=headers.old_id,
        new_id=headers.new_id,
    )
    return change, body.next_index


def _parse_headers(lines: list[bytes], index: int) -> tuple[_Headers, int]:
    """The extended header lines after `diff --git`, and the index after them."""
    headers = _Headers()
    while index < len(lines):
        line = lines[index]
        found = next((item for item in _MODE_HEADERS if line.startswith(item[0])), None)
        if found:
            kind = found[1]
            headers.modes[kind] = _mode(line[len(found[0]) :], index)
        elif line.startswith(b"index "):
            kind = "index"
            match = _INDEX.fullmatch(line)
            if not match:
                raise ValueError(f"line {index + 1}: malformed index line {_show(line)}")
            headers.old_id, headers.new_id = match.group(1).decode(), match.group(2).decode()
            if match.group(3) is not None:  # the mode of a file whose mode did not change
                headers.index_mode = _mode(match.group(3), index)
        elif line.startswith(_UNSUPPORTED):
            raise ValueError(
                f"line {index + 1}: rename and copy headers are not supported "
                f"(the diff must be made with --no-renames): {_show(line)}"
            )
        else:
            break
        if kind in headers.kinds:
            raise ValueError(f"line {index + 1}: repeated header {_show(line)}")
        headers.kinds.append(kind)
        index += 1
    return headers, index


def _check_file(
    path: str, headers: _Headers, body: _Body, number: int
) -> tuple[Status, str | None, str | None]:
    """Check that headers and body make one change git could print; its status and modes."""
    kinds = headers.kinds
    status: Status = (
        "added" if "new file" in kinds else "deleted" if "deleted" in kinds else "modified"
    )
    if body.kind == "text":
        _check_labels(path, status, body, number)
    if ("old" in kinds) != ("new" in kinds):
        raise ValueError(f"line {number}: 'old mode' and 'new mode' must come together")
    if tuple(kinds) not in _LAYOUTS:
        shown = ", ".join(f"'{kind}'" for kind in kinds) or "none"
        raise ValueError(
            f"line {number}: git never prints these extended headers together: {shown} "
            "(a change needs an index line, or old and new mode alone)"
        )
    if (headers.index_mode is not None) != (tuple(kinds) == ("index",)):
        raise ValueError(
            f"line {number}: the index line must carry the mode exactly when the mode is "
            "unchanged and the file neither added nor deleted"
        )
    old_id, new_id = headers.old_id, headers.new_id
    if old_id is None or new_id is None:  # old and new mode alone: nothing else may change
        if body.kind != "none":
            raise ValueError(f"line {number}: a content change without an index line")
    elif body.kind == "none" and status == "modified":
        raise ValueError(f"line {number}: an index line, but no hunk or binary patch")
    elif (status == "added") != bool(_ZERO.fullmatch(old_id)) or (
        (status == "deleted") != bool(_ZERO.fullmatch(new_id))
    ):
        raise ValueError(
            f"line {number}: the index line's ids must be zeros exactly on the side where "
            "the file does not exist"
        )
    elif old_id == new_id:
        raise ValueError(f"line {number}: the index line names no change ({old_id})")
    if tuple(kinds) == ("index",):
        return status, headers.index_mode, headers.index_mode
    modes = headers.modes
    if status == "modified" and modes["old"] == modes["new"]:
        raise ValueError(f"line {number}: 'old mode' and 'new mode' are the same")
    return status, modes.get("old", modes.get("deleted")), modes.get("new", modes.get("new file"))


def _check_labels(path: str, status: Status, body: _Body, number: int) -> None:
    """The `---` and `+++` paths agree with the header and the status."""
    if status == "added" and body.old_label is not None:
        raise ValueError(f"line {number}: a new file must come from /dev/null")
    if status == "deleted" and body.new_label is not None:
        raise ValueError(f"line {number}: a deleted file must go to /dev/null")
    if (status != "added" and body.old_label is None) or (
        status != "deleted" and body.new_label is None
    ):
        raise ValueError(f"line {number}: /dev/null on a side where the file exists")
    for side in (body.old_label, body.new_label):
        if side is not None and side != path:
            raise ValueError(
                f"line {number}: the header names {path!r} but the hunk names "
                f"{side!r} (renames are not supported)"
            )


def _parse_body(lines: list[bytes], index: int, budget: list[int]) -> _Body:
    """A binary patch, or the `---`/`+++` lines and hunks, or nothing (a mode change alone,
    an empty new or deleted file)."""
    line = lines[index] if index < len(lines) else b""
    if line == b"GIT binary patch":
        patch, after, inflated = parse_binary_patch(lines, index + 1, budget[0])
        budget[0] -= inflated
        return _Body(after, "binary", binary_patch=patch)
    if line.startswith(b"Binary files ") and line.endswith(b" differ"):
        return _Body(index + 1, "no data")
    if not line.startswith(b"--- "):
        return _Body(index)
    body = _Body(index, "text", old_label=side_path(line[4:], b"a/", index + 1))
    index += 1
    if index >= len(lines) or not lines[index].startswith(b"+++ "):
        raise ValueError(f"line {index + 1}: expected a '+++' line after '---'")
    body.new_label = side_path(lines[index][4:], b"b/", index + 1)
    index += 1
    if index >= len(lines) or not lines[index].startswith(b"@@ "):
        raise ValueError(f"line {index + 1}: expected a hunk header after '+++'")
    old_end = shift = 0  # where the previous hunk ended, and how far it moved the new side
    while index < len(lines) and lines[index].startswith(b"@@ "):
        if body.old_ended or body.new_ended:
            raise ValueError(f"line {index + 1}: a hunk after '\\ No newline at end of file'")
        header = index + 1
        hunk, index = _parse_hunk(lines, index, body)
        old_at = hunk.old_start - 1 if hunk.old_count else hunk.old_start
        new_at = hunk.new_start - 1 if hunk.new_count else hunk.new_start
        if (hunk.old_count and not hunk.old_start) or (hunk.new_count and not hunk.new_start):
            raise ValueError(f"line {header}: a hunk with lines cannot start at line 0")
        if old_at < old_end:
            raise ValueError(f"line {header}: the hunk overlaps or precedes the one before it")
        if new_at != old_at + shift:
            raise ValueError(
                f"line {header}: the hunk's new start disagrees with its old start and the "
                "hunks before it"
            )
        old_end = old_at + hunk.old_count
        shift += hunk.new_count - hunk.old_count
        body.hunks.append(hunk)
    body.next_index = index
    return body


def _parse_hunk(lines: list[bytes], start: int, body: _Body) -> tuple[Hunk, int]:
    """Consume one hunk (and its `\\ No newline` markers); returns it and the next index."""
    match = _HUNK.fullmatch(lines[start])
    if not match:
        raise ValueError(f"line {start + 1}: malformed hunk header {_show(lines[start])}")
    old_start, new_start = int(match.group(1)), int(match.group(3))
    old_count = int(match.group(2)) if match.group(2) is not None else 1
    new_count = int(match.group(4)) if match.group(4) is not None else 1
    old_left, new_left = old_count, new_count
    # An empty side's start names the line before it (git: "@@ -0,0 +1 @@"), else its first.
    new_line = new_start if new_count else new_start + 1
    items: list[HunkLine] = []
    old_missing = new_missing = False
    index = start + 1
    while old_left > 0 or new_left > 0:
        if index >= len(lines):
            raise ValueError(
                f"line {start + 1}: the hunk ends early ({old_left} old and {new_left} new "
                "lines missing)"
            )
        line = lines[index]
        marker = line[:1]
        if marker == b"+":
            item = HunkLine("+", line[1:])
            new_left -= 1
            body.added.append(item.text.decode("utf-8", "replace"))
            body.numbers.append(new_line)
            new_line += 1
        elif marker == b"-":
            item = HunkLine("-", line[1:])
            old_left -= 1
            body.removed += 1
        elif marker in (b" ", b""):  # some tools strip the space of an empty context line
            item = HunkLine(" ", line[1:])
            old_left -= 1
            new_left -= 1
            new_line += 1
        elif line == NO_NEWLINE:
            raise ValueError(
                f"line {index + 1}: '\\ No newline at end of file' must follow a line of a hunk"
            )
        else:
            raise ValueError(f"line {index + 1}: unexpected line in a hunk: {_show(line)}")
        if (item.marker != "+" and body.old_ended) or (item.marker != "-" and body.new_ended):
            raise ValueError(f"line {index + 1}: a line after '\\ No newline at end of file'")
        if old_left < 0 or new_left < 0:
            raise ValueError(f"line {start + 1}: the hunk has more lines than its header says")
        items.append(item)
        index += 1
        if index < len(lines) and lines[index][:1] == b"\\":
            if lines[index] != NO_NEWLINE:
                shown = _show(lines[index])
                raise ValueError(f"line {index + 1}: unexpected line in a hunk: {shown}")
            body.old_ended = old_missing = old_missing or item.marker != "+"
            body.new_ended = new_missing = new_missing or item.marker != "-"
            index += 1
    hunk = Hunk(old_start, old_count, new_start, new_count, tuple(items), old_missing, new_missing)
    return hunk, index


def _mode(raw: bytes, index: int) -> str:
    if not _MODE.fullmatch(raw):
        raise ValueError(f"line {index + 1}: malformed file mode {_show(raw)}")
    return raw.decode()


def _show(line: bytes) -> str:
    """A short, printable rendering of a line for error messages."""
    text = line[:80].decode("utf-8", "replace")
    return repr(text + ("..." if len(line) > 80 else ""))
