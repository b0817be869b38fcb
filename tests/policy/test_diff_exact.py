"""The diff parser's refusals with their complete messages, and where quoted paths and lines end."""

from __future__ import annotations

import re

import pytest

from frognano.policy.gate.diff import Hunk, HunkLine, parse_diff
from frognano.policy.gate.gitquote import header_path, side_path
from tests.policy.test_diff_malformed import GOOD, NL, TWO

# GOOD: 1 diff --git, 2 index, 3 ---, 4 +++, 5 @@ -1 +1 @@, 6 -a, 7 +b
HEAD = GOOD[: GOOD.index(b"@@")]


def exact(message: str) -> str:
    """A `match` pattern for exactly `message`."""
    return f"^{re.escape(message)}$"


# (id, diff, the complete message)
REFUSALS: list[tuple[str, bytes, str]] = [
    ("headers git never combines",
     b"diff --git a/f b/f\nindex 0000000..1111111\nnew file mode 100644\n",
     "line 1: git never prints these extended headers together: 'index', 'new file' (a change "
     "needs an index line, or old and new mode alone)"),
    ("index line without the mode", GOOD.replace(b" 100644", b""),
     "line 1: the index line must carry the mode exactly when the mode is unchanged and the file "
     "neither added nor deleted"),
    ("ids of an addition", b"diff --git a/f b/f\nnew file mode 100644\nindex 1111111..2222222\n",
     "line 1: the index line's ids must be zeros exactly on the side where the file does not "
     "exist"),
    ("ids of a deletion",
     b"diff --git a/f b/f\ndeleted file mode 100644\nindex 1111111..2222222\n",
     "line 1: the index line's ids must be zeros exactly on the side where the file does not "
     "exist"),
    ("a line ending in differ", HEAD[: HEAD.index(b"---")] + b"Files a/f and b/f differ\n",
     "line 3: unexpected line 'Files a/f and b/f differ'"),
    ("a line starting with Binary files", HEAD[: HEAD.index(b"---")] + b"Binary files a/f b/f\n",
     "line 3: unexpected line 'Binary files a/f b/f'"),
    ("malformed hunk header", GOOD.replace(b"@@ -1 +1 @@", b"@@ -x +1 @@"),
     "line 5: malformed hunk header '@@ -x +1 @@'"),
    ("malformed second hunk header", GOOD + b"@@ -3 +3\n",
     "line 8: malformed hunk header '@@ -3 +3'"),
    ("hunk ends early", HEAD + b"@@ -1,3 +1,3 @@\n a\n",
     "line 5: the hunk ends early (2 old and 2 new lines missing)"),
    ("second hunk ends early", GOOD + b"@@ -3,2 +3,3 @@\n-c\n",
     "line 8: the hunk ends early (1 old and 3 new lines missing)"),
    ("marker before any line", HEAD + b"@@ -1 +1 @@\n" + NL + b"-a\n+b\n",
     "line 6: '\\ No newline at end of file' must follow a line of a hunk"),
    ("unexpected line in a hunk", HEAD + b"@@ -1 +1 @@\n-a\n#b\n",
     "line 7: unexpected line in a hunk: '#b'"),
    ("added line after the new file ended", HEAD + b"@@ -1 +1,2 @@\n-a\n+b\n" + NL + b"+c\n",
     "line 9: a line after '\\ No newline at end of file'"),
    ("context line after the new file ended", HEAD + b"@@ -1,2 +1,2 @@\n-a\n+b\n" + NL + b" c\n",
     "line 9: a line after '\\ No newline at end of file'"),
    ("context line after the old file ended", HEAD + b"@@ -1,2 +1,2 @@\n+b\n-a\n" + NL + b" c\n",
     "line 9: a line after '\\ No newline at end of file'"),
    ("more lines than the header", GOOD.replace(b"@@ -1 +1 @@", b"@@ -1,0 +1 @@"),
     "line 5: the hunk has more lines than its header says"),
    ("a hunk after one side ended",
     HEAD + b"@@ -1 +1 @@\n-a\n" + NL + b"+b\n@@ -3 +3 @@\n-x\n+y\n",
     "line 9: a hunk after '\\ No newline at end of file'"),
    ("old side starts at line 0", GOOD.replace(b"@@ -1 +1 @@", b"@@ -0 +1 @@"),
     "line 5: a hunk with lines cannot start at line 0"),
    ("new side starts at line 0", GOOD.replace(b"@@ -1 +1 @@", b"@@ -1 +0 @@"),
     "line 5: a hunk with lines cannot start at line 0"),
    ("second hunk overlaps", TWO.replace(b"@@ -10 +10 @@", b"@@ -2 +2 @@"),
     "line 9: the hunk overlaps or precedes the one before it"),
    ("second hunk's new start", TWO.replace(b"@@ -10 +10 @@", b"@@ -10 +11 @@"),
     "line 9: the hunk's new start disagrees with its old start and the hunks before it"),
    ("no hunk after +++", HEAD, "line 5: expected a hunk header after '+++'"),
    ("no +++ after ---", GOOD.replace(b"+++ b/f\n", b""),
     "line 4: expected a '+++' line after '---'"),
    ("--- path without a/", GOOD.replace(b"--- a/f", b"--- x/f"),
     "line 3: the path must start with 'a/'"),
    ("+++ path without b/", GOOD.replace(b"+++ b/f", b"+++ a/f"),
     "line 4: the path must start with 'b/'"),
    ("malformed new file mode", b"diff --git a/f b/f\nnew file mode 10064\n",
     "line 2: malformed file mode '10064'"),
    ("malformed mode on the index line", GOOD.replace(b" 100644", b" 100648"),
     "line 2: malformed file mode '100648'"),
    ("malformed index line", GOOD.replace(b"1111111", b"ABCDEFG"),
     "line 2: malformed index line 'index ABCDEFG..2222222 100644'"),
    ("rename header", GOOD.replace(b"index", b"rename from f\nindex"),
     "line 2: rename and copy headers are not supported (the diff must be made with "
     "--no-renames): 'rename from f'"),
    ("repeated header", GOOD.replace(b"index", b"old mode 100644\nold mode 100644\nindex"),
     "line 3: repeated header 'old mode 100644'"),
    ("stray line after a file", GOOD + b"stray\n" + GOOD, "line 8: unexpected line 'stray'"),
    ("second file's ids",
     GOOD + b"diff --git a/g b/g\nnew file mode 100644\nindex 1111111..2222222\n",
     "line 8: the index line's ids must be zeros exactly on the side where the file does not "
     "exist"),
    # the diff --git header
    ("second header with other prefixes", GOOD + b"diff --git x/f y/f\n",
     "line 8: the diff header must name one path as a/P b/P: 'diff --git x/f y/f'"),
    ("header with a/ twice", b"diff --git a/f a/f\n",
     "line 1: the diff header must name one path as a/P b/P: 'diff --git a/f a/f'"),
    ("header with b/ twice", b"diff --git b/f b/f\n",
     "line 1: the diff header must name one path as a/P b/P: 'diff --git b/f b/f'"),
    ("second quoted path unterminated", GOOD + b'diff --git "a/f" "b/f\n',
     "line 8: unterminated quoted path: '\"b/f'"),
    # quoted paths on the --- and +++ lines
    ("unterminated --- path", HEAD.replace(b"--- a/f", b'--- "a/f'),
     "line 3: unterminated quoted path: '\"a/f'"),
    ("unknown escape in a +++ path", HEAD.replace(b"+++ b/f", b'+++ "b/\\q"'),
     "line 4: unknown escape in a quoted path: '\"b/\\\\q\"'"),
    ("empty --- path", HEAD.replace(b"--- a/f", b"--- a/"), "line 3: empty path"),
    ("NUL in a +++ path", HEAD.replace(b"+++ b/f", b'+++ "b/\\000"'),
     "line 4: a NUL byte in a path"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("diff", "message"), [case[1:] for case in REFUSALS], ids=[c[0] for c in REFUSALS]
)
def test_refusal_names_the_line_and_why(diff: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=exact(message)):
        parse_diff(diff)


def test_a_stray_backslash_line_in_a_hunk_is_named_by_number() -> None:
    with pytest.raises(
        ValueError, match=exact("line 8: unexpected line in a hunk: '\\\\ something'")
    ):
        parse_diff(GOOD + b"\\ something\n")


def test_a_binary_change_without_data_is_one_line() -> None:
    no_data = HEAD[: HEAD.index(b"---")] + b"Binary files a/f and b/f differ\n"
    changes = parse_diff(no_data + GOOD.replace(b"/f", b"/g"))
    assert [(change.path, change.binary, change.hunks) for change in changes] == [
        ("f", True, ()),
        ("g", False, (Hunk(1, 1, 1, 1, (HunkLine("-", b"a"), HunkLine("+", b"b"))),)),
    ]


def test_each_hunk_shifts_the_new_side_of_the_ones_after_it() -> None:
    hunks = b"@@ -1 +1,2 @@\n-a\n+a\n+b\n@@ -5 +6,2 @@\n-e\n+e\n+f\n@@ -9 +11 @@\n-i\n+j\n"
    [change] = parse_diff(HEAD + hunks)
    assert [(hunk.old_start, hunk.new_start) for hunk in change.hunks] == [(1, 1), (5, 6), (9, 11)]


def test_a_removed_line_may_follow_the_end_of_the_new_file() -> None:
    [change] = parse_diff(HEAD + b"@@ -1 +1 @@\n+b\n" + NL + b"-a\n")
    assert change.hunks == (
        Hunk(1, 1, 1, 1, (HunkLine("+", b"b"), HunkLine("-", b"a")), False, True),
    )


def test_an_added_line_may_follow_the_end_of_the_old_file() -> None:
    [change] = parse_diff(HEAD + b"@@ -1 +1 @@\n-a\n" + NL + b"+b\n")
    assert change.hunks == (
        Hunk(1, 1, 1, 1, (HunkLine("-", b"a"), HunkLine("+", b"b")), True, False),
    )


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (b"x" * 79, "'" + "x" * 79 + "'"),
        (b"x" * 80, "'" + "x" * 80 + "'"),  # 80 bytes: shown whole
        (b"x" * 81, "'" + "x" * 80 + "...'"),  # 81 bytes: cut at 80
        (b"x" * 79 + "\u00e9".encode(), "'" + "x" * 79 + "\ufffd...'"),  # cut inside a letter
    ],
    ids=["79 bytes", "80 bytes", "81 bytes", "cut UTF-8"],
)
def test_diff_lines_are_shown_to_80_bytes(line: bytes, shown: str) -> None:
    with pytest.raises(
        ValueError, match=exact(f"line 1: expected a 'diff --git' header, got {shown}")
    ):
        parse_diff(line + b"\n")


@pytest.mark.parametrize(
    ("rest", "shown"),
    [
        (b"x", "'diff --git x'"),
        (b"x" * 69, "'diff --git " + "x" * 69 + "'"),  # 80 bytes: shown whole
        (b"x" * 70, "'diff --git " + "x" * 69 + "...'"),  # 81 bytes: cut at 80
    ],
    ids=["short", "80 bytes", "81 bytes"],
)
def test_header_lines_are_shown_to_80_bytes(rest: bytes, shown: str) -> None:
    with pytest.raises(ValueError, match=exact(f"line 7: cannot read the paths of {shown}")):
        header_path(b"diff --git " + rest, 7)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'"b/f', "line 9: unterminated quoted path: '\"b/f'"),
        (b"b/", "line 9: empty path"),
        (b"b/f ", "line 9: a path on a '---' or '+++' line must be followed by a tab exactly when "
                  "it has a space: 'b/f '"),
        (b"a/f", "line 9: the path must start with 'b/'"),
    ],
)  # fmt: skip
def test_side_path_refusals_name_their_line(raw: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=exact(message)):
        side_path(raw, b"b/", 9)
