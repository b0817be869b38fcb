"""A strict parser of the agent's patch: `git diff --binary --no-renames` output, as bytes.

The gate trusts only what this parser can account for, so anything it does not understand
(a rename or copy header, a hunk shorter than its header says, stray text between files)
is a `ValueError`, never a silent skip.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Status = Literal["added", "modified", "deleted"]

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_INDEX = re.compile(rb"^index [0-9a-f]+\.\.[0-9a-f]+(?: ([0-7]{6}))?$")
_MODE = re.compile(rb"^[0-7]{6}$")
_BINARY_BLOCK = re.compile(rb"^(?:literal|delta) \d+$")
_ESCAPES = {
    ord("a"): 0x07,
    ord("b"): 0x08,
    ord("t"): 0x09,
    ord("n"): 0x0A,
    ord("v"): 0x0B,
    ord("f"): 0x0C,
    ord("r"): 0x0D,
    ord('"'): 0x22,
    ord("\\"): 0x5C,
}
# Extended headers git may print that a --no-renames diff never has: refuse rather than guess.
_UNSUPPORTED = (b"rename from ", b"rename to ", b"copy from ", b"copy to ", b"similarity index ",
                b"dissimilarity index ")  # fmt: skip


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


def parse_diff(diff: bytes) -> list[FileChange]:
    """The file changes of `diff`, in the order git printed them.

    A type change (e.g. a file replaced by a symlink) comes out as git prints it: a deletion
    and an addition of the same path. Raises ValueError, naming the line, on malformed input.
    """
    lines = diff.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    changes: list[FileChange] = []
    index = 0
    while index < len(lines):
        if not lines[index].startswith(b"diff --git "):
            raise ValueError(
                f"line {index + 1}: expected a 'diff --git' header, got {_show(lines[index])}"
            )
        change, index = _parse_file(lines, index)
        changes.append(change)
    return changes


def _parse_file(lines: list[bytes], start: int) -> tuple[FileChange, int]:
    """One file's section starting at its `diff --git` line; returns it and the next index."""
    header_path = _header_path(lines[start], start + 1)
    status, old_mode, new_mode, index = _parse_headers(lines, start + 1)
    added: list[str] = []
    numbers: list[int] = []
    body = _parse_body(lines, index, added, numbers)
    index = body.next_index
    if index < len(lines) and not lines[index].startswith(b"diff --git "):
        raise ValueError(f"line {index + 1}: unexpected line {_show(lines[index])}")

    if status == "added":
        old_mode = None
        if body.old_path is not None:
            raise ValueError(f"line {start + 1}: a new file must come from /dev/null")
    elif status == "deleted":
        new_mode = None
        if body.new_path is not None:
            raise ValueError(f"line {start + 1}: a deleted file must go to /dev/null")
    elif (old_mode is None) != (new_mode is None):
        raise ValueError(f"line {start + 1}: 'old mode' and 'new mode' must come together")
    for side in (body.old_path, body.new_path):
        if side is not None and side != header_path:
            raise ValueError(
                f"line {start + 1}: the header names {header_path!r} but the hunk names "
                f"{side!r} (renames are not supported)"
            )
    change = FileChange(
        path=header_path,
        status=status,
        old_mode=old_mode,
        new_mode=new_mode,
        binary=body.binary,
        added_lines=tuple(added),
        removed_lines=body.removed,
        added_count=body.added_count,
        added_line_numbers=tuple(numbers),
    )
    return change, index


def _parse_headers(lines: list[bytes], index: int) -> tuple[Status, str | None, str | None, int]:
    """The extended header lines: status, old and new mode, and the index after them."""
    status: Status = "modified"
    old_mode: str | None = None
    new_mode: str | None = None
    while index < len(lines):
        line = lines[index]
        if line.startswith(b"new file mode "):
            status, new_mode = "added", _mode(line[14:], index)
        elif line.startswith(b"deleted file mode "):
            status, old_mode = "deleted", _mode(line[18:], index)
        elif line.startswith(b"old mode "):
            old_mode = _mode(line[9:], index)
        elif line.startswith(b"new mode "):
            new_mode = _mode(line[9:], index)
        elif line.startswith(b"index "):
            match = _INDEX.match(line)
            if not match:
                raise ValueError(f"line {index + 1}: malformed index line {_show(line)}")
            if match.group(1):  # the mode of a file whose mode did not change
                old_mode = new_mode = match.group(1).decode()
        elif line.startswith(_UNSUPPORTED):
            raise ValueError(
                f"line {index + 1}: rename and copy headers are not supported "
                f"(the diff must be made with --no-renames): {_show(line)}"
            )
        else:
            break
        index += 1
    return status, old_mode, new_mode, index


@dataclass
class _Body:
    next_index: int
    binary: bool = False
    old_path: str | None = None
    new_path: str | None = None
    added_count: int = 0
    removed: int = 0


def _parse_body(lines: list[bytes], index: int, added: list[str], numbers: list[int]) -> _Body:
    """A binary marker or the `---`/`+++` lines and hunks (or nothing: a mode change or an
    empty new file); appends the text of `+` lines to `added`."""
    line = lines[index] if index < len(lines) else b""
    if line == b"GIT binary patch":
        return _Body(_skip_binary_patch(lines, index + 1), binary=True)
    if line.startswith(b"Binary files ") and line.endswith(b" differ"):
        return _Body(index + 1, binary=True)
    if not line.startswith(b"--- "):
        return _Body(index)
    body = _Body(index, old_path=_side_path(line[4:], b"a/", index))
    index += 1
    if index >= len(lines) or not lines[index].startswith(b"+++ "):
        raise ValueError(f"line {index + 1}: expected a '+++' line after '---'")
    body.new_path = _side_path(lines[index][4:], b"b/", index)
    index += 1
    if index >= len(lines) or not lines[index].startswith(b"@@ "):
        raise ValueError(f"line {index + 1}: expected a hunk header after '+++'")
    while index < len(lines) and lines[index].startswith(b"@@ "):
        index, hunk_added, hunk_removed = _parse_hunk(lines, index, added, numbers)
        body.added_count += hunk_added
        body.removed += hunk_removed
    body.next_index = index
    return body


def _parse_hunk(
    lines: list[bytes], start: int, added: list[str], numbers: list[int]
) -> tuple[int, int, int]:
    """Consume one hunk; returns the next index and its added and removed line counts."""
    match = _HUNK.match(lines[start])
    if not match:
        raise ValueError(f"line {start + 1}: malformed hunk header {_show(lines[start])}")
    old_left = int(match.group(2)) if match.group(2) is not None else 1
    new_left = int(match.group(4)) if match.group(4) is not None else 1
    # An empty side's start names the line before it (git: "@@ -0,0 +1 @@"), else its first.
    new_line = int(match.group(3)) if new_left else int(match.group(3)) + 1
    hunk_added = hunk_removed = 0
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
            new_left -= 1
            hunk_added += 1
            added.append(line[1:].decode("utf-8", "replace"))
            numbers.append(new_line)
            new_line += 1
        elif marker == b"-":
            old_left -= 1
            hunk_removed += 1
        elif marker in (b" ", b""):  # some tools strip the space of an empty context line
            old_left -= 1
            new_left -= 1
            new_line += 1
        elif marker != b"\\":  # "\ No newline at end of file"
            raise ValueError(f"line {index + 1}: unexpected line in a hunk: {_show(line)}")
        if old_left < 0 or new_left < 0:
            raise ValueError(f"line {start + 1}: the hunk has more lines than its header says")
        index += 1
    while index < len(lines) and lines[index].startswith(b"\\"):
        index += 1
    return index, hunk_added, hunk_removed


def _skip_binary_patch(lines: list[bytes], index: int) -> int:
    """Skip the base85 blocks of a `GIT binary patch` (forward, then optional reverse)."""
    blocks = 0
    while index < len(lines) and _BINARY_BLOCK.match(lines[index]):
        index += 1
        while index < len(lines) and lines[index]:
            if not lines[index][:1].isalpha():
                raise ValueError(f"line {index + 1}: malformed binary patch data")
            index += 1
        if index < len(lines):
            index += 1  # the blank line ending the block
        blocks += 1
    if blocks == 0:
        raise ValueError(f"line {index + 1}: 'GIT binary patch' without a literal or delta block")
    return index


def _header_path(line: bytes, number: int) -> str:
    """The path of a `diff --git a/P b/P` header (both sides are equal without renames)."""
    rest = line[len(b"diff --git ") :]
    if rest.startswith(b'"'):
        first, after = _unquote(rest, number)
        if not after.startswith(b" "):
            raise ValueError(f"line {number}: malformed diff header {_show(line)}")
        second_raw = after[1:]
        if second_raw.startswith(b'"'):
            second, tail = _unquote(second_raw, number)
            if tail:
                raise ValueError(f"line {number}: malformed diff header {_show(line)}")
        else:
            second = second_raw
    else:
        half = (len(rest) - 1) // 2
        if len(rest) % 2 == 0 or rest[half : half + 1] != b" ":
            raise ValueError(f"line {number}: cannot read the paths of {_show(line)}")
        first, second = rest[:half], rest[half + 1 :]
    if not (first.startswith(b"a/") and second.startswith(b"b/")) or first[2:] != second[2:]:
        raise ValueError(
            f"line {number}: the diff header must name one path as a/P b/P: {_show(line)}"
        )
    return _decode_path(first[2:], number)


def _side_path(raw: bytes, prefix: bytes, number: int) -> str | None:
    """The path of a `---`/`+++` line (None for /dev/null)."""
    if raw == b"/dev/null":
        return None
    if raw.startswith(b'"'):
        value, tail = _unquote(raw, number + 1)
        if tail not in (b"", b"\t"):  # git adds the tab after a quoted name with a space too
            raise ValueError(f"line {number + 1}: text after a quoted path: {_show(raw)}")
    else:
        # git ends the line with a tab when the name has a space (for GNU patch); a name that
        # really ends with a tab would have been quoted.
        value = raw.removesuffix(b"\t")
    if not value.startswith(prefix):
        raise ValueError(f"line {number + 1}: the path must start with {prefix.decode()!r}")
    return _decode_path(value[len(prefix) :], number + 1)


def _unquote(text: bytes, number: int) -> tuple[bytes, bytes]:
    """Undo git's C-style quoting of the string starting at text[0] == '"'; returns the raw
    bytes and what follows the closing quote."""
    out = bytearray()
    index = 1
    while index < len(text):
        byte = text[index]
        if byte == ord('"'):
            return bytes(out), text[index + 1 :]
        if byte == ord("\\"):
            index += 1
            if index >= len(text):
                break
            escaped = text[index]
            if escaped in _ESCAPES:
                out.append(_ESCAPES[escaped])
            elif text[index : index + 3].isdigit() and all(
                ord("0") <= digit <= ord("7") for digit in text[index : index + 3]
            ):
                out.append(int(text[index : index + 3], 8) & 0xFF)
                index += 2
            else:
                raise ValueError(f"line {number}: unknown escape in a quoted path: {_show(text)}")
        else:
            out.append(byte)
        index += 1
    raise ValueError(f"line {number}: unterminated quoted path: {_show(text)}")


def _decode_path(raw: bytes, number: int) -> str:
    if not raw:
        raise ValueError(f"line {number}: empty path")
    return raw.decode("utf-8", "surrogateescape")


def _mode(raw: bytes, index: int) -> str:
    if not _MODE.match(raw):
        raise ValueError(f"line {index + 1}: malformed file mode {_show(raw)}")
    return raw.decode()


def _show(line: bytes) -> str:
    """A short, printable rendering of a line for error messages."""
    text = line[:80].decode("utf-8", "replace")
    return repr(text + ("..." if len(line) > 80 else ""))
