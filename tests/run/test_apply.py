"""The strict applier: what it builds from a base and a diff, and every patch it refuses."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from frognano.policy.gate.diff import NO_NEWLINE, BinaryPatch, FileChange, parse_diff
from frognano.run.apply import (
    AppliedFile,
    BaseEntry,
    MemoryTree,
    PatchError,
    apply_diff,
    blob_id,
)
from tests.policy.gitrepo import GitRepo

_NEEDS_QUOTES = re.compile(rb'[\x00-\x1f\x7f-\xff"\\]')


def quoted(raw: bytes) -> bytes:
    """A path as git prints it (core.quotePath on)."""
    if not _NEEDS_QUOTES.search(raw):
        return raw
    letters = {7: b"a", 8: b"b", 9: b"t", 10: b"n", 11: b"v", 12: b"f", 13: b"r", 34: b'"'}
    out = bytearray(b'"')
    for byte in raw:
        if byte in letters or byte == 92:
            out += b"\\" + letters.get(byte, b"\\")
        elif byte < 0x20 or byte >= 0x7F:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b'"')


def addition(path: str | bytes, content: bytes = b"x\n", mode: str = "100644") -> bytes:
    """A diff adding one file of one line, as git would print it (even where git could not)."""
    raw = path.encode("utf-8", "surrogateescape") if isinstance(path, str) else path
    old, new = quoted(b"a/" + raw), quoted(b"b/" + raw)
    tab = b"\t" if b" " in raw else b""
    line = b"+" + content.removesuffix(b"\n") + b"\n"
    if not content.endswith(b"\n"):
        line += NO_NEWLINE + b"\n"
    return (
        b"diff --git %s %s\nnew file mode %s\nindex 0000000..%s\n--- /dev/null\n+++ %s%s\n"
        b"@@ -0,0 +1 @@\n%s"
        % (old, new, mode.encode(), blob_id(content)[:7].encode(), new, tab, line)
    )


def apply(diff: bytes, base: dict[str, tuple[str, bytes]]) -> tuple[AppliedFile, ...]:
    return apply_diff(parse_diff(diff), MemoryTree(base))


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path)


LINES = b"".join(b"line %d\n" % number for number in range(1, 11))


def test_handwritten_addition_applies() -> None:
    assert apply(addition("dir/new.txt"), {"a": ("100644", b"")}) == (
        AppliedFile("dir/new.txt", "100644", b"x\n"),
    )


def test_a_mode_change_alone_keeps_the_bytes(repo: GitRepo) -> None:
    repo.write("run.sh", "echo\r\n")
    repo.commit_base()
    repo.path("run.sh").chmod(0o755)
    assert apply(repo.diff(), {"run.sh": ("100644", b"echo\r\n")}) == (
        AppliedFile("run.sh", "100755", b"echo\r\n"),
    )


def test_type_change_yields_the_final_state_only(repo: GitRepo) -> None:
    repo.write("x", "content\n")
    repo.commit_base()
    repo.path("x").unlink()
    repo.path("x").symlink_to("target")
    changes = parse_diff(repo.diff())
    assert [change.status for change in changes] == ["deleted", "added"]
    assert apply_diff(changes, MemoryTree({"x": ("100644", b"content\n")})) == (
        AppliedFile("x", "120000", b"target"),
    )


def test_results_are_sorted_by_path_bytes() -> None:
    diff = addition("b") + addition("a/z") + addition("a.txt")
    assert [file.path for file in apply(diff, {})] == ["a.txt", "a/z", "b"]


def test_memory_tree_entries() -> None:
    tree = MemoryTree({"d/f": ("100755", b"x"), "l": ("120000", b"d"), "s": ("160000", b"")})
    assert tree.entry("d") == BaseEntry("dir", "040000")
    assert tree.entry("d/f") == BaseEntry("file", "100755")
    assert tree.entry("l") == BaseEntry("symlink", "120000")
    assert tree.entry("s") == BaseEntry("submodule", "160000")
    assert tree.entry("d/g") is None
    assert tree.read("l") == b"d"
    with pytest.raises(ValueError, match="unsupported mode"):
        MemoryTree({"f": ("100664", b"")})
    with pytest.raises(ValueError, match="both a file and a directory"):
        MemoryTree({"f": ("100644", b""), "f/g": ("100644", b"")})


def test_blob_id_is_gits(repo: GitRepo) -> None:
    repo.write("f", b"\x00bytes\r\n")
    assert blob_id(b"\x00bytes\r\n") == repo.git("hash-object", "f").decode().strip()


def test_diff_made_against_another_base_is_refused(repo: GitRepo) -> None:
    repo.write("f.txt", LINES)
    repo.commit_base()
    repo.write("f.txt", LINES.replace(b"line 3\n", b"three\n"))
    diff = repo.diff()
    # The hunk's lines match, but another line differs: only the index line can tell.
    other = LINES.replace(b"line 10\n", b"ten\n")
    with pytest.raises(PatchError, match=r"blob id .* made against another base"):
        apply(diff, {"f.txt": ("100644", other)})


def test_hunk_at_the_wrong_line_is_refused_without_offsets(repo: GitRepo) -> None:
    repo.write("f.txt", LINES)
    repo.commit_base()
    repo.write("f.txt", LINES.replace(b"line 5\n", b"five\n"))
    shifted = b"extra\n" + LINES
    with pytest.raises(PatchError, match=r"hunk 1 .* the base's line 2 is 'line 1\\n'"):
        apply(repo.diff(), {"f.txt": ("100644", shifted)})


def test_hunk_past_the_end_of_the_base_is_refused(repo: GitRepo) -> None:
    repo.write("f.txt", LINES)
    repo.commit_base()
    repo.write("f.txt", LINES + b"more\n")
    with pytest.raises(PatchError, match="does not fit the base file of 3 lines"):
        apply(repo.diff(), {"f.txt": ("100644", b"a\nb\nc\n")})


@pytest.mark.parametrize("which", ["old", "new"])
def test_wrong_index_id_is_refused(repo: GitRepo, which: str) -> None:
    repo.write("f.txt", LINES)
    repo.commit_base()
    repo.write("f.txt", LINES.replace(b"line 5\n", b"five\n"))
    diff = repo.diff()
    match = re.search(rb"index ([0-9a-f]+)\.\.([0-9a-f]+)", diff)
    assert match
    ids = [match.group(1), match.group(2)]
    slot = 0 if which == "old" else 1
    ids[slot] = b"1234567"
    forged = diff.replace(match.group(0), b"index %s..%s" % (ids[0], ids[1]))
    with pytest.raises(PatchError, match=f"the {which} file's blob id .* says 1234567"):
        apply(forged, {"f.txt": ("100644", LINES)})


def test_missing_newline_must_end_the_new_file() -> None:
    # Hand-made: the new side ends without a newline in a hunk followed by more base lines.
    base = b"a\nz\n"
    diff = (
        b"diff --git a/f b/f\nindex %s..1234567 100644\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"
        b"\\ No newline at end of file\n" % blob_id(base)[:7].encode()
    )
    with pytest.raises(PatchError, match="the new file ends in this hunk, but base lines follow"):
        apply(diff, {"f": ("100644", base)})


@pytest.mark.parametrize(
    "path",
    [".git/config", ".GIT/hooks/x", "a/.git/x", ".git./x", ".git  /x", "GIT~1/x", ".git::$DATA/x",
     ".g\u200cit/x", "a\\.git\\x", ".Git"],
)  # fmt: skip
def test_paths_into_git_are_refused(path: str) -> None:
    with pytest.raises(PatchError, match=r"git's own directory \(\.git\)"):
        apply(addition(path), {})


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("a/../b", "'..' component"),
        ("../b", "'..' component"),
        ("./b", "'.' or '..'"),
        ("a//b", "empty, '.' or '..'"),
        ("a/", "empty, '.' or '..'"),
        ("/etc/passwd", "absolute path"),
    ],
)
def test_unsafe_paths_are_refused(path: str, message: str) -> None:
    with pytest.raises(PatchError, match=re.escape(message)):
        apply(addition(path), {})


def test_path_through_a_symlink_is_refused() -> None:
    base = {"link": ("120000", b"/etc"), "d/f": ("100644", b"")}
    with pytest.raises(PatchError, match="parent 'link' is a symlink in the base"):
        apply(addition("link/passwd"), base)


def test_path_below_a_file_or_submodule_is_refused() -> None:
    with pytest.raises(PatchError, match="parent 'f' is a file in the base"):
        apply(addition("f/x"), {"f": ("100644", b"")})
    with pytest.raises(PatchError, match="parent 's' is a submodule in the base"):
        apply(addition("s/x"), {"s": ("160000", b"")})


def test_path_below_a_deleted_file_is_still_refused(repo: GitRepo) -> None:
    repo.write("d", "file\n")
    repo.commit_base()
    repo.path("d").unlink()
    repo.write("d/x", "now a directory\n")
    with pytest.raises(PatchError, match="parent 'd' is a file in the base"):
        apply(repo.diff(), {"d": ("100644", b"file\n")})


def test_file_and_directory_in_the_result_is_refused() -> None:
    with pytest.raises(PatchError, match="'a/b': its parent 'a' is a file in the result"):
        apply(addition("a") + addition("a/b"), {})


def test_adding_an_existing_file_is_refused() -> None:
    with pytest.raises(PatchError, match="adds this path, but it is already in the base"):
        apply(addition("f"), {"f": ("100644", b"x\n")})


def test_adding_over_a_directory_is_refused() -> None:
    with pytest.raises(PatchError, match="it is a directory in the base"):
        apply(addition("d"), {"d/f": ("100644", b"x\n")})


def test_deleting_a_missing_file_is_refused(repo: GitRepo) -> None:
    repo.write("gone", "x\n")
    repo.commit_base()
    repo.path("gone").unlink()
    with pytest.raises(PatchError, match="deletes this path, but the base has no such file"):
        apply(repo.diff(), {"other": ("100644", b"")})


def test_deletion_must_remove_everything() -> None:
    base = b"a\nb\n"
    diff = b"diff --git a/f b/f\ndeleted file mode 100644\nindex %s..0000000\n--- a/f\n" % (
        blob_id(base)[:7].encode()
    )
    diff += b"+++ /dev/null\n@@ -1 +0,0 @@\n-a\n"
    with pytest.raises(PatchError, match="does not remove all of the base file's content"):
        apply(diff, {"f": ("100644", base)})


def test_modifying_a_directory_or_a_missing_file_is_refused(repo: GitRepo) -> None:
    repo.write("f", "a\n")
    repo.commit_base()
    repo.write("f", "b\n")
    diff = repo.diff()
    with pytest.raises(PatchError, match="it is a dir in the base"):
        apply(diff, {"f/x": ("100644", b"")})
    with pytest.raises(PatchError, match="modifies this path, but the base has no such file"):
        apply(diff, {})


def test_old_mode_must_match_the_base(repo: GitRepo) -> None:
    repo.write("f", "a\n")
    repo.commit_base()
    repo.write("f", "b\n")
    with pytest.raises(PatchError, match="old mode is 100644, but the base has 100755"):
        apply(repo.diff(), {"f": ("100755", b"a\n")})


def test_the_same_path_twice_is_refused() -> None:
    with pytest.raises(PatchError, match=r"changes this path twice \(added, then added\)"):
        apply(addition("f") + addition("f"), {})


def test_binary_change_without_data_is_refused(repo: GitRepo) -> None:
    repo.commit_base()
    repo.write("img.png", b"\x89PNG\x00\x00")
    repo.stage()
    diff = repo.git("diff", "--cached", "--no-renames", repo.base)
    assert b"Binary files /dev/null and b/img.png differ" in diff
    with pytest.raises(PatchError, match=r"binary change without data .* with --binary"):
        apply(diff, {})


def test_binary_delta_against_another_file_is_refused() -> None:
    base = b"\0" * 100
    change = FileChange(
        "f", "modified", "100644", "100644", True, (), 0, 0,
        binary_patch=BinaryPatch("delta", 4, b"\x0a\x05\x05hello"),
        old_id=blob_id(base), new_id="1234567",
    )  # fmt: skip
    with pytest.raises(PatchError, match=r"delta does not fit .* 10-byte original"):
        apply_diff([change], MemoryTree({"f": ("100644", base)}))


def test_submodule_is_refused(repo: GitRepo) -> None:
    sha = repo.commit_base()
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{sha},sub")
    diff = repo.git("diff", "--cached", "--binary", "--no-renames", repo.base)
    with pytest.raises(PatchError, match="changes a submodule"):
        apply(diff, {})


def test_unsupported_modes_and_type_changes_by_mode_are_refused() -> None:
    with pytest.raises(PatchError, match="unsupported file mode 100664"):
        apply(addition("f", mode="100664"), {})
    change = FileChange("f", "modified", "100644", "120000", False, (), 0, 0)
    with pytest.raises(PatchError, match="mode change between a file and a symlink"):
        apply_diff([change], MemoryTree({"f": ("100644", b"t")}))


def test_symlink_targets_must_be_real() -> None:
    with pytest.raises(PatchError, match="target cannot be empty or hold a NUL"):
        apply(addition("l", b"a\0b", mode="120000"), {})
    empty = (
        b"diff --git a/l b/l\nnew file mode 120000\n"
        b"index 0000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n"
    )
    with pytest.raises(PatchError, match="target cannot be empty"):
        apply(empty, {})


def test_new_empty_file_must_be_the_empty_blob() -> None:
    empty = b"diff --git a/e b/e\nnew file mode 100644\nindex 0000000..e69de29\n"
    assert apply(empty, {}) == (AppliedFile("e", "100644", b""),)
    with pytest.raises(PatchError, match="does not produce the file it names"):
        apply(empty.replace(b"e69de29", b"1234567"), {})


def test_changes_without_index_ids_are_refused() -> None:
    [change] = parse_diff(addition("f"))
    with pytest.raises(PatchError, match="without an index line cannot be checked"):
        apply_diff([dataclasses.replace(change, new_id=None)], MemoryTree({}))


def test_patch_error_is_a_value_error() -> None:
    assert issubclass(PatchError, ValueError)
