"""The diff parser on broken and hostile input: a ValueError naming the line, and nothing else."""

from __future__ import annotations

import base64
import random
import re
import zlib
from pathlib import Path

import pytest

from frognano.policy.gate.check import TreeFacts, run_gate
from frognano.policy.gate.diff import NO_NEWLINE, FileChange, parse_diff
from frognano.policy.models import GatePolicy
from frognano.run.apply import MemoryTree, PatchError, apply_diff, blob_id
from tests.policy.gitrepo import GitRepo

GOOD = b"diff --git a/f b/f\nindex 1111111..2222222 100644\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"
NL = NO_NEWLINE + b"\n"
DATA = bytes(range(256)) * 3


def block(
    kind: bytes, data: bytes, size: int | None = None, deflated: bytes | None = None
) -> bytes:
    """One block of a `GIT binary patch`, encoded as git encodes it."""
    deflated = zlib.compress(data) if deflated is None else deflated
    lines = []
    for start in range(0, len(deflated), 52):
        chunk = deflated[start : start + 52]
        length = len(chunk) + (ord("A") - 1 if len(chunk) <= 26 else ord("a") - 27)
        lines.append(bytes([length]) + base64.b85encode(chunk, pad=True))
    return b"%s %d\n" % (kind, len(data) if size is None else size) + b"\n".join(lines) + b"\n\n"


def binary(forward: bytes, reverse: bytes | None = None) -> bytes:
    reverse = block(b"literal", b"") if reverse is None else reverse
    return b"diff --git a/b b/b\nnew file mode 100644\nindex %s..%s\nGIT binary patch\n%s%s" % (
        b"0" * 40,
        blob_id(DATA).encode(),
        forward,
        reverse,
    )


BIN = binary(block(b"literal", DATA))
FORWARD = block(b"literal", DATA)
DELTA = b"diff --git a/b b/b\nindex %s..%s 100644\nGIT binary patch\n%s%s" % (
    blob_id(b"abc").encode(),
    blob_id(b"abcd").encode(),
    block(b"delta", b"\x03\x04\x91\x00\x03\x01d"),
    block(b"delta", b"\x04\x03\x91\x00\x03"),
)
TWO = GOOD.replace(
    b"@@ -1 +1 @@\n-a\n+b\n", b"@@ -1,2 +1,2 @@\n-a\n+b\n c\n@@ -10 +10 @@\n-x\n+y\n"
)


def quoted_header(path: bytes) -> bytes:
    return b'diff --git "a/%s" "b/%s"\nnew file mode 100644\nindex 0000000..e69de29\n' % (
        path,
        path,
    )


CASES: list[tuple[str, bytes, str]] = [
    # cut off
    ("after ---", GOOD[: GOOD.index(b"+++")], "expected a '+++' line after '---'"),
    ("after +++", GOOD[: GOOD.index(b"@@")], "expected a hunk header after '+++'"),
    ("mid-hunk", GOOD[: GOOD.index(b"+b")], "the hunk ends early"),
    ("mid-line", GOOD[:-1], "does not end with a newline"),
    ("mid binary block", BIN[: BIN.index(b"\n\n")] + b"\n", "cut off before its blank line"),
    ("after binary marker", BIN[: BIN.index(b"literal")], "without a literal or delta block"),
    ("no reverse block", binary(FORWARD, b""), "lacks its reverse literal or delta block"),
    ("a newline only", b"\n", "expected a 'diff --git' header"),
    # quoted paths
    ("unknown escape", quoted_header(b"\\q"), "unknown escape in a quoted path"),
    ("octal over 255", quoted_header(b"\\400"), "unknown escape in a quoted path"),
    ("short octal", quoted_header(b"\\12"), "unknown escape in a quoted path"),
    ("unterminated", b'diff --git "a/f b/f\n', "unterminated quoted path"),
    ("backslash at end", b'diff --git "a/f\\\n', "unterminated quoted path"),
    ("half quoted", b'diff --git "a/f" b/f\n', "malformed diff header"),
    ("text after quotes", b'diff --git "a/f" "b/f"x\n', "malformed diff header"),
    ("NUL in a path", quoted_header(b"\\000"), "a NUL byte in a path"),
    ("raw control", b"diff --git a/f\r b/f\r\n", "git would have quoted it"),
    ("raw backslash", GOOD.replace(b"a/f b/f", b"a/\\ b/\\"), "git would have quoted it"),
    ("empty path", b"diff --git a/ b/\n", "empty path"),
    # binary data
    ("non-base85", BIN.replace(FORWARD[12:15], FORWARD[12:13] + b'"' + FORWARD[14:15]),
     "is not a base85 character"),
    ("bad length char", BIN.replace(b"\nz", b"\n~"), "must start with a length character"),
    ("length disagrees", BIN.replace(b"\nz", b"\nv"), "the length character says 48 bytes"),
    ("length off by one", BIN.replace(b"\nz", b"\ny"), "not valid zlib data"),  # same groups
    ("invalid zlib", binary(block(b"literal", DATA, deflated=b"nonsense")), "not valid zlib"),
    ("truncated zlib", binary(block(b"literal", DATA, deflated=zlib.compress(DATA)[:-5])),
     "truncated zlib stream"),
    ("after zlib", binary(block(b"literal", DATA, deflated=zlib.compress(DATA) + b"x")),
     "bytes after the end of the binary data's zlib stream"),
    ("size too big", binary(block(b"literal", DATA, size=len(DATA) + 1)),
     f"inflates to {len(DATA)} bytes, not the declared {len(DATA) + 1}"),
    ("size too small", binary(block(b"literal", DATA, size=5)), "inflates to more than 5 bytes"),
    ("size over limit", binary(block(b"literal", DATA, size=9_999_999_999)),
     "larger than the 100 MiB limit"),
    ("missing blank line", BIN.replace(b"\n\nliteral 0", b"\nliteral 0"),
     "expected a blank line ending the binary block"),
    ("base85 overflow", BIN.replace(FORWARD[12:18], FORWARD[12:13] + b"~~~~~"), "is out of range"),
    ("no data", binary(b"literal 0\n\n"), "a binary block without data"),
    ("bad delta", DELTA.replace(block(b"delta", b"\x04\x03\x91\x00\x03"),
                                block(b"delta", b"\x04\x03\x00")), "malformed binary delta"),
    ("leading zero", BIN.replace(b"literal 768", b"literal 0768"), "without a literal or delta"),
    # prefixes and paths
    ("header prefixes", b"diff --git x/f y/f\n", "must name one path as a/P b/P"),
    ("--- prefix", GOOD.replace(b"--- a/f", b"--- x/f"), "the path must start with 'a/'"),
    ("+++ prefix", GOOD.replace(b"+++ b/f", b"+++ a/f"), "the path must start with 'b/'"),
    ("header paths differ", b"diff --git a/f b/g\n", "must name one path as a/P b/P"),
    ("hunk path differs", GOOD.replace(b"--- a/f", b"--- a/g"), "renames are not supported"),
    ("+++ path differs", GOOD.replace(b"+++ b/f", b"+++ b/g"), "renames are not supported"),
    ("no --- line", GOOD.replace(b"--- a/f\n", b""), "unexpected line '+++ b/f'"),
    ("no +++ line", GOOD.replace(b"+++ b/f\n", b""), "expected a '+++' line after '---'"),
    ("needless tab", GOOD.replace(b"--- a/f", b"--- a/f\t"), "followed by a tab exactly when"),
    ("missing tab", GOOD.replace(b"a/f", b"a/f f").replace(b"b/f", b"b/f f"),
     "followed by a tab exactly when"),
    ("odd header", b"diff --git a/f  b/f\n", "cannot read the paths"),
    # hunks
    ("more lines", GOOD.replace(b"@@ -1 +1 @@", b"@@ -1,0 +1 @@"), "more lines than its header"),
    ("fewer lines", GOOD.replace(b"@@ -1 +1 @@", b"@@ -1,2 +1 @@") + GOOD,
     "unexpected line in a hunk: 'diff --git a/f b/f'"),
    ("overlap", TWO.replace(b"@@ -10 +10 @@", b"@@ -2 +2 @@"), "overlaps or precedes"),
    ("new start", TWO.replace(b"@@ -10 +10 @@", b"@@ -10 +11 @@"), "new start disagrees"),
    ("line 0", GOOD.replace(b"@@ -1 +1 @@", b"@@ -0 +0 @@"), "cannot start at line 0"),
    ("header junk", GOOD.replace(b"@@ -1 +1 @@", b"@@ -1 +1 @@x"), "malformed hunk header"),
    ("header cut", GOOD.replace(b"@@ -1 +1 @@", b"@@ -1 +1,2 @"), "malformed hunk header"),
    ("huge number", GOOD.replace(b"@@ -1 +1", b"@@ -12345678901 +1"), "malformed hunk header"),
    ("bad marker", GOOD.replace(b"-a\n", b"*a\n"), "unexpected line in a hunk"),
    # stray text
    ("before the first file", b"hello\n" + GOOD, "expected a 'diff --git' header"),
    ("between files", GOOD + b"stray\n" + GOOD, "unexpected line 'stray'"),
    ("after the last hunk", GOOD + b"+extra\n", "unexpected line '+extra'"),
    ("blank line", GOOD + b"\n", "unexpected line ''"),
    # "\ No newline at end of file"
    ("marker first", GOOD.replace(b"-a\n", NL + b"-a\n"), "must follow a line of a hunk"),
    ("marker twice", GOOD.replace(b"-a\n", b"-a\n" + NL + NL), "must follow a line of a hunk"),
    ("line after marker", TWO.replace(b"-a\n+b\n c\n", b" c\n" + NL + b"-a\n+b\n"),
     "a line after '\\ No newline at end of file'"),
    ("hunk after marker", TWO.replace(b" c\n", b" c\n" + NL), "a hunk after '\\ No newline"),
    ("other backslash", GOOD + b"\\ something\n", "unexpected line in a hunk"),
    ("marker in headers", GOOD.replace(b"--- a/f", NL + b"--- a/f"), "unexpected line"),
    # extended headers
    ("rename", GOOD.replace(b"index", b"rename from f\nindex"), "rename and copy headers"),
    ("copy", GOOD.replace(b"index", b"copy to g\nindex"), "rename and copy headers"),
    ("similarity", GOOD.replace(b"index", b"similarity index 90%\nindex"), "rename and copy"),
    ("short mode", b"diff --git a/f b/f\nnew file mode 10064\n", "malformed file mode"),
    ("long mode", b"diff --git a/f b/f\nold mode 1006440\n", "malformed file mode"),
    ("spaced mode", b"diff --git a/f b/f\ndeleted file mode  100644\n", "malformed file mode"),
    ("non-octal mode", GOOD.replace(b" 100644", b" 100648"), "malformed file mode"),
    ("index hex", GOOD.replace(b"1111111", b"ABCDEFG"), "malformed index line"),
    ("repeated", GOOD.replace(b"index", b"old mode 100644\nold mode 100644\nindex"),
     "repeated header"),
    ("order", b"diff --git a/f b/f\nindex 1..2\nold mode 100644\nnew mode 100755\n",
     "malformed index line"),
    ("out of order", GOOD.replace(b"index 1111111..2222222 100644",
                                  b"index 1111111..2222222\nold mode 100644\nnew mode 100755"),
     "git never prints these extended headers together"),
    ("no headers", GOOD.replace(b"index 1111111..2222222 100644\n", b""), "headers together: none"),
    ("index mode on add", quoted_header(b"n").replace(b"e69de29", b"e69de29 100644"),
     "must carry the mode exactly"),
    ("no index mode", GOOD.replace(b" 100644", b""), "must carry the mode exactly"),
    ("ids on add", quoted_header(b"n").replace(b"0000000", b"1234567"), "must be zeros"),
    ("same ids", GOOD.replace(b"2222222", b"1111111"), "the index line names no change"),
    ("index alone", GOOD[: GOOD.index(b"---")], "an index line, but no hunk"),
    ("same modes", b"diff --git a/f b/f\nold mode 100644\nnew mode 100644\n", "are the same"),
    ("mode only with hunk", GOOD.replace(b"index 1111111..2222222 100644",
                                         b"old mode 100644\nnew mode 100755"),
     "a content change without an index line"),
    ("old mode alone", b"diff --git a/f b/f\nold mode 100644\n", "must come together"),
    ("add from a file", b"diff --git a/f b/f\nnew file mode 100644\nindex 0000000..1111111\n"
                        b"--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+x\n", "must come from /dev/null"),
    ("delete to a file", b"diff --git a/f b/f\ndeleted file mode 100644\nindex 1111111..0000000\n"
                         b"--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-x\n", "must go to /dev/null"),
    ("modify from nothing", GOOD.replace(b"--- a/f", b"--- /dev/null"), "/dev/null on a side"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("diff", "message"), [case[1:] for case in CASES], ids=[c[0] for c in CASES]
)
def test_malformed_input_raises_a_plain_value_error(diff: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as raised:
        parse_diff(diff)
    assert raised.type is ValueError
    assert re.match(r"line \d+: ", str(raised.value))


def test_binary_blocks_share_one_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # 100 MiB of zeros deflates to 100 kB, so a few such blocks could ask for gigabytes.
    monkeypatch.setattr("frognano.policy.gate.diff.MAX_INFLATED_TOTAL", len(DATA) * 2 + 10)
    parse_diff(BIN + BIN.replace(b"a/b b/b", b"a/c b/c"))
    third = 2 * BIN.count(b"\n") + BIN.split(b"\n").index(b"literal 768") + 1
    with pytest.raises(ValueError, match=f"line {third}: the diff's binary blocks add up to more"):
        parse_diff(BIN * 3)


def test_the_corpus_is_valid() -> None:
    for diff in (GOOD, BIN, DELTA, TWO):
        assert parse_diff(diff)
    assert parse_diff(b"") == []
    [delta] = parse_diff(DELTA)
    assert apply_diff([delta], MemoryTree({"b": ("100644", b"abc")}))[0].content == b"abcd"


def test_carriage_returns_in_hunks_are_content() -> None:
    [change] = parse_diff(GOOD.replace(b"-a\n+b\n", b"-a\r\n+b\r\n+\r\n").replace(b"+1 ", b"+1,2 "))
    assert [line.text for line in change.hunks[0].lines] == [b"a\r", b"b\r", b"\r"]


ESCAPES = [
    (b"\\a", b"\a"), (b"\\b", b"\b"), (b"\\t", b"\t"), (b"\\n", b"\n"), (b"\\v", b"\v"),
    (b"\\f", b"\f"), (b"\\r", b"\r"), (b'\\"', b'"'), (b"\\\\", b"\\"), (b"\\001", b"\x01"),
    (b"\\177", b"\x7f"), (b"\\303\\251", "é".encode()), (b"\\377\\376", b"\xff\xfe"),
    (b"\\011", b"\t"), (b"sp ace", b"sp ace"),
]  # fmt: skip


@pytest.mark.parametrize(("escaped", "raw"), ESCAPES)
def test_every_escape_round_trips(escaped: bytes, raw: bytes) -> None:
    [change] = parse_diff(quoted_header(b"x" + escaped + b"y"))
    assert change.path.encode("utf-8", "surrogateescape") == b"x" + raw + b"y"


def test_git_quotes_every_special_byte_and_the_parser_undoes_it(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path)
    repo.commit_base()
    names = [b"c" + raw for _, raw in ESCAPES if raw != b"\t" or _ == b"\\t"]
    for name in names:
        repo.write(name, "x\n")

    diff = repo.diff()
    paths = sorted(change.path.encode("utf-8", "surrogateescape") for change in parse_diff(diff))

    assert paths == sorted(set(names))
    for escaped, _ in ESCAPES[:9]:
        assert b'"a/c' + escaped + b'"' in diff


def _corpus(tmp_path: Path) -> tuple[list[bytes], dict[str, tuple[str, bytes]]]:
    """Hand-written diffs, and one real git diff of every kind with the tree it applies to."""
    repo = GitRepo(tmp_path)
    big = bytes(range(256)) * 20
    base = {"t.txt": b"a\nb\nc\n" * 5, "n": b"x", "big.bin": big, "gone": b"g\n", "sp ace": b"s\n"}
    for path, content in base.items():
        repo.write(path, content)
    repo.path("link").symlink_to("t.txt")
    repo.commit_base()
    tree = {path: ("100644", content) for path, content in base.items()}
    tree["link"] = ("120000", b"t.txt")
    repo.write("t.txt", "a\nB\nc\n" * 5 + "d")
    repo.write("n", "y\n", executable=True)
    repo.write("big.bin", big[:-5] + b"\0\0")
    repo.write("café", b"\0new")
    repo.write("sp ace", "S\n")
    repo.path("gone").unlink()
    repo.path("link").unlink()
    repo.path("link").symlink_to("n")
    return [GOOD, BIN, DELTA, TWO, repo.diff()], tree


INSERTS = (NL, b"@@ -1 +1 @@", b"literal 5", b"delta 3", b"", b"diff --git a/f b/f", b"+", b"-",
           b" ", b"index 0..1", b"GIT binary patch", b"new file mode 100644", b'"')  # fmt: skip


def mutate(rng: random.Random, diff: bytes) -> bytes:
    data = bytearray(diff)
    for _ in range(rng.randrange(1, 4)):
        lines = bytes(data).split(b"\n")
        at = rng.randrange(len(lines))
        operation = rng.randrange(6)
        if operation == 0 and data:  # flip a byte
            data[rng.randrange(len(data))] = rng.choice(b'\n\\" +-@0Aaz~\t\x00\xff')
            continue
        if operation == 1:  # truncate
            data = data[: rng.randrange(len(data) + 1)]
            continue
        if operation == 2:
            del lines[at]
        elif operation == 3:
            lines.insert(at, lines[at])
        elif operation == 4:
            other = rng.randrange(len(lines))
            lines[at], lines[other] = lines[other], lines[at]
        else:
            lines.insert(at, rng.choice(INSERTS))
        data = bytearray(b"\n".join(lines))
    return bytes(data)


def test_fuzzed_diffs_parse_or_raise_a_plain_value_error(tmp_path: Path) -> None:
    corpus, tree = _corpus(tmp_path)
    real = parse_diff(corpus[-1])
    assert {change.path for change in real} >= {"t.txt", "big.bin", "café", "link", "gone"}
    assert apply_diff(real, MemoryTree(tree))
    rng = random.Random(7)  # noqa: S311 - a fixed seed: the same inputs every run
    outcomes = {"parsed": 0, "refused": 0, "applied": 0}
    wrong: list[str] = []  # exceptions other than a plain ValueError naming the line
    for _ in range(4000):
        diff = mutate(rng, rng.choice(corpus))
        try:
            changes = parse_diff(diff)
        except ValueError as exc:
            if type(exc) is not ValueError or not re.match(r"line \d+: ", str(exc)):
                wrong.append(f"{exc!r} from {diff!r}")
            outcomes["refused"] += 1
            continue
        assert all(isinstance(change, FileChange) for change in changes)
        outcomes["parsed"] += 1
        try:
            apply_diff(changes, MemoryTree(tree))
        except PatchError:
            continue
        outcomes["applied"] += 1
    assert wrong == []
    assert min(outcomes.values()) > 20, outcomes


@pytest.mark.parametrize("diff", [case[1] for case in CASES], ids=[c[0] for c in CASES])
def test_the_gate_blocks_every_malformed_diff_as_malformed(diff: bytes) -> None:
    findings = run_gate(diff, TreeFacts({}), GatePolicy())
    assert [(f.severity, f.kind) for f in findings] == [("block", "malformed")]
    assert "could not be read" in findings[0].reason
