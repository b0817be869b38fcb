"""Git's binary patches: base85 lines of zlib data, literal or delta, read strictly."""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

MAX_BINARY_SIZE = 100 * 2**20
"""Largest file a binary patch may produce (GitHub refuses bigger blobs anyway); it also bounds
what a small, highly compressed block can inflate to."""
MAX_INFLATED_TOTAL = 256 * 2**20
"""What all blocks of one diff, forward and reverse, may inflate to together: zlib inflates up
to about 1000 times, so a 12 MiB diff could otherwise ask for gigabytes."""
_BLOCK = re.compile(rb"(literal|delta) (0|[1-9][0-9]{0,9})")
_DIGITS = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
_NOT_BASE85 = re.compile(rb"[^0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]")
_COPY_OFFSET = ((0x01, 0), (0x02, 8), (0x04, 16), (0x08, 24))
_COPY_SIZE = ((0x10, 0), (0x20, 8), (0x40, 16))


@dataclass(frozen=True)
class BinaryPatch:
    """The forward block of a `GIT binary patch` section, inflated."""

    kind: Literal["literal", "delta"]
    """`literal`: `data` is the new file; `delta`: `data` turns the old file into the new one."""
    size: int
    """The size the block declares, which `data` has."""
    data: bytes = field(repr=False)


def parse_binary_patch(
    lines: Sequence[bytes], index: int, budget: int = MAX_INFLATED_TOTAL
) -> tuple[BinaryPatch, int, int]:
    """The forward block of the section whose `GIT binary patch` line is `lines[index - 1]`,
    the index after the section, and the bytes both blocks inflated to (at most `budget`).
    The reverse block git prints after the forward one is decoded to check it, then dropped.
    Raises ValueError naming the line."""
    if index >= len(lines) or not _BLOCK.fullmatch(lines[index]):
        raise ValueError(f"line {index + 1}: 'GIT binary patch' without a literal or delta block")
    forward, index = _block(lines, index, budget)
    if index >= len(lines) or not _BLOCK.fullmatch(lines[index]):
        raise ValueError(
            f"line {index + 1}: the binary patch lacks its reverse literal or delta block"
        )
    reverse, index = _block(lines, index, budget - forward.size)
    return forward, index, forward.size + reverse.size


def _block(lines: Sequence[bytes], index: int, budget: int) -> tuple[BinaryPatch, int]:
    """One `literal N`/`delta N` block, its data lines and the blank line ending it."""
    header = lines[index]
    match = _BLOCK.fullmatch(header)
    assert match is not None  # noqa: S101 - the caller matched it
    kind: Literal["literal", "delta"] = "literal" if match.group(1) == b"literal" else "delta"
    size = int(match.group(2))
    if size > MAX_BINARY_SIZE:
        raise ValueError(
            f"line {index + 1}: a binary block of {size} bytes is larger than the "
            f"{MAX_BINARY_SIZE // 2**20} MiB limit"
        )
    if size > budget:  # checked before inflating, so a hostile diff costs no time either
        raise ValueError(
            f"line {index + 1}: the diff's binary blocks add up to more than "
            f"{MAX_INFLATED_TOTAL // 2**20} MiB"
        )
    first = index = index + 1
    encoded: list[bytes] = []
    lengths: list[int] = []
    while index < len(lines) and lines[index]:
        encoded.append(_data_line(lines[index], index + 1))
        lengths.append(_line_length(lines[index][0]))
        index += 1
    if index >= len(lines):
        raise ValueError(f"line {index + 1}: the binary patch is cut off before its blank line")
    if not encoded:
        raise ValueError(f"line {first}: a binary block without data")
    deflated = _decode_lines(encoded, lengths, first)
    data = _inflate(deflated, size, first)
    if kind == "delta":
        try:
            check_delta(data)
        except ValueError as exc:
            raise ValueError(f"line {first}: malformed binary delta: {exc}") from None
    return BinaryPatch(kind, size, data), index + 1


def _data_line(line: bytes, number: int) -> bytes:
    """The base85 characters of one data line, checked against its length character."""
    if b" " in line:  # base85 has no space: this is a header where a blank line belongs
        raise ValueError(f"line {number}: expected a blank line ending the binary block")
    length = _line_length(line[0])
    if not length:
        raise ValueError(
            f"line {number}: a binary data line must start with a length character A-Z or a-z"
        )
    chars = line[1:]
    if len(chars) != 5 * ((length + 3) // 4):
        raise ValueError(
            f"line {number}: the length character says {length} bytes, which takes "
            f"{5 * ((length + 3) // 4)} base85 characters, but the line has {len(chars)}"
        )
    bad = _NOT_BASE85.search(chars)
    if bad:
        raise ValueError(f"line {number}: {chr(chars[bad.start()])!r} is not a base85 character")
    return chars


def _line_length(char: int) -> int:
    """Bytes on a data line: A-Z are 1-26, a-z 27-52; 0 for anything else."""
    if ord("A") <= char <= ord("Z"):
        return char - ord("A") + 1
    if ord("a") <= char <= ord("z"):
        return char - ord("a") + 27
    return 0


def _decode_lines(encoded: list[bytes], lengths: list[int], first: int) -> bytes:
    """Decode all lines at once (fast), then keep each line's declared bytes."""
    try:
        decoded = base64.b85decode(b"".join(encoded))
    except ValueError:  # a group over 2**32 - 1: find its line to name it
        for offset, chars in enumerate(encoded):
            for start in range(0, len(chars), 5):
                value = 0
                for char in chars[start : start + 5]:
                    value = value * 85 + _DIGITS.index(char)
                if value >= 2**32:
                    raise ValueError(
                        f"line {first + offset + 1}: base85 group "
                        f"{chars[start : start + 5].decode()!r} is out of range"
                    ) from None
        raise ValueError(f"line {first}: undecodable base85 data") from None
    parts: list[bytes] = []
    position = 0
    for length in lengths:
        parts.append(decoded[position : position + length])
        position += 4 * ((length + 3) // 4)
    return b"".join(parts)


def _inflate(deflated: bytes, size: int, first: int) -> bytes:
    """zlib-inflate to exactly `size` bytes; never more than size + 1 are produced."""
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(deflated, size + 1)
    except zlib.error as exc:
        raise ValueError(f"line {first}: the binary data is not valid zlib data ({exc})") from None
    if len(data) > size:
        raise ValueError(f"line {first}: the binary data inflates to more than {size} bytes")
    if not inflater.eof:
        raise ValueError(f"line {first}: the binary data is a truncated zlib stream")
    if inflater.unused_data or inflater.unconsumed_tail:
        raise ValueError(f"line {first}: bytes after the end of the binary data's zlib stream")
    if len(data) != size:
        raise ValueError(
            f"line {first}: the binary data inflates to {len(data)} bytes, not the declared {size}"
        )
    return data


def check_delta(delta: bytes) -> None:
    """Raise ValueError unless `delta` is a well-formed git delta (bounds checked against the
    source size it declares)."""
    _run_delta(delta, None)


def apply_delta(source: bytes, delta: bytes) -> bytes:
    """The result of git delta `delta` applied to `source`; ValueError if they do not fit."""
    result = _run_delta(delta, source)
    assert result is not None  # noqa: S101 - a source was given
    return result


def _run_delta(delta: bytes, source: bytes | None) -> bytes | None:
    """Walk git's delta format: source and result sizes (varints), then copy and insert ops.
    With `source`, build the result; without, only check every bound."""
    source_size, position = _varint(delta, 0, "source size")
    result_size, position = _varint(delta, position, "result size")
    if source is not None and source_size != len(source):
        raise ValueError(
            f"the delta is for a {source_size}-byte original, but the base has {len(source)} bytes"
        )
    if result_size > MAX_BINARY_SIZE:
        raise ValueError(f"the delta's result of {result_size} bytes is over the size limit")
    out = bytearray() if source is not None else None
    produced = 0
    while position < len(delta):
        command = delta[position]
        position += 1
        if command & 0x80:  # copy from the source
            offset, size, position = _copy(delta, position, command)
            if offset + size > source_size:
                raise ValueError(
                    f"a copy of {size} bytes at offset {offset} reads past the "
                    f"{source_size}-byte original"
                )
            chunk_size = size
            if out is not None and source is not None:
                out += source[offset : offset + size]
        elif command:  # insert the next `command` bytes
            if position + command > len(delta):
                raise ValueError("the delta ends inside inserted data")
            chunk_size = command
            if out is not None:
                out += delta[position : position + command]
            position += command
        else:
            raise ValueError("delta opcode 0 is reserved")
        produced += chunk_size
        if produced > result_size:
            raise ValueError(f"the delta produces more than its declared {result_size} bytes")
    if produced != result_size:
        raise ValueError(f"the delta produces {produced} bytes, not the declared {result_size}")
    return bytes(out) if out is not None else None


def _copy(delta: bytes, position: int, command: int) -> tuple[int, int, int]:
    """Offset and size of a copy instruction (the bits of `command` say which of their bytes
    follow), and the position after it."""
    values = [0, 0]
    for slot, fields in enumerate((_COPY_OFFSET, _COPY_SIZE)):
        for bit, shift in fields:
            if command & bit:
                if position >= len(delta):
                    raise ValueError("the delta ends inside a copy instruction")
                values[slot] |= delta[position] << shift
                position += 1
    return values[0], values[1] or 0x10000, position  # git: a copy of size 0 means 64 KiB


def _varint(delta: bytes, position: int, what: str) -> tuple[int, int]:
    """A size of the delta header: 7 bits a byte, least significant first."""
    value = shift = 0
    while True:
        if position >= len(delta):
            raise ValueError(f"the delta ends inside its {what}")
        byte = delta[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, position
        if shift > 35:  # over 2**35 bytes: no real file, and no unbounded loop either
            raise ValueError(f"the delta's {what} is too large")
