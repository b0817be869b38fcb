"""The applier against real git: random base trees and changes, compared byte for byte."""

from __future__ import annotations

import os
import random
import stat
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from frognano.policy.gate.diff import parse_diff
from frognano.run.apply import AppliedFile, MemoryTree, apply_diff
from tests.policy.gitrepo import GitRepo

CASES = 220
BASE_NAMES = (
    "a.txt", "b.py", "crlf.txt", "empty", "bin.dat", "big.bin", "run.sh", "link", "dir/c.txt",
    "dir/sub/d.md", "dir/sub/e", "sp ace.txt", "café.txt", "tab\tname", 'q"uote', "back\\slash",
    os.fsdecode(b"bad\xff.txt"), "dir/\abell", "big2.bin",
)  # fmt: skip
NEW_NAMES = (
    "new.txt", "dir/new.bin", "fresh/dir/x.txt", "new link", "néw", os.fsdecode(b"n\xfe.bin"),
    "dir/sub/new.sh", "new empty",
)  # fmt: skip
WORDS = ("alpha", "beta", "gamma", "", "x = 1", "return x", "}", "\t# note", "ünï", "  ")

Tree = dict[str, tuple[str, bytes]]


def read_tree(root: Path) -> Tree:
    """Every file and symlink under root (outside .git), as git would store it."""
    tree: Tree = {}
    top = os.fsencode(root)
    for folder, dirs, files in os.walk(top):
        dirs[:] = [name for name in dirs if not (folder == top and name == b".git")]
        # os.walk lists a symlink to a directory among the directories, and does not follow it
        links = [name for name in dirs if os.path.islink(os.path.join(folder, name))]
        for name in [*files, *links]:
            full = os.path.join(folder, name)
            path = os.fsdecode(os.path.relpath(full, top))
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                tree[path] = ("120000", os.readlink(full))
            else:
                mode = "100755" if info.st_mode & stat.S_IXUSR else "100644"
                tree[path] = (mode, Path(os.fsdecode(full)).read_bytes())
    return tree


def text(rng: random.Random, crlf: bool = False) -> bytes:
    ending = "\r\n" if crlf else "\n"
    lines = [rng.choice(WORDS) for _ in range(rng.randrange(0, 30))]
    if crlf and lines and rng.random() < 0.3:
        lines[rng.randrange(len(lines))] += "\r"  # a lone \r at the end of one line's text
    data = "".join(line + ending for line in lines)
    if data and rng.random() < 0.3:
        data = data[: -len(ending)]  # no newline at the end of the file
    return data.encode()


def binary(rng: random.Random, large: bool) -> bytes:
    size = rng.randrange(3000, 20000) if large else rng.randrange(1, 300)
    data = bytearray(rng.randbytes(size))
    data[rng.randrange(size)] = 0  # git takes a file with a NUL for binary
    return bytes(data)


def edit_text(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    for _ in range(rng.randrange(1, 4)):
        operation = rng.choice(("replace", "start", "end", "delete", "newline"))
        word = rng.choice(WORDS).encode()
        if operation == "replace" and lines:
            lines[rng.randrange(len(lines))] = word
        elif operation == "start":
            lines.insert(0, word)
        elif operation == "end":
            lines.append(word)
        elif operation == "delete" and lines:
            start = rng.randrange(len(lines))
            del lines[start : start + rng.randrange(1, 4)]
        elif operation == "newline":  # toggle the final newline
            lines = lines[:-1] if lines and lines[-1] == b"" else [*lines, b""]
    return b"\n".join(lines)


def edit_binary(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        at = rng.randrange(len(out) + 1)
        out[at : at + rng.randrange(0, 8)] = rng.randbytes(rng.randrange(0, 8))
    return bytes(out) or b"\0"


def random_file(rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(("text", "text", "crlf", "empty", "small", "large", "exec", "link"))
    if kind == "link":
        return "120000", rng.choice((b"a.txt", b"../outside", b"dir/sub", b"no such", b"caf\xc3"))
    mode = "100755" if kind == "exec" or rng.random() < 0.1 else "100644"
    contents: dict[str, Callable[[], bytes]] = {
        "text": lambda: text(rng),
        "exec": lambda: text(rng),
        "crlf": lambda: text(rng, crlf=True),
        "empty": lambda: b"",
        "small": lambda: binary(rng, large=False),
        "large": lambda: binary(rng, large=True),
    }
    return mode, contents[kind]()


def put(repo: GitRepo, path: str, mode: str, content: bytes) -> None:
    full = os.path.join(os.fsencode(repo.root), os.fsencode(path))
    if os.path.lexists(full):
        os.unlink(full)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    if mode == "120000":
        os.symlink(content, full)
    else:
        Path(os.fsdecode(full)).write_bytes(content)
        os.chmod(full, 0o755 if mode == "100755" else 0o644)


def change(rng: random.Random, repo: GitRepo, path: str, mode: str, content: bytes) -> str:
    """One random change of a base file; returns its kind."""
    kinds = ["delete", "type", "rewrite"]
    if mode == "120000":
        kinds += ["retarget"]
    else:
        kinds += ["chmod", "chmod+edit", "edit", "edit", "edit", "empty"]
    kind = rng.choice(kinds)
    if kind == "delete":
        os.unlink(os.path.join(os.fsencode(repo.root), os.fsencode(path)))
    elif kind == "type":  # file <-> symlink: git prints a deletion and an addition
        if mode == "120000":
            put(repo, path, "100644", text(rng))
        else:
            put(repo, path, "120000", rng.choice((b"a.txt", b"dir", b"../x")))
    elif kind == "retarget":
        put(repo, path, mode, content + b"2")
    elif kind == "rewrite":
        put(repo, path, *random_file(rng))
    elif kind == "empty":
        put(repo, path, mode, b"")
    else:
        if kind.startswith("chmod"):
            mode = "100644" if mode == "100755" else "100755"
        if kind.endswith("edit"):
            binary_file = b"\0" in content
            content = edit_binary(rng, content) if binary_file else edit_text(rng, content)
        put(repo, path, mode, content)
    return kind


def run_case(rng: random.Random, root: Path, seen: Counter[str]) -> None:
    repo = GitRepo(root)
    for path in rng.sample(BASE_NAMES, rng.randrange(1, 8)):
        put(repo, path, *random_file(rng))
    repo.commit_base()
    base = read_tree(root)
    for path in rng.sample(sorted(base), rng.randrange(0, len(base) + 1)):
        seen[change(rng, repo, path, *base[path])] += 1
    for path in rng.sample(NEW_NAMES, rng.randrange(0, 3)):
        put(repo, path, *(("100644", b"") if path == "new empty" else random_file(rng)))

    diff = repo.diff()
    changes = parse_diff(diff)
    applied = apply_diff(changes, MemoryTree(base))

    expected = read_tree(root)
    assert [file.path for file in applied] == sorted(
        {change.path for change in changes}, key=os.fsencode
    )
    assert overlay(base, applied) == expected, diff.decode(errors="replace")
    for item in changes:
        if item.binary_patch is not None:
            seen[f"binary {item.binary_patch.kind}"] += 1
        seen["missing newline"] += any(h.old_missing_newline for h in item.hunks)
        seen["crlf"] += any(line.text.endswith(b"\r") for h in item.hunks for line in h.lines)
        seen["non-UTF-8 path"] += "\udcff" in item.path or "\udcfe" in item.path
        seen[item.status] += 1


def overlay(base: Tree, applied: tuple[AppliedFile, ...]) -> Tree:
    tree = dict(base)
    for file in applied:
        if file.content is None:
            del tree[file.path]
        else:
            tree[file.path] = (file.mode, file.content)
    return tree


def test_apply_matches_git_on_random_trees(tmp_path: Path) -> None:
    rng = random.Random(20240611)  # noqa: S311 - a fixed seed: the same cases every run
    seen: Counter[str] = Counter()
    for number in range(CASES):
        run_case(rng, tmp_path / str(number), seen)
    # Every kind of change this test means to cover came up (the seed is fixed, so this
    # guards against a later edit of the generators quietly dropping one).
    for kind in ("binary literal", "binary delta", "missing newline", "crlf", "type", "chmod",
                 "chmod+edit", "retarget", "delete", "added", "deleted", "modified", "empty",
                 "non-UTF-8 path"):  # fmt: skip
        assert seen[kind] > 0, (kind, seen)
