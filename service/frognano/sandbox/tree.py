"""Turning a host directory into a tar stream that cannot escape its destination."""

from __future__ import annotations

import io
import os
import posixpath
import stat
import tarfile
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from frognano.errors import UnsafePathError

# setuid, setgid and sticky bits never travel into a sandbox.
_PERMISSION_BITS = 0o777


@dataclass(frozen=True)
class TreeEntry:
    """One path of the tree, relative to its root, as it will be recreated."""

    relpath: str
    kind: str  # "dir", "file" or "symlink"
    mode: int
    mtime: float
    size: int = 0
    target: str = ""


def _check_link(relpath: str, target: str) -> None:
    if target.startswith("/"):
        raise UnsafePathError(
            f"{relpath} is a symlink to the absolute path {target}, which would point outside "
            "the copied tree; make it relative or remove it"
        )
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(relpath), target))
    if resolved == ".." or resolved.startswith("../"):
        raise UnsafePathError(
            f"{relpath} is a symlink to {target}, which points outside the copied tree; "
            "remove it or point it inside"
        )


def scan_tree(source: Path, exclude: Collection[str] = ()) -> list[TreeEntry]:
    """List every entry under `source`, raising UnsafePathError for anything that would escape
    it (absolute or climbing symlinks) or cannot be copied (sockets, devices, FIFOs).

    `exclude` names relative paths (files or whole directories) to leave out.
    """
    if not source.is_dir():
        raise UnsafePathError(f"{source} is not a directory")
    skipped = {posixpath.normpath(path) for path in exclude}
    root = source.resolve()
    entries: list[TreeEntry] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        base = os.path.relpath(dirpath, root)
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            relpath = name if base == "." else f"{base}/{name}"
            if relpath in skipped:
                if name in dirnames:
                    dirnames.remove(name)
                continue
            info = os.lstat(full)
            mode = info.st_mode & _PERMISSION_BITS
            if stat.S_ISLNK(info.st_mode):
                target = os.readlink(full)
                _check_link(relpath, target)
                entries.append(TreeEntry(relpath, "symlink", 0o777, info.st_mtime, target=target))
                if name in dirnames:
                    dirnames.remove(name)  # a link to a directory is copied as a link
            elif stat.S_ISDIR(info.st_mode):
                entries.append(TreeEntry(relpath, "dir", mode, info.st_mtime))
            elif stat.S_ISREG(info.st_mode):
                entries.append(TreeEntry(relpath, "file", mode, info.st_mtime, size=info.st_size))
            else:
                raise UnsafePathError(
                    f"{relpath} is a special file (socket, FIFO or device) and cannot be copied "
                    "into a sandbox; remove it from the tree"
                )
    return entries


def write_tar(source: Path, entries: list[TreeEntry], fd: int) -> None:
    """Stream `entries` as an uncompressed PAX tar into `fd`, closing it at the end."""
    root = source.resolve()
    with (
        os.fdopen(fd, "wb", buffering=1024 * 1024) as pipe,
        tarfile.open(fileobj=pipe, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        for entry in entries:
            info = tarfile.TarInfo(entry.relpath)
            info.mode = entry.mode
            info.mtime = int(entry.mtime)
            if entry.kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif entry.kind == "symlink":
                info.type = tarfile.SYMTYPE
                info.linkname = entry.target
                tar.addfile(info)
            else:
                with open(root / entry.relpath, "rb") as handle:
                    # The size is taken now, not at scan time, so a file that changed in
                    # between is copied whole rather than cut or padded.
                    info.size = os.fstat(handle.fileno()).st_size
                    tar.addfile(info, _Exactly(handle, info.size))


@dataclass(frozen=True)
class FileSpec:
    """A file (or symlink) to create in a sandbox from bytes FrogNano holds in memory."""

    relpath: str
    data: bytes
    """The content, or a symlink's target."""
    mode: int = 0o644
    symlink: bool = False


def files_tar(files: Collection[FileSpec]) -> bytes:
    """`files` as an uncompressed PAX tar, refusing any path or link that would escape."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for spec in files:
            relpath = posixpath.normpath(spec.relpath)
            if relpath != spec.relpath or relpath.startswith(("/", "../")) or relpath == "..":
                raise UnsafePathError(f"{spec.relpath!r} is not a plain relative path")
            info = tarfile.TarInfo(relpath)
            info.mode = spec.mode & _PERMISSION_BITS
            if spec.symlink:
                target = spec.data.decode("utf-8", "surrogateescape")
                _check_link(relpath, target)
                info.type = tarfile.SYMTYPE
                info.linkname = target
                tar.addfile(info)
            else:
                info.size = len(spec.data)
                tar.addfile(info, io.BytesIO(spec.data))
    return buffer.getvalue()


class _Exactly(io.RawIOBase):
    """Reads exactly `size` bytes from `handle` (zero-filled if the file shrank meanwhile)."""

    def __init__(self, handle: io.BufferedReader, size: int) -> None:
        self._handle = handle
        self._left = size

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        n = self._left if n < 0 else min(n, self._left)
        data = self._handle.read(n) or b"\0" * n
        self._left -= len(data)
        return data
