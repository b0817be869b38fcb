"""Git's delta format: every instruction, and every bound it must not cross."""

from __future__ import annotations

import pytest

from frognano.policy.gate.gitbinary import MAX_BINARY_SIZE, apply_delta, check_delta


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def delta(source_size: int, result_size: int, ops: bytes) -> bytes:
    return varint(source_size) + varint(result_size) + ops


def test_copies_and_inserts() -> None:
    source = b"0123456789"
    # copy 4 bytes from offset 2, insert "ab", copy 1 byte from offset 0 (offset byte omitted)
    ops = b"\x91\x02\x04" + b"\x02ab" + b"\x90\x01"
    assert apply_delta(source, delta(10, 7, ops)) == b"2345ab0"
    check_delta(delta(10, 7, ops))


def test_multi_byte_offsets_sizes_and_headers() -> None:
    source = bytes(range(256)) * 300  # 76800 bytes: sizes need three varint bytes
    ops = b"\xb3" + (0x1170).to_bytes(2, "little") + (0x012C).to_bytes(2, "little")
    assert apply_delta(source, delta(len(source), 300, ops)) == source[0x1170 : 0x1170 + 300]


def test_a_copy_of_size_zero_copies_64_kib() -> None:
    source = bytes(range(256)) * 256
    assert apply_delta(source, delta(len(source), 0x10000, b"\x80")) == source


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "ends inside its source size"),
        (b"\x80", "ends inside its source size"),
        (b"\x03", "ends inside its result size"),
        (b"\xff" * 6 + b"\x01", "source size is too large"),
        (delta(3, MAX_BINARY_SIZE + 1, b""), "over the size limit"),
        (delta(3, 1, b"\x00"), "opcode 0 is reserved"),
        (delta(3, 2, b"\x05ab"), "ends inside inserted data"),
        (delta(3, 2, b"\x91\x00"), "ends inside a copy instruction"),
        (delta(3, 2, b"\x91\x02\x02"), "reads past the 3-byte original"),
        (delta(3, 2, b"\x91\x00\x01\x02ab"), "produces more than its declared 2 bytes"),
        (delta(3, 4, b"\x91\x00\x02"), "produces 2 bytes, not the declared 4"),
        (delta(3, 0x10000, b"\x80"), "reads past"),
    ],
)
def test_malformed_deltas_are_refused(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_delta(data)
    with pytest.raises(ValueError, match=message):
        apply_delta(b"abc", data)


def test_the_source_must_have_the_declared_size() -> None:
    with pytest.raises(ValueError, match="for a 4-byte original, but the base has 3 bytes"):
        apply_delta(b"abc", delta(4, 1, b"\x01x"))
