"""Git's C-style quoting of the paths in a diff's headers, undone strictly."""

from __future__ import annotations

import re

_OCTAL = re.compile(rb"[0-3][0-7]{2}")
_QUOTED_BY_GIT = re.compile(rb'[\x00-\x1f\x7f"\\]')  # what git always quotes in a path
_ESCAPES = {ord(k): v for k, v in zip('abtnvfr"\\', b'\a\b\t\n\v\f\r"\\', strict=True)}


def header_path(line: bytes, number: int) -> str:
    """The path of a `diff --git a/P b/P` header (both sides are equal without renames)."""
    rest = line[len(b"diff --git ") :]
    if rest.startswith(b'"'):
        first, after = _unquote(rest, number)
        if not after.startswith(b' "'):
            raise ValueError(f"line {number}: malformed diff header {_show(line)}")
        second, tail = _unquote(after[1:], number)
        if tail:
            raise ValueError(f"line {number}: malformed diff header {_show(line)}")
    else:
        half = (len(rest) - 1) // 2
        if len(rest) % 2 == 0 or rest[half : half + 1] != b" ":
            raise ValueError(f"line {number}: cannot read the paths of {_show(line)}")
        first, second = _unquoted(rest[:half], number), _unquoted(rest[half + 1 :], number)
    if not (first.startswith(b"a/") and second.startswith(b"b/")) or first[2:] != second[2:]:
        raise ValueError(
            f"line {number}: the diff header must name one path as a/P b/P: {_show(line)}"
        )
    return _decode_path(first[2:], number)


def side_path(raw: bytes, prefix: bytes, number: int) -> str | None:
    """The path of a `---`/`+++` line (None for /dev/null)."""
    if raw == b"/dev/null":
        return None
    if raw.startswith(b'"'):
        value, tail = _unquote(raw, number)
    else:
        value = _unquoted(raw.removesuffix(b"\t"), number)
        tail = raw[len(value) :]
    # git ends the line with a tab when the name has a space (for GNU patch), and only then.
    if tail != (b"\t" if b" " in value else b""):
        raise ValueError(
            f"line {number}: a path on a '---' or '+++' line must be followed by a tab "
            f"exactly when it has a space: {_show(raw)}"
        )
    if not value.startswith(prefix):
        raise ValueError(f"line {number}: the path must start with {prefix.decode()!r}")
    return _decode_path(value[len(prefix) :], number)


def _unquoted(raw: bytes, number: int) -> bytes:
    """A path git printed without quotes: it cannot hold what git always quotes."""
    if _QUOTED_BY_GIT.search(raw):
        raise ValueError(
            f"line {number}: a control character, quote or backslash in an unquoted path "
            f"(git would have quoted it): {_show(raw)}"
        )
    return raw


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
            escaped = text[index] if index < len(text) else -1
            if escaped in _ESCAPES:
                out.append(_ESCAPES[escaped])
            elif _OCTAL.fullmatch(text[index : index + 3]):
                out.append(int(text[index : index + 3], 8))
                index += 2
            elif escaped != -1:
                raise ValueError(f"line {number}: unknown escape in a quoted path: {_show(text)}")
        else:
            out.append(byte)
        index += 1
    raise ValueError(f"line {number}: unterminated quoted path: {_show(text)}")


def _decode_path(raw: bytes, number: int) -> str:
    if not raw:
        raise ValueError(f"line {number}: empty path")
    if b"\0" in raw:
        raise ValueError(f"line {number}: a NUL byte in a path")
    return raw.decode("utf-8", "surrogateescape")


def _show(line: bytes) -> str:
    """A short, printable rendering of a line for error messages."""
    text = line[:80].decode("utf-8", "replace")
    return repr(text + ("..." if len(line) > 80 else ""))
