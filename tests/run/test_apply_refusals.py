"""The strict applier's refusals, each with the complete message a reviewer reads; its limits."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from frognano.policy.gate.diff import (
    NO_NEWLINE,
    BinaryPatch,
    FileChange,
    Hunk,
    HunkLine,
    parse_diff,
)
from frognano.run.apply import (
    AppliedFile,
    BaseEntry,
    MemoryTree,
    PatchError,
    apply_diff,
)
from tests.run.test_apply import addition, apply

NL = NO_NEWLINE + b"\n"
X_ID = "587be6b4c3f93f93c489c0111bba5596147a26cb"  # blob_id(b"x\n")
EMPTY_ID = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # blob_id(b"")
T_ID = "32f64f4d836716819dc5fa9a1e09a29b428881df"  # blob_id(b"t")
ABC_ID = "de980441c3ab03a8c07dda1ad27b8a11f39deb1e"  # blob_id(b"a\nb\nc\n")
Base = dict[str, tuple[str, bytes]]


def edit(
    path: bytes, hunks: bytes, ids: bytes = b"1111111..2222222", mode: bytes = b"100644"
) -> bytes:
    """A diff modifying `path` with `hunks` (written out), as git prints it."""
    return b"diff --git a/%s b/%s\nindex %s %s\n--- a/%s\n+++ b/%s\n%s" % (
        path, path, ids, mode, path, path, hunks,
    )  # fmt: skip


def deletion(path: bytes, hunks: bytes = b"", ids: bytes = b"1111111..0000000") -> bytes:
    """A diff deleting `path`; no hunks for an empty file."""
    head = b"diff --git a/%s b/%s\ndeleted file mode 100644\nindex %s\n" % (path, path, ids)
    return head + (b"--- a/%s\n+++ /dev/null\n%s" % (path, hunks) if hunks else b"")


def change(path: str, status: str = "modified", **fields: object) -> FileChange:
    """A FileChange the parser would never make, for the applier's own checks."""
    values: dict[str, object] = {
        "path": path,
        "status": status,
        "old_mode": None if status == "added" else "100644",
        "new_mode": None if status == "deleted" else "100644",
        "binary": False,
        "added_lines": (),
        "removed_lines": 0,
        "added_count": 0,
        "old_id": "1111111",
        "new_id": "2222222",
    }
    values.update(fields)
    return FileChange(**values)  # type: ignore[arg-type]


def hunk(old: tuple[int, int], new: tuple[int, int], *lines: tuple[str, bytes]) -> Hunk:
    return Hunk(*old, *new, tuple(HunkLine(marker, text) for marker, text in lines))  # type: ignore[arg-type]


THREE: Base = {"f": ("100644", b"a\nb\nc\n")}

# (id, changes, base, the complete message)
REFUSALS: list[tuple[str, Sequence[FileChange], Base, str]] = [
    # paths
    ("empty path", [change("")], {}, "'': an empty path or one with a NUL byte"),
    ("NUL in path", [change("a\0b")], {}, "'a\\x00b': an empty path or one with a NUL byte"),
    ("absolute", parse_diff(addition("/etc/passwd")), {}, "'/etc/passwd': an absolute path"),
    ("dot dot", parse_diff(addition("a/../b")), {},
     "'a/../b': a path with an empty, '.' or '..' component"),
    ("into .git", parse_diff(addition("d/.GIT/hooks/x")), {},
     "'d/.GIT/hooks/x': the patch touches git's own directory (.git)"),
    ("parent two deep is a file", parse_diff(addition("a/b/c")), {"a/b": ("100644", b"")},
     "'a/b/c': its parent 'a/b' is a file in the base; the patch cannot change a path through it"),
    ("parent is a symlink", parse_diff(addition("link/x")), {"link": ("120000", b"/etc")},
     "'link/x': its parent 'link' is a symlink in the base; the patch cannot change a path "
     "through it"),
    ("submodule", [change("sub", "added", new_mode="160000")], {},
     "'sub': the patch changes a submodule, which FrogNano does not apply"),
    # index lines
    ("hunks without ids", [change("f", hunks=(hunk((1, 1), (1, 1), ("-", b"a"), ("+", b"z")),),
                                  old_id=None, new_id=None)], THREE,
     "'f': a change without an index line cannot be checked"),
    ("empty addition without ids", [change("e", "added", old_id=None, new_id=None)], {},
     "'e': a change without an index line cannot be checked"),
    ("binary without ids", [change("f", binary=True, old_id=None, new_id=None)], THREE,
     "'f': a change without an index line cannot be checked"),
    ("deletion without old id", [change("f", "deleted", old_id=None)], THREE,
     "'f': a change without an index line cannot be checked"),
    # twice
    ("added twice", parse_diff(addition("f") + addition("f")), {},
     "'f': the patch changes this path twice (added, then added); git prints a path once, or a "
     "deletion then an addition"),
    ("added then deleted", [change("f", "added", old_id="0000000", new_id=EMPTY_ID),
                            change("f", "deleted")], {},
     "'f': the patch changes this path twice (added, then deleted); git prints a path once, or "
     "a deletion then an addition"),
    # additions
    ("add existing", parse_diff(addition("f")), {"f": ("100644", b"x\n")},
     "'f': the patch adds this path, but it is already in the base"),
    ("add over a directory", parse_diff(addition("d")), {"d/f": ("100644", b"x\n")},
     "'d': the patch adds this path, but it is a directory in the base"),
    ("add with an unsupported mode", parse_diff(addition("f", mode="100664")), {},
     "'f': unsupported file mode 100664"),
    ("add without binary data",
     parse_diff(b"diff --git a/f b/f\nnew file mode 100644\nindex 0000000..1234567\n"
                b"Binary files /dev/null and b/f differ\n"), {},
     "'f': a binary change without data ('Binary files ... differ'); the diff must be made "
     "with --binary"),
    ("add with another new id", parse_diff(addition("f").replace(X_ID[:7].encode(), b"1234567")),
     {}, f"'f': the new file's blob id is {X_ID}, but the patch's index line says 1234567 "
     "(the patch does not produce the file it names)"),
    ("add a symlink to a NUL", parse_diff(addition("l", b"a\0b", mode="120000")), {},
     "'l': a symlink's target cannot be empty or hold a NUL byte"),
    # deletions
    ("delete a missing file", parse_diff(deletion(b"gone")), {"other": ("100644", b"")},
     "'gone': the patch deletes this path, but the base has no such file"),
    ("delete part of a file", parse_diff(deletion(b"f", b"@@ -1,2 +0,0 @@\n-a\n-b\n")), THREE,
     "'f': the deletion does not remove all of the base file's content (the patch was made "
     "against another version of it)"),
    ("delete with a hunk past the end",
     parse_diff(deletion(b"f", b"@@ -1,4 +0,0 @@\n-a\n-b\n-c\n-d\n")), THREE,
     "'f', hunk 1 (@@ -1,4 ...): the hunk does not fit the base file of 3 lines (the patch was "
     "made against another version of it)"),
    ("delete with another old id", parse_diff(deletion(b"e", ids=b"1234567..0000000")),
     {"e": ("100644", b"")},
     f"'e': the old file's blob id is {EMPTY_ID}, but the patch's index line says 1234567 "
     "(the patch was made against another base)"),
    # modifications
    ("modify a missing file", parse_diff(edit(b"f", b"@@ -1 +1 @@\n-a\n+z\n")), {},
     "'f': the patch modifies this path, but the base has no such file"),
    ("modify a submodule", parse_diff(edit(b"s", b"@@ -1 +1 @@\n-a\n+z\n")),
     {"s": ("160000", b"")},
     "'s': the patch modifies this path, but it is a submodule in the base"),
    ("modify with another old mode", parse_diff(edit(b"f", b"@@ -1 +1 @@\n-a\n+z\n")),
     {"f": ("100755", b"a\nb\nc\n")},
     "'f': the patch says the old mode is 100644, but the base has 100755 (the patch was made "
     "against another base)"),
    ("modify to an unsupported mode", [change("f", new_mode="100664", old_id=None, new_id=None)],
     THREE, "'f': unsupported file mode 100664"),
    ("file to symlink by mode", [change("f", new_mode="120000", old_id=None, new_id=None)], THREE,
     "'f': a mode change between a file and a symlink; git prints a type change as a deletion "
     "and an addition"),
    ("symlink to file by mode", [change("l", old_mode="120000", old_id=None, new_id=None)],
     {"l": ("120000", b"t")},
     "'l': a mode change between a file and a symlink; git prints a type change as a deletion "
     "and an addition"),
    ("modify with another old id", parse_diff(edit(b"f", b"@@ -1 +1 @@\n-a\n+z\n")), THREE,
     f"'f': the old file's blob id is {ABC_ID}, but the patch's index line says 1111111 (the "
     "patch was made against another base)"),
    ("modify with another new id",
     parse_diff(edit(b"f", b"@@ -1 +1 @@\n-a\n+z\n", ids=ABC_ID.encode() + b"..2222222")), THREE,
     "'f': the new file's blob id is e6112666274369e54732d0454016b82347701889, but the patch's "
     "index line says 2222222 (the patch does not produce the file it names)"),
    ("empty a symlink", [change("l", old_mode="120000", new_mode="120000", binary=True,
                                binary_patch=BinaryPatch("literal", 0, b""), old_id=T_ID,
                                new_id=EMPTY_ID)],
     {"l": ("120000", b"t")}, "'l': a symlink's target cannot be empty or hold a NUL byte"),
    ("binary delta for another file",
     [change("f", binary=True, binary_patch=BinaryPatch("delta", 4, b"\x0a\x01\x01x"))], THREE,
     "'f': the binary delta does not fit the base file: the delta is for a 10-byte original, "
     "but the base has 6 bytes"),
    # hunks
    ("hunk lines disagree with the header",
     [change("f", hunks=(hunk((1, 2), (1, 1), (" ", b"a")),))], THREE,
     "'f', hunk 1 (@@ -1,2 ...): the hunk's lines disagree with its header"),
    ("hunk runs past the end", parse_diff(edit(b"f", b"@@ -2,3 +2,3 @@\n b\n-c\n+z\n d\n")),
     THREE, "'f', hunk 1 (@@ -2,3 ...): the hunk does not fit the base file of 3 lines (the "
     "patch was made against another version of it)"),
    ("second hunk overlaps the first",
     [change("f", hunks=(hunk((1, 2), (1, 2), ("-", b"a"), ("+", b"z"), (" ", b"b")),
                         hunk((2, 1), (2, 1), ("-", b"b"), ("+", b"y"))))], THREE,
     "'f', hunk 2 (@@ -2,1 ...): the hunk does not fit the base file of 3 lines (the patch was "
     "made against another version of it)"),
    ("second line of a hunk differs",
     parse_diff(edit(b"f", b"@@ -2,2 +2,2 @@\n b\n-X\n+z\n")), THREE,
     "'f', hunk 1 (@@ -2,2 ...): the base's line 3 is 'c\\n', but the patch expects 'X\\n' (the "
     "patch was made against another version of the file)"),
    ("new file ends before the base does",
     parse_diff(edit(b"f", b"@@ -1 +1 @@\n-a\n+z\n" + NL)), THREE,
     "'f', hunk 1 (@@ -1,1 ...): the new file ends in this hunk, but base lines follow"),
    # the result
    ("a file below a file, two deep", parse_diff(addition("a/b") + addition("a/b/c")), {},
     "'a/b/c': its parent 'a/b' is a file in the result"),
    ("a file below a file after a deletion",
     parse_diff(deletion(b"e", ids=EMPTY_ID[:7].encode() + b"..0000000") + addition("a")
                + addition("a/b")), {"e": ("100644", b"")},
     "'a/b': its parent 'a' is a file in the result"),
    # a path that is not UTF-8 is shown with replacement characters
    ("undecodable path", parse_diff(addition(b"caf\xe9")), {"caf\udce9": ("100644", b"")},
     "'caf\ufffd': the patch adds this path, but it is already in the base"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "base", "message"), [case[1:] for case in REFUSALS], ids=[c[0] for c in REFUSALS]
)
def test_refusal_names_the_file_and_why(
    changes: Sequence[FileChange], base: Base, message: str
) -> None:
    with pytest.raises(PatchError) as raised:
        apply_diff(changes, MemoryTree(base))
    assert str(raised.value) == message


def test_the_new_start_must_be_where_the_hunk_lands() -> None:
    moved = change("f", hunks=(hunk((1, 1), (2, 1), ("-", b"a"), ("+", b"z")),))
    with pytest.raises(PatchError) as raised:
        apply_diff([moved], MemoryTree(THREE))
    assert str(raised.value).startswith(
        "'f', hunk 1 (@@ -1,1 ...): the hunk's new start is not where it lands"
    )


def mismatch(base_line: bytes) -> str:
    """The message for a one-line hunk expecting 'y' where the base has `base_line`."""
    diff = edit(b"f", b"@@ -1 +1 @@\n-y\n+z\n")
    with pytest.raises(PatchError) as raised:
        apply(diff, {"f": ("100644", base_line)})
    return str(raised.value)


WHERE = "'f', hunk 1 (@@ -1,1 ...): the base's line 1 is "
THEN = ", but the patch expects 'y\\n' (the patch was made against another version of the file)"


@pytest.mark.parametrize(
    ("base_line", "shown"),
    [
        (b"x" * 59 + b"\n", "'" + "x" * 59 + "\\n'"),  # 60 bytes: shown whole
        (b"x" * 60 + b"\n", "'" + "x" * 60 + "...'"),  # 61 bytes: cut at 60
        (b"x" * 61 + b"\n", "'" + "x" * 60 + "...'"),
        (b"x" * 60, "'" + "x" * 60 + "'"),  # a last line without its newline
        (b"x" * 59 + "\u00e9\n".encode(), "'" + "x" * 59 + "\ufffd...'"),  # cut inside a letter
        (b"\xff\n", "'\ufffd\\n'"),
    ],
    ids=["60 bytes", "61 bytes", "62 bytes", "60 without newline", "cut UTF-8", "not UTF-8"],
)
def test_base_lines_are_shown_to_60_bytes(base_line: bytes, shown: str) -> None:
    assert mismatch(base_line) == WHERE + shown + THEN


def test_a_deletion_yields_an_empty_mode_and_no_content() -> None:
    diff = deletion(b"e", ids=EMPTY_ID[:7].encode() + b"..0000000")
    assert apply(diff, {"e": ("100644", b""), "k": ("100644", b"")}) == (
        AppliedFile("e", "", None),
    )


def test_undecodable_paths_round_trip_and_sort_by_their_bytes() -> None:
    # "\udce9" (byte e9) sorts after "\u00e9" (bytes c3 a9) as bytes, and before it as text.
    diff = addition(b"\xe9") + addition("\u00e9") + addition("z")
    assert [file.path for file in apply(diff, {})] == ["z", "\u00e9", "\udce9"]


def test_changes_below_directories_of_the_base_apply() -> None:
    base: Base = {"d/e/x": ("100644", b"")}
    assert apply(addition("d/e/y"), base) == (AppliedFile("d/e/y", "100644", b"x\n"),)


@pytest.mark.parametrize("path", [".gitX/f", ".gitx", "x.git", "git", ".git_", "a.git~1"])
def test_names_that_only_look_like_git_are_allowed(path: str) -> None:
    assert [file.path for file in apply(addition(path), {})] == [path]


class RecordingTree(MemoryTree):
    """A MemoryTree that records the paths it is asked about."""

    def __init__(self, files: Base) -> None:
        super().__init__(files)
        self.asked: list[str] = []

    def entry(self, path: str) -> BaseEntry | None:
        self.asked.append(path)
        return super().entry(path)


def test_the_base_is_asked_about_each_parent_and_the_path_only() -> None:
    tree = RecordingTree({"a/b/other": ("100644", b"")})
    apply_diff(parse_diff(addition("a/b/c")), tree)
    assert tree.asked == ["a", "a/b", "a/b/c"]


def test_memory_tree_implies_every_parent_directory_and_no_root() -> None:
    tree = MemoryTree({"a/b/c": ("100644", b"")})
    assert tree.entry("a") == BaseEntry("dir", "040000")
    assert tree.entry("a/b") == BaseEntry("dir", "040000")
    assert tree.entry("") is None
    assert tree.entry("a/b/c/d") is None


def test_memory_tree_refusals_are_exact() -> None:
    with pytest.raises(ValueError, match=r"^'f': unsupported mode '100664'$"):
        MemoryTree({"f": ("100664", b"")})
    with pytest.raises(ValueError, match=r"^'a/b' is both a file and a directory$"):
        MemoryTree({"a/b": ("100644", b""), "a/b/c": ("100644", b""), "z": ("100644", b"")})
