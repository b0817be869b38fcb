"""The diff parser, on diffs made by real git (as `collect_patch` makes them) and on broken ones."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import pytest

from frognano.policy.gate.diff import NO_NEWLINE, FileChange, Hunk, HunkLine, parse_diff
from frognano.policy.gate.gitbinary import apply_delta
from tests.policy.gitrepo import GitRepo


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path)


def blob_id(data: bytes) -> str:
    """Git's id of a blob (computed here, not by the code under test)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def summary(change: FileChange) -> FileChange:
    """The change without what only applying it needs (hunks, binary data, blob ids)."""
    return dataclasses.replace(change, hunks=(), binary_patch=None, old_id=None, new_id=None)


def by_path(changes: list[FileChange]) -> dict[str, FileChange]:
    assert len({change.path for change in changes}) == len(changes)
    return {change.path: change for change in changes}


def test_empty_diff_has_no_changes() -> None:
    assert parse_diff(b"") == []


def test_hunks_are_counted_and_added_text_kept(repo: GitRepo) -> None:
    base = [f"line {n}\n" for n in range(40)]
    repo.write("a.py", "".join(base))
    repo.commit_base()
    new = base.copy()
    new[2] = "changed 2\n"  # first hunk: 1 removed, 2 added
    new.insert(3, "inserted\n")
    del new[30:33]  # second hunk: 3 removed, 0 added
    repo.write("a.py", "".join(new))

    [change] = parse_diff(repo.diff())

    assert summary(change) == FileChange(
        path="a.py",
        status="modified",
        old_mode="100644",
        new_mode="100644",
        binary=False,
        added_lines=("changed 2", "inserted"),
        removed_lines=4,
        added_count=2,
        added_line_numbers=(3, 4),
    )
    first, second = change.hunks
    assert (first.old_start, first.old_count, first.new_start, first.new_count) == (1, 6, 1, 7)
    assert first.lines == (
        HunkLine(" ", b"line 0"),
        HunkLine(" ", b"line 1"),
        HunkLine("-", b"line 2"),
        HunkLine("+", b"changed 2"),
        HunkLine("+", b"inserted"),
        HunkLine(" ", b"line 3"),
        HunkLine(" ", b"line 4"),
        HunkLine(" ", b"line 5"),
    )
    assert (second.old_start, second.old_count, second.new_start, second.new_count) == (
        27,
        9,
        28,
        6,
    )
    assert [line.marker for line in second.lines] == list("   ---   ")
    assert not any(h.old_missing_newline or h.new_missing_newline for h in change.hunks)
    # git abbreviates the ids of text files, even with --binary
    assert change.old_id == blob_id("".join(base).encode())[: len(change.old_id or "")]
    assert change.new_id == blob_id("".join(new).encode())[: len(change.new_id or "")]
    assert len(change.old_id or "") < 40


def test_counts_match_git_numstat(repo: GitRepo) -> None:
    repo.write("keep.txt", "".join(f"{n}\n" for n in range(100)))
    repo.write("gone.txt", "a\nb\nc\n")
    repo.commit_base()
    repo.write("keep.txt", "".join(f"{n * 7 % 13}\n" for n in range(90)))
    repo.path("gone.txt").unlink()
    repo.write("new/one.py", "x = 1\n\n\ny = 2\n")

    changes = by_path(parse_diff(repo.diff()))

    numstat = repo.numstat()
    assert sorted(changes) == sorted(path for _, _, path in numstat)
    for added, removed, path in numstat:
        assert (changes[path].added_count, changes[path].removed_lines) == (
            int(added),
            int(removed),
        )
        assert len(changes[path].added_lines) == changes[path].added_count
    assert changes["gone.txt"].status == "deleted"
    assert changes["gone.txt"].old_mode == "100644"
    assert changes["gone.txt"].new_mode is None
    assert changes["new/one.py"].status == "added"
    assert changes["new/one.py"].old_mode is None
    assert changes["new/one.py"].added_lines == ("x = 1", "", "", "y = 2")


def test_no_newline_at_end_of_file_is_not_a_line(repo: GitRepo) -> None:
    repo.write("n.txt", "old")
    repo.commit_base()
    repo.write("n.txt", "new")

    diff = repo.diff()
    [change] = parse_diff(diff)

    assert NO_NEWLINE + b"\n" in diff
    assert change.added_lines == ("new",)
    assert (change.added_count, change.removed_lines) == (1, 1)
    assert change.hunks == (
        Hunk(1, 1, 1, 1, (HunkLine("-", b"old"), HunkLine("+", b"new")), True, True),
    )


def test_missing_newline_on_one_side_and_context(repo: GitRepo) -> None:
    repo.write("gains.txt", "a\nb")
    repo.write("loses.txt", "a\nb\n")
    repo.write("same.txt", "".join(f"{n}\n" for n in range(9)) + "end")
    repo.commit_base()
    repo.write("gains.txt", "a\nb\nc\n")
    repo.write("loses.txt", "a\nB")
    repo.write("same.txt", "changed\n" + "".join(f"{n}\n" for n in range(1, 9)) + "end")

    changes = by_path(parse_diff(repo.diff()))

    [gains] = changes["gains.txt"].hunks
    assert (gains.old_missing_newline, gains.new_missing_newline) == (True, False)
    assert [line.marker for line in gains.lines] == [" ", "-", "+", "+"]
    [loses] = changes["loses.txt"].hunks
    assert (loses.old_missing_newline, loses.new_missing_newline) == (False, True)
    [same] = changes["same.txt"].hunks  # the unchanged last line is context
    assert (same.old_start, same.old_count) == (1, 4)
    assert not same.old_missing_newline


def test_carriage_returns_are_content(repo: GitRepo) -> None:
    repo.write("dos.txt", b"one\r\ntwo\r\n")
    repo.commit_base()
    repo.write("dos.txt", b"one\r\n2\r\n\r")

    [change] = parse_diff(repo.diff())

    assert [(line.marker, line.text) for line in change.hunks[0].lines] == [
        (" ", b"one\r"),
        ("-", b"two\r"),
        ("+", b"2\r"),
        ("+", b"\r"),
    ]
    assert change.added_lines == ("2\r", "\r")


def test_empty_context_lines_without_their_space(repo: GitRepo) -> None:
    repo.write("f", "a\n\nb\n")
    repo.commit_base()
    repo.write("f", "a\n\nc\n")

    repo.stage()
    diff = repo.git("-c", "diff.suppressBlankEmpty=true", "diff", "--cached", "--binary", repo.base)
    [change] = parse_diff(diff)

    assert b"\n\n-b\n" in diff
    assert change.hunks[0].lines[1] == HunkLine(" ", b"")


def test_added_line_that_looks_like_a_header_is_content(repo: GitRepo) -> None:
    repo.write("doc.txt", "intro\n")
    repo.commit_base()
    repo.write("doc.txt", "intro\ndiff --git a/x b/x\n--- a/x\n@@ -1 +1 @@\n")

    [change] = parse_diff(repo.diff())

    assert change.added_lines == ("diff --git a/x b/x", "--- a/x", "@@ -1 +1 @@")


def test_mode_change_without_content(repo: GitRepo) -> None:
    repo.write("run.sh", "echo hi\n")
    repo.commit_base()
    repo.path("run.sh").chmod(0o755)

    diff = repo.diff()
    [change] = parse_diff(diff)

    assert b"old mode 100644\nnew mode 100755\n" in diff
    assert (change.status, change.old_mode, change.new_mode) == ("modified", "100644", "100755")
    assert (change.added_count, change.removed_lines, change.added_lines) == (0, 0, ())
    assert (change.hunks, change.old_id, change.new_id) == ((), None, None)


def test_mode_and_content_change(repo: GitRepo) -> None:
    repo.write("run.sh", "echo hi\n")
    repo.commit_base()
    repo.write("run.sh", "echo bye\n", executable=True)

    [change] = parse_diff(repo.diff())

    assert (change.old_mode, change.new_mode, change.added_lines) == (
        "100644",
        "100755",
        ("echo bye",),
    )


def test_new_empty_file_and_new_executable(repo: GitRepo) -> None:
    repo.commit_base()
    repo.write("empty")
    repo.write("tool", "#!/bin/sh\n", executable=True)

    changes = by_path(parse_diff(repo.diff()))

    assert summary(changes["empty"]) == FileChange(
        "empty", "added", None, "100644", False, (), 0, 0
    )
    assert changes["empty"].hunks == ()
    assert (changes["empty"].old_id, changes["empty"].new_id) == ("0000000", "e69de29")
    assert changes["tool"].new_mode == "100755"
    assert changes["tool"].added_lines == ("#!/bin/sh",)


def test_git_binary_patch_literal_and_delta(repo: GitRepo) -> None:
    blob = bytes(range(256)) * 64
    repo.write("big.bin", blob)
    repo.commit_base()
    repo.write("big.bin", blob[:-10] + b"\x00" * 10)  # small change: git sends a delta
    repo.write("new.bin", b"\x00\x01\x02\xff")
    repo.write("after.txt", "text\n")

    diff = repo.diff()
    changes = by_path(parse_diff(diff))

    assert b"GIT binary patch\ndelta " in diff
    assert b"GIT binary patch\nliteral " in diff
    assert changes["big.bin"].binary
    assert changes["big.bin"].status == "modified"
    assert changes["new.bin"].binary
    assert changes["new.bin"].status == "added"
    assert (changes["new.bin"].added_count, changes["new.bin"].added_lines) == (0, ())
    assert not changes["after.txt"].binary
    assert changes["after.txt"].added_lines == ("text",)
    literal, delta = changes["new.bin"].binary_patch, changes["big.bin"].binary_patch
    assert literal is not None
    assert (literal.kind, literal.size, literal.data) == ("literal", 4, b"\x00\x01\x02\xff")
    assert delta is not None
    assert delta.kind == "delta"
    assert delta.size == len(delta.data) < 100
    assert apply_delta(blob, delta.data) == blob[:-10] + b"\x00" * 10
    # git prints full ids for binary files with --binary
    assert changes["big.bin"].old_id == blob_id(blob)
    assert changes["big.bin"].new_id == blob_id(blob[:-10] + b"\x00" * 10)
    assert changes["new.bin"].old_id == "0" * 40
    assert changes["after.txt"].binary_patch is None


def test_binary_deletion_and_large_literal(repo: GitRepo) -> None:
    repo.write("gone.bin", b"\x00" * 5000)
    repo.write("swap.bin", bytes(range(256)) * 40)
    repo.commit_base()
    repo.path("gone.bin").unlink()
    fresh = bytes((n * 7919) % 251 for n in range(30000))
    repo.write("swap.bin", fresh)

    changes = by_path(parse_diff(repo.diff()))

    gone = changes["gone.bin"].binary_patch
    assert gone is not None
    assert (gone.kind, gone.data) == ("literal", b"")
    swap = changes["swap.bin"].binary_patch
    assert swap is not None
    assert (swap.kind, swap.data) == ("literal", fresh)
    assert "data=" not in repr(swap)  # no 30 kB of bytes in a log line


def test_binary_files_differ_without_binary_flag(repo: GitRepo) -> None:
    repo.commit_base()
    repo.write("img.png", b"\x89PNG\x00\x00")
    repo.stage()
    diff = repo.git("diff", "--cached", "--no-renames", repo.base)

    [change] = parse_diff(diff)

    assert b"Binary files /dev/null and b/img.png differ" in diff
    assert (change.path, change.status, change.binary) == ("img.png", "added", True)


@pytest.mark.parametrize(
    "name",
    ["café.py", "with space.py", "tab\there.py", 'quote"d.py', "back\\slash.py", "dir/ü/ß x.txt"],
)
def test_quoted_and_special_paths(repo: GitRepo, name: str) -> None:
    repo.write("keep.txt", "k\n")
    repo.write(name, "old\n")
    repo.commit_base()
    repo.write(name, "new\n")
    repo.write("other " + name.replace("/", "_"), "added\n")

    changes = by_path(parse_diff(repo.diff()))

    assert changes[name].status == "modified"
    assert changes[name].added_lines == ("new",)
    assert changes["other " + name.replace("/", "_")].status == "added"


def test_git_quotes_non_ascii_and_the_parser_undoes_it(repo: GitRepo) -> None:
    repo.commit_base()
    repo.write("café.py", "x\n")

    diff = repo.diff()
    [change] = parse_diff(diff)

    assert b'"b/caf\\303\\251.py"' in diff
    assert change.path == "café.py"


def test_unquoted_utf8_paths_from_core_quotepath_false(repo: GitRepo) -> None:
    repo.commit_base()
    repo.write("café ü.py", "x\n")
    repo.stage()

    diff = repo.git("-c", "core.quotePath=false", "diff", "--cached", "--binary", repo.base)
    [change] = parse_diff(diff)

    assert "diff --git a/café ü.py b/café ü.py\n".encode() in diff
    assert change.path == "café ü.py"


def test_non_utf8_name_round_trips_as_surrogate_escapes(repo: GitRepo) -> None:
    repo.commit_base()
    repo.write(b"bad\xff.txt", "x\n")

    [change] = parse_diff(repo.diff())

    assert change.path == os.fsdecode(b"bad\xff.txt")
    assert change.path.encode("utf-8", "surrogateescape") == b"bad\xff.txt"


def test_deleted_file(repo: GitRepo) -> None:
    repo.write("old.py", "a\nb\n")
    repo.commit_base()
    repo.path("old.py").unlink()

    [change] = parse_diff(repo.diff())

    assert summary(change) == FileChange("old.py", "deleted", "100644", None, False, (), 2, 0)
    assert change.hunks == (Hunk(1, 2, 0, 0, (HunkLine("-", b"a"), HunkLine("-", b"b"))),)


def test_symlink_and_type_change(repo: GitRepo) -> None:
    repo.write("target.txt", "t\n")
    repo.write("was_file", "content\n")
    repo.commit_base()
    repo.path("link").symlink_to("target.txt")
    repo.path("was_file").unlink()
    repo.path("was_file").symlink_to("/etc/passwd")

    changes = parse_diff(repo.diff())

    link = next(change for change in changes if change.path == "link")
    assert (link.status, link.new_mode, link.added_lines) == ("added", "120000", ("target.txt",))
    # git shows a type change as a deletion and an addition of the same path
    was = [(c.status, c.old_mode, c.new_mode) for c in changes if c.path == "was_file"]
    assert was == [("deleted", "100644", None), ("added", None, "120000")]


def test_submodule_gitlink(repo: GitRepo) -> None:
    sha = repo.commit_base()
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{sha},sub")

    [change] = parse_diff(repo.git("diff", "--cached", "--binary", "--no-renames", repo.base))

    assert (change.path, change.status, change.new_mode) == ("sub", "added", "160000")
    assert change.added_lines == (f"Subproject commit {sha}",)
