"""The base tree on the host, and the trees each test run gets, built from it and a diff."""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from frognano.run.apply import AppliedFile, BaseEntry
from frognano.sandbox.base import Sandbox
from frognano.sandbox.paths import WORKSPACE
from frognano.sandbox.tree import FileSpec, TreeEntry, scan_tree

SYMLINK_MODE = "120000"


def git_mode(entry: TreeEntry) -> str:
    """The mode git records for a scanned entry (executable: the owner's x bit, as git does)."""
    if entry.kind == "symlink":
        return SYMLINK_MODE
    return "100755" if entry.mode & stat.S_IXUSR else "100644"


@dataclass(frozen=True)
class HostTree:
    """The repository as uploaded to every sandbox: `root` minus `exclude`, indexed once.

    Content is read from the host only for paths in the index, which `scan_tree` built
    without following links, so a diff can never make FrogNano read outside the tree.
    """

    root: Path
    exclude: tuple[str, ...]
    entries: Mapping[str, TreeEntry]

    @classmethod
    async def scan(cls, root: Path, exclude: Collection[str]) -> HostTree:
        resolved = await asyncio.to_thread(root.resolve)
        listed = await asyncio.to_thread(scan_tree, resolved, exclude)
        return cls(resolved, tuple(exclude), {entry.relpath: entry for entry in listed})

    def entry(self, path: str) -> BaseEntry | None:
        found = self.entries.get(path)
        if found is None:
            return None
        if found.kind == "dir":
            return BaseEntry("dir", "040000")
        return BaseEntry("symlink" if found.kind == "symlink" else "file", git_mode(found))

    def read(self, path: str) -> bytes:
        found = self.entries.get(path)
        if found is None or found.kind == "dir":
            raise FileNotFoundError(path)
        full = self.root / path
        if found.kind == "symlink":
            return os.fsencode(os.readlink(full))
        # O_NOFOLLOW: the index said "file"; a link put there since is refused, not followed.
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            return handle.read()

    @property
    def paths(self) -> frozenset[str]:
        """Files and symlinks (what git tracks), not directories."""
        return frozenset(p for p, e in self.entries.items() if e.kind != "dir")

    def digest(self) -> str:
        """sha256 over every path, mode and content: the identity of this base for caching."""
        hasher = hashlib.sha256(b"frognano-tree-v1\0")
        for path in sorted(self.paths):
            entry = self.entries[path]
            content = hashlib.sha256(self.read(path)).hexdigest()
            line = f"{git_mode(entry)} {content} ".encode() + os.fsencode(path) + b"\0"
            hasher.update(line)
        return hasher.hexdigest()


@dataclass(frozen=True)
class Overlay:
    """What one test run's tree differs in from the base: files written, paths removed."""

    files: tuple[AppliedFile, ...] = ()

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(change.path for change in self.files)


def overlay(changes: Iterable[AppliedFile]) -> Overlay:
    return Overlay(tuple(sorted(changes, key=lambda change: change.path)))


async def build_tree(sandbox: Sandbox, base: HostTree, layer: Overlay) -> None:
    """Upload the base, then apply `layer`: deletions (and anything a symlink replaces) go
    first, then the new bytes, all written by FrogNano from memory."""
    await sandbox.upload_tree(base.root, exclude=base.exclude)
    await apply_overlay(sandbox, base, layer)


async def apply_overlay(sandbox: Sandbox, base: HostTree, layer: Overlay) -> None:
    """Make the uploaded `base` in /workspace into base + `layer`, from FrogNano's memory."""
    removed = [
        change.path
        for change in layer.files
        # A symlink or a file where the base has a directory (emptied by the diff) or a
        # file replaces what is there; tar would follow or refuse it otherwise.
        if change.content is None or _is_link(change) or _is_dir(base, change.path)
    ]
    if removed:
        await _remove(sandbox, removed)
    written = [
        FileSpec(
            change.path,
            change.content,
            mode=0o755 if change.mode == "100755" else 0o644,
            symlink=_is_link(change),
        )
        for change in layer.files
        if change.content is not None
    ]
    await sandbox.upload_files(written)


def _is_dir(base: HostTree, path: str) -> bool:
    entry = base.entries.get(path)
    return entry is not None and entry.kind == "dir"


def _is_link(change: AppliedFile) -> bool:
    return change.mode == SYMLINK_MODE


async def _remove(sandbox: Sandbox, paths: Sequence[str]) -> None:
    stdin = b"".join(os.fsencode(path) + b"\0" for path in paths)
    result = await sandbox.exec(
        "xargs -0 -r rm -rf --", cwd=WORKSPACE, timeout=300, stdin=stdin, split_stderr=True
    )
    if not result.ok:
        raise OSError(f"could not remove files in the sandbox: {(result.stderr or '').strip()}")
