"""The Sandbox protocol, its result type, and file operations shared by every backend."""

from __future__ import annotations

import asyncio
import errno
import os
import posixpath
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Protocol, Self, runtime_checkable

from frognano.errors import UnsafePathError
from frognano.sandbox.hostpaths import HostPaths
from frognano.sandbox.paths import WORKSPACE
from frognano.sandbox.pyenv import PythonEnv
from frognano.sandbox.tree import FileSpec, files_tar, scan_tree, write_tar

DEFAULT_TIMEOUT = 120.0
DEFAULT_OUTPUT_LIMIT = 2 * 1024 * 1024
DEFAULT_READ_LIMIT = 64 * 1024 * 1024
# Linux refuses a single argv string over 128 KiB (MAX_ARG_STRLEN); a model turn of 8,192
# tokens cannot produce one, so a longer command is reported rather than streamed in.
MAX_COMMAND_BYTES = 120_000


@dataclass(frozen=True)
class ExecResult:
    """What a command did inside the sandbox. Failures, crashes and timeouts all end here."""

    exit_code: int | None
    """The command's exit status (128 + N when signal N killed it); None when it was killed
    at the timeout and has no status of its own."""
    output: str
    """stdout and stderr together in the order they arrived, head and tail kept if capped."""
    duration: float
    """Seconds from start to the last byte of output."""
    timed_out: bool = False
    truncated: bool = False
    """True when output exceeded the cap and its middle was dropped."""
    stderr: str | None = None
    """stderr alone, only when `split_stderr=True` was asked for."""
    stdout: str | None = None
    """stdout alone, only when `split_stderr=True` was asked for."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass(frozen=True)
class RawResult:
    """A backend's undecoded result; `stdout` and `stderr` are set only when split."""

    exit_code: int | None
    output: bytes
    duration: float
    timed_out: bool = False
    truncated: bool = False
    stdout: bytes | None = None
    stderr: bytes | None = None


@runtime_checkable
class Sandbox(Protocol):
    """An isolated place to run agent-chosen commands; see docs/sandbox.md for guarantees."""

    backend: ClassVar[str]

    # What a run records and needs of a sandbox beyond its operations. Every backend answers
    # each one; None means the backend has no such thing.
    @property
    def mechanism(self) -> str | None:
        """How commands are isolated, for the records (report.json, the trajectory, logs):
        local `bwrap` or `unshare`; Kubernetes `pod NAMESPACE/NAME`."""
        ...

    @property
    def python_env(self) -> PythonEnv | None:
        """The host Python environment mounted read-only at its own path (pyenv.py): local,
        the one resolved at creation; Kubernetes None (the pod's image brings its own)."""
        ...

    @property
    def host_paths(self) -> HostPaths | None:
        """The host folders commands see at their own paths, each with its placeholder
        (hostpaths.py): local, the Python environment's; Kubernetes None (a pod mounts nothing
        from this host)."""
        ...

    async def exec(
        self,
        command: str,
        *,
        cwd: str = WORKSPACE,
        timeout: float = DEFAULT_TIMEOUT,
        stdin: bytes | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        split_stderr: bool = False,
    ) -> ExecResult:
        """Run `command` with bash; whatever it does comes back as a result."""
        ...

    async def read_file(self, path: str, *, max_bytes: int = DEFAULT_READ_LIMIT) -> bytes: ...

    async def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None: ...

    async def upload_tree(
        self,
        source: Path,
        dest: str = WORKSPACE,
        *,
        exclude: Collection[str] = (),
        timeout: float = 1800.0,
    ) -> None: ...

    async def upload_files(
        self, files: Sequence[FileSpec], dest: str = WORKSPACE, *, timeout: float = 600.0
    ) -> None: ...

    async def close(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


def sandbox_path(path: str) -> str:
    """Normalise an absolute path inside the sandbox, or raise UnsafePathError."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise UnsafePathError(f"sandbox paths must be absolute, got {path!r}")
    if "\0" in path:
        raise UnsafePathError("sandbox paths must not contain NUL bytes")
    return posixpath.normpath(path)


# File operations run as small bash scripts inside the sandbox, never on the host: a path the
# agent controls may be a symlink, and only inside the sandbox does it resolve harmlessly.
# Exit codes carry errno values so the host can raise the matching OSError subclass.
_READ = r"""
p=$1 max=$2
if [ -d "$p" ]; then echo "Is a directory" >&2; exit 21; fi
if [ ! -e "$p" ]; then echo "No such file or directory" >&2; exit 2; fi
if [ ! -f "$p" ]; then echo "Not a regular file" >&2; exit 22; fi
if [ ! -r "$p" ]; then echo "Permission denied" >&2; exit 13; fi
size=$(stat -L -c %s -- "$p") || exit 5
if [ "$size" -gt "$max" ]; then
  echo "File is $size bytes, over the $max-byte limit" >&2; exit 27
fi
exec cat -- "$p"
"""
_WRITE = r"""
p=$1 mode=$2
if [ -d "$p" ]; then echo "Is a directory" >&2; exit 21; fi
case $p in */*) d=${p%/*}; [ -z "$d" ] || mkdir -p -- "$d" || exit 1 ;; esac
cat > "$p" || exit 1
chmod "$mode" -- "$p"
"""
_UPLOAD = r"""
mkdir -p -- "$1" && exec tar -x -p --no-same-owner --delay-directory-restore -f - -C "$1"
"""
_MESSAGES = (
    ("Read-only file system", errno.EROFS),
    ("Permission denied", errno.EACCES),
    ("Operation not permitted", errno.EPERM),
    ("No such file or directory", errno.ENOENT),
    ("Not a directory", errno.ENOTDIR),
    ("Is a directory", errno.EISDIR),
    ("No space left on device", errno.ENOSPC),
    ("Disk quota exceeded", errno.EDQUOT),
    ("File too large", errno.EFBIG),
)


def _os_error(raw: RawResult, path: str) -> OSError:
    message = (raw.stderr or raw.output).decode("utf-8", "replace").strip()
    code = raw.exit_code if raw.exit_code is not None and raw.exit_code in errno.errorcode else 0
    code = code or errno.EIO
    if code in (1, errno.EIO):
        code = next((num for text, num in _MESSAGES if text in message), errno.EIO)
    if raw.timed_out:
        code, message = errno.ETIMEDOUT, "the file operation timed out"
    # OSError(errno, ...) builds the matching subclass: FileNotFoundError for ENOENT, etc.
    return OSError(code, message or os.strerror(code), path)


class SandboxBase(ABC):
    """Implements the protocol's file operations and result decoding over one primitive."""

    backend: ClassVar[str]

    @abstractmethod
    async def _spawn(
        self,
        script: str,
        args: Sequence[str],
        *,
        cwd: str,
        timeout: float,
        stdin: bytes | int | None,
        output_limit: int,
        split: bool,
    ) -> RawResult:
        """Run `bash -c script _ args...` in the sandbox; raise SandboxError only for the
        sandbox failing. `stdin` is data to feed, a file descriptor to read from, or None."""

    @abstractmethod
    async def close(self) -> None: ...

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def exec(
        self,
        command: str,
        *,
        cwd: str = WORKSPACE,
        timeout: float = DEFAULT_TIMEOUT,
        stdin: bytes | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        split_stderr: bool = False,
    ) -> ExecResult:
        cwd = sandbox_path(cwd)
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        size = len(command.encode("utf-8", "surrogateescape"))
        if size > MAX_COMMAND_BYTES:
            return ExecResult(
                exit_code=126,
                output=f"frognano: the command is {size} bytes long; the limit is "
                f"{MAX_COMMAND_BYTES}. Write long scripts to a file first and run that.",
                duration=0.0,
            )
        raw = await self._spawn(
            command,
            (),
            cwd=cwd,
            timeout=timeout,
            stdin=stdin,
            output_limit=output_limit,
            split=split_stderr,
        )
        return ExecResult(
            exit_code=raw.exit_code,
            output=raw.output.decode("utf-8", "replace"),
            duration=raw.duration,
            timed_out=raw.timed_out,
            truncated=raw.truncated,
            stderr=None if raw.stderr is None else raw.stderr.decode("utf-8", "replace"),
            stdout=None if raw.stdout is None else raw.stdout.decode("utf-8", "replace"),
        )

    async def read_file(self, path: str, *, max_bytes: int = DEFAULT_READ_LIMIT) -> bytes:
        """The file's bytes; FileNotFoundError, IsADirectoryError, PermissionError or OSError."""
        path = sandbox_path(path)
        raw = await self._spawn(
            _READ,
            (path, str(max_bytes)),
            cwd="/",
            timeout=DEFAULT_TIMEOUT,
            stdin=None,
            output_limit=max_bytes + 2,
            split=True,
        )
        if raw.exit_code != 0 or raw.timed_out:
            raise _os_error(raw, path)
        if raw.truncated:
            raise OSError(errno.EFBIG, f"file grew past the {max_bytes}-byte limit", path)
        return raw.stdout or b""

    async def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        """Create or replace a file (parents created), or raise the matching OSError."""
        path = sandbox_path(path)
        if not 0 <= mode <= 0o777:
            raise ValueError(f"mode must be permission bits (0 to 0o777), got {mode:#o}")
        raw = await self._spawn(
            _WRITE,
            (path, f"{mode:o}"),
            cwd="/",
            timeout=DEFAULT_TIMEOUT,
            stdin=data,
            output_limit=64 * 1024,
            split=True,
        )
        if raw.exit_code != 0 or raw.timed_out:
            raise _os_error(raw, path)

    async def upload_tree(
        self,
        source: Path,
        dest: str = WORKSPACE,
        *,
        exclude: Collection[str] = (),
        timeout: float = 1800.0,
    ) -> None:
        """Copy a host directory into the sandbox with modes and symlinks; refuse escapes.

        The whole tree is checked before anything is copied, so a refused tree leaves the
        sandbox untouched. The tar stream is extracted by the sandbox user inside the sandbox.
        `exclude` lists relative paths to leave out.
        """
        dest = sandbox_path(dest)
        entries = await asyncio.to_thread(scan_tree, source, exclude)
        read_end, write_end = os.pipe()
        writer = asyncio.create_task(asyncio.to_thread(write_tar, source, entries, write_end))
        try:
            raw = await self._spawn(
                _UPLOAD,
                (dest,),
                cwd="/",
                timeout=timeout,
                stdin=read_end,
                output_limit=64 * 1024,
                split=True,
            )
        finally:
            # Closing our copy lets a writer blocked on a dead reader fail instead of hanging.
            os.close(read_end)
            streamed = await asyncio.gather(writer, return_exceptions=True)
        failure = streamed[0]
        if isinstance(failure, BaseException) and not isinstance(failure, BrokenPipeError):
            raise failure  # the host tree changed or became unreadable while streaming
        if raw.exit_code != 0 or raw.timed_out:
            raise _os_error(raw, dest)

    async def upload_files(
        self, files: Sequence[FileSpec], dest: str = WORKSPACE, *, timeout: float = 600.0
    ) -> None:
        """Create `files` under `dest` from memory (parents made, existing files replaced);
        nothing of the host's file system is read."""
        dest = sandbox_path(dest)
        if not files:
            return
        raw = await self._spawn(
            _UPLOAD,
            (dest,),
            cwd="/",
            timeout=timeout,
            stdin=files_tar(files),
            output_limit=64 * 1024,
            split=True,
        )
        if raw.exit_code != 0 or raw.timed_out:
            raise _os_error(raw, dest)
