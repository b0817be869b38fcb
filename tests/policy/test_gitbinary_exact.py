"""Binary patch sections and deltas: the complete message of every refusal, and the exact limits."""

from __future__ import annotations

import base64
import hashlib
import re
import tracemalloc
import zlib

import pytest

from frognano.policy.gate.gitbinary import (
    MAX_BINARY_SIZE,
    MAX_INFLATED_TOTAL,
    BinaryPatch,
    apply_delta,
    check_delta,
    parse_binary_patch,
)
from tests.policy.test_diff_malformed import block
from tests.policy.test_gitbinary import delta, varint

# Incompressible bytes: their zlib stream is longer than they are.
NOISE = b"".join(hashlib.sha256(b"%d" % number).digest() for number in range(7))[:200]


def section(*blocks: bytes) -> list[bytes]:
    """The lines of a `GIT binary patch` section (line 1) and its blocks (from line 2)."""
    return (b"GIT binary patch\n" + b"".join(blocks)).split(b"\n")[:-1]


def data_lines(deflated: bytes, sizes: list[int]) -> bytes:
    """`deflated` as base85 data lines of the given byte counts (git uses 52 but the last)."""
    out = b""
    for size in sizes:
        chunk, deflated = deflated[:size], deflated[size:]
        length = size + (ord("A") - 1 if size <= 26 else ord("a") - 27)
        out += bytes([length]) + base64.b85encode(chunk, pad=True) + b"\n"
    assert not deflated
    return out


def exact(message: str) -> str:
    """A `match` pattern for exactly `message`."""
    return f"^{re.escape(message)}$"


def refusal(lines: list[bytes], budget: int = MAX_INFLATED_TOTAL) -> str:
    """The message of the ValueError that parsing the section at line 2 of `lines` raises."""
    with pytest.raises(ValueError, match=r"^line \d+: ") as raised:
        parse_binary_patch(lines, 1, budget)
    return str(raised.value)


ABC = block(b"literal", b"abc")  # "literal 3", one data line, a blank line
AB = block(b"literal", b"ab")
[ABC_DATA] = ABC.split(b"\n")[1:2]
LIMIT = MAX_BINARY_SIZE  # 104857600

# (id, lines, the complete message); line 1 is "GIT binary patch", line 2 the first block's header
SECTIONS: list[tuple[str, list[bytes], str]] = [
    ("nothing after the marker", section(),
     "line 2: 'GIT binary patch' without a literal or delta block"),
    ("no block after the marker", section(b"literal\n"),
     "line 2: 'GIT binary patch' without a literal or delta block"),
    ("no reverse block", section(ABC),
     "line 5: the binary patch lacks its reverse literal or delta block"),
    ("text instead of a reverse block", section(ABC, b"diff --git a/f b/f\n"),
     "line 5: the binary patch lacks its reverse literal or delta block"),
    ("block over the size limit", section(b"literal %d\n" % (LIMIT + 1)),
     "line 2: a binary block of 104857601 bytes is larger than the 100 MiB limit"),
    ("reverse block over the size limit", section(ABC, b"delta %d\n" % (LIMIT + 1)),
     "line 5: a binary block of 104857601 bytes is larger than the 100 MiB limit"),
    ("block of exactly the size limit", section(block(b"literal", b"abc", size=LIMIT)),
     "line 2: the binary data inflates to 3 bytes, not the declared 104857600"),
    ("cut off after its data", section(b"literal 3\n" + ABC_DATA + b"\n"),
     "line 4: the binary patch is cut off before its blank line"),
    ("cut off after more data", section(b"literal 3\n" + ABC_DATA + b"\n" + ABC_DATA + b"\n"),
     "line 5: the binary patch is cut off before its blank line"),
    ("a header where the blank line belongs",
     section(b"literal 3\n" + ABC_DATA + b"\n" + ABC_DATA + b"\nliteral 0\n"),
     "line 5: expected a blank line ending the binary block"),
    ("no data", section(b"literal 0\n\n"), "line 2: a binary block without data"),
    ("length character before A",
     section(b"literal 3\n" + ABC_DATA + b"\n@" + ABC_DATA[1:] + b"\n\n"),
     "line 4: a binary data line must start with a length character A-Z or a-z"),
    ("length character between Z and a",
     section(b"literal 3\n" + ABC_DATA + b"\n`" + ABC_DATA[1:] + b"\n\n"),
     "line 4: a binary data line must start with a length character A-Z or a-z"),
    ("length character after z", section(b"literal 3\n{" + ABC_DATA[1:] + b"\n\n"),
     "line 3: a binary data line must start with a length character A-Z or a-z"),
    ("length too long for the line", section(b"literal 3\nv" + b"0" * 65 + b"\n\n"),
     "line 3: the length character says 48 bytes, which takes 60 base85 characters, but the "
     "line has 65"),
    ("length of 2 on a long line", section(b"literal 3\nB" + b"0" * 10 + b"\n\n"),
     "line 3: the length character says 2 bytes, which takes 5 base85 characters, but the line "
     "has 10"),
    ("not base85", section(b"literal 3\n" + ABC_DATA + b'\nC00"00\n\n'),
     "line 4: '\"' is not a base85 character"),
    ("not zlib", section(block(b"literal", b"abc", deflated=b"nonsense")),
     "line 2: the binary data is not valid zlib data (Error -3 while decompressing data: "
     "incorrect header check)"),
    ("truncated zlib", section(block(b"literal", NOISE, deflated=zlib.compress(NOISE)[:-5])),
     "line 2: the binary data is a truncated zlib stream"),
    ("bytes after zlib", section(block(b"literal", b"abc", deflated=zlib.compress(b"abc") + b"x")),
     "line 2: bytes after the end of the binary data's zlib stream"),
    ("inflates to more", section(block(b"literal", b"abcd", size=3)),
     "line 2: the binary data inflates to more than 3 bytes"),
    ("inflates to less", section(block(b"literal", b"abc", size=4)),
     "line 2: the binary data inflates to 3 bytes, not the declared 4"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("lines", "message"), [case[1:] for case in SECTIONS], ids=[c[0] for c in SECTIONS]
)
def test_section_refusal_names_the_line_and_why(lines: list[bytes], message: str) -> None:
    assert refusal(lines) == message


def test_both_blocks_share_the_budget_exactly() -> None:
    lines = section(ABC, AB)
    forward, after, inflated = parse_binary_patch(lines, 1, 5)
    assert (forward, after, inflated) == (BinaryPatch("literal", 3, b"abc"), 7, 5)
    assert refusal(lines, 4) == "line 5: the diff's binary blocks add up to more than 256 MiB"
    assert refusal(lines, 2) == "line 2: the diff's binary blocks add up to more than 256 MiB"


def test_lines_of_every_length_character_decode() -> None:
    deflated = zlib.compress(NOISE)
    sizes = [1, 26, 27, 52]
    sizes += [52] * ((len(deflated) - sum(sizes)) // 52)
    sizes.append(len(deflated) - sum(sizes))
    forward = b"literal %d\n" % len(NOISE) + data_lines(deflated, sizes) + b"\n"
    assert [line[:1] for line in forward.split(b"\n")[1:5]] == [b"A", b"Z", b"a", b"z"]
    patch, _, _ = parse_binary_patch(section(forward, AB), 1)
    assert patch == BinaryPatch("literal", len(NOISE), NOISE)


# A data line of 5 groups: "0|NsC" and "20000" are in range, and so is "|NsC0" (2**32 - 1), but
# "|NsC1" is 2**32. Windows that straddle groups ("|NsC2") or longer groups would be over.
GROUPS = b"T0|NsC20000|NsC0|NsC100000"


def test_an_out_of_range_base85_group_is_named() -> None:
    message = refusal(section(b"literal 3\n" + ABC_DATA + b"\n" + GROUPS + b"\n\n"))
    assert message.startswith("line ")
    assert message.endswith(": base85 group '|NsC1' is out of range")


def test_an_out_of_range_group_is_named_on_its_own_line() -> None:
    # The line number moves with the data line the group is on.
    one = refusal(section(b"literal 3\n" + ABC_DATA + b"\n" + GROUPS + b"\n\n"))
    two = refusal(section(b"literal 3\n" + ABC_DATA + b"\n" + ABC_DATA + b"\n" + GROUPS + b"\n\n"))
    assert int(two.split(":")[0].removeprefix("line ")) == (
        int(one.split(":")[0].removeprefix("line ")) + 1
    )


def test_an_out_of_range_group_names_its_data_line() -> None:
    message = refusal(section(b"literal 3\n" + ABC_DATA + b"\n" + GROUPS + b"\n\n"))
    assert message == "line 4: base85 group '|NsC1' is out of range"


def test_a_malformed_delta_names_its_block_header() -> None:
    forward = block(b"delta", b"\x04\x03\x00")
    assert refusal(section(forward, AB)) == (
        "line 2: malformed binary delta: delta opcode 0 is reserved"
    )


def test_a_malformed_delta_says_why() -> None:
    message = refusal(section(AB, block(b"delta", b"\x04\x03\x00")))
    assert message.startswith("line ")
    assert message.endswith(": malformed binary delta: delta opcode 0 is reserved")


def test_a_small_block_never_inflates_a_bomb() -> None:
    # 4 MiB of zeros deflate to 4 kB; a block declaring 10 bytes must stop inflating at 11.
    bomb = block(b"literal", b"", size=10, deflated=zlib.compress(bytes(4 << 20), 9))
    tracemalloc.start()
    try:
        message = refusal(section(bomb, AB))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert message == "line 2: the binary data inflates to more than 10 bytes"
    assert peak < 1 << 20


# (id, delta, the complete message, from check_delta and from apply_delta to b"abc")
DELTAS: list[tuple[str, bytes, str]] = [
    ("empty", b"", "the delta ends inside its source size"),
    ("cut in the result size", b"\x03\x81", "the delta ends inside its result size"),
    ("source size of 7 bytes", b"\x80" * 6 + b"\x01", "the delta's source size is too large"),
    ("result size of 7 bytes", b"\x03" + b"\x80" * 6 + b"\x01",
     "the delta's result size is too large"),
    ("result over the limit", delta(3, MAX_BINARY_SIZE + 1, b""),
     "the delta's result of 104857601 bytes is over the size limit"),
    ("result of exactly the limit", delta(3, MAX_BINARY_SIZE, b""),
     "the delta produces 0 bytes, not the declared 104857600"),
    ("opcode 0", delta(3, 1, b"\x00"), "delta opcode 0 is reserved"),
    ("cut in inserted data", delta(3, 2, b"\x05ab"), "the delta ends inside inserted data"),
    ("cut in a copy", delta(3, 2, b"\x91\x00"), "the delta ends inside a copy instruction"),
    ("copy past the end", delta(3, 2, b"\x91\x02\x02"),
     "a copy of 2 bytes at offset 2 reads past the 3-byte original"),
    ("produces more", delta(3, 2, b"\x91\x00\x01\x02ab"),
     "the delta produces more than its declared 2 bytes"),
    ("produces less", delta(3, 4, b"\x91\x00\x02"),
     "the delta produces 2 bytes, not the declared 4"),
]  # fmt: skip


@pytest.mark.parametrize(("data", "message"), [c[1:] for c in DELTAS], ids=[c[0] for c in DELTAS])
def test_delta_refusal_says_why(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=exact(message)):
        check_delta(data)
    with pytest.raises(ValueError, match=exact(message)):
        apply_delta(b"abc", data)


def test_a_six_byte_size_is_the_longest_read() -> None:
    # 2**35 needs six varint bytes: read, then refused only against the real base.
    huge = b"\x80" * 5 + b"\x01" + varint(0)
    check_delta(huge)
    message = "the delta is for a 34359738368-byte original, but the base has 3 bytes"
    with pytest.raises(ValueError, match=exact(message)):
        apply_delta(b"abc", huge)


def test_checking_a_delta_builds_no_result() -> None:
    inserts = (b"\x7f" + bytes(127)) * 2048  # 254 KiB of inserted bytes
    data = delta(0, 127 * 2048, inserts)
    tracemalloc.start()
    try:
        check_delta(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 16


def test_inserts_and_copies_build_the_result() -> None:
    ops = b"\x03xyz" + b"\x91\x01\x02"
    assert apply_delta(b"abc", delta(3, 5, ops)) == b"xyzbc"
    check_delta(delta(3, 5, ops))
