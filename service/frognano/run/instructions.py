"""Guidance for the agent: the policy's instructions and the repository files it names."""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from frognano.agent.prompts import Guidance
from frognano.policy.models import AgentPolicy
from frognano.policy.paths import check_repo_path
from frognano.run.leftout import link_above
from frognano.run.report import InstructionFileRecord, InstructionFileStatus, InstructionsRecord

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_TOTAL_BYTES",
    "InstructionFile",
    "Instructions",
    "instructions_line",
    "read_instructions",
]

# A page of conventions fits; a file that tries to fill the context window does not. Over the
# cap a file is cut (with a note to the model and in the report), not dropped: its start is
# usually the part that matters.
MAX_FILE_BYTES = 16 * 1024
MAX_TOTAL_BYTES = 32 * 1024
"""All files together; a file past it is cut to what is left, or skipped when nothing is."""

# Never a path through a link, never a FIFO that would block the read, never the fd leaked
# into a child process.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class InstructionFile:
    """What became of one path of `agent.instructions_files`."""

    path: str
    status: InstructionFileStatus
    text: str = ""
    """What the agent gets (only when used)."""
    size: int | None = None
    cut: bool = False
    reason: str | None = None

    @property
    def used_bytes(self) -> int:
        return len(self.text.encode())

    def record(self) -> InstructionFileRecord:
        return {
            "path": self.path,
            "status": self.status,
            "bytes": self.used_bytes,
            "size": self.size,
            "cut": self.cut,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Instructions:
    """The policy's text and every file it names, read once before the agent starts."""

    policy_text: str
    files: tuple[InstructionFile, ...] = ()

    def guidance(self) -> tuple[Guidance, ...]:
        """The blocks of the agent's first message: the admins' text first, then the files."""
        found = [Guidance(self.policy_text)] if self.policy_text.strip() else []
        found += [
            Guidance(item.text, item.path, item.size if item.cut else None)
            for item in self.files
            if item.status == "used"
        ]
        return tuple(found)

    def record(self) -> InstructionsRecord:
        return {
            "policy_text_bytes": len(self.policy_text.encode()) if self.policy_text.strip() else 0,
            "files": [item.record() for item in self.files],
        }


def read_instructions(
    root: Path,
    agent: AgentPolicy,
    exclude: Collection[str] = (),
    outside_links: Collection[str] = (),
) -> Instructions:
    """The policy's `agent.instructions` and its `agent.instructions_files`, read from `root`,
    the base tree on the host, minus `exclude` (what the upload leaves out). `outside_links`
    are the paths of the repository's symlinks that `root` lacks because they lead outside
    it (leftout.py): a file at one, or below one, is skipped saying so, not absent.

    Nothing here raises for a file: an absent one is listed as absent, a refused one as
    skipped with the reason. The repository can only supply text; which files are read, and
    how much of them, is the policy's and this module's decision.
    """
    left_out = {posixpath.normpath(path) for path in exclude}
    budget = MAX_TOTAL_BYTES
    files = []
    for path in agent.instructions_files:
        found = _read(root, path, left_out, outside_links, min(MAX_FILE_BYTES, budget))
        budget -= found.used_bytes
        files.append(found)
    return Instructions(agent.instructions, tuple(files))


class _Refused(Exception):
    def __init__(self, status: InstructionFileStatus, reason: str | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def _read(  # noqa: PLR0911 - one return per outcome
    root: Path, path: str, left_out: Collection[str], outside_links: Collection[str], limit: int
) -> InstructionFile:
    # Checked again although the policy loader refuses such paths: a job built in code may
    # carry a policy that never went through a file.
    problem = check_repo_path(path)
    if problem is not None:
        return InstructionFile(path, "skipped", reason=problem)
    link = link_above(path, outside_links)
    if link is not None:
        return InstructionFile(path, "skipped", reason=_outside(path, link))
    try:
        fd = _open_in_tree(root, path, left_out)
    except _Refused as refused:
        return InstructionFile(path, refused.status, reason=refused.reason)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if limit <= 0:
            reason = f"the files before it used all {MAX_TOTAL_BYTES:,} bytes allowed in all"
            return InstructionFile(path, "skipped", size=size, reason=reason)
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            return InstructionFile(path, "skipped", size=size, reason=_cannot(exc))
    cut = len(data) > limit
    try:
        text = _decode(data[:limit], cut)
    except UnicodeDecodeError as exc:
        reason = f"it is not UTF-8 text ({exc.reason} at byte {exc.start})"
        return InstructionFile(path, "skipped", size=size, reason=reason)
    if not text.strip():
        return InstructionFile(path, "skipped", size=size, reason="it is empty")
    return InstructionFile(path, "used", text, size=size, cut=cut)


def _open_in_tree(root: Path, path: str, left_out: Collection[str]) -> int:
    """A descriptor of the regular file `path` under `root`, reached one component at a time
    without following any symlink."""
    parts = path.split("/")
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _Refused("skipped", f"the base tree cannot be opened ({exc.strerror})") from None
    try:
        for index, name in enumerate(parts):
            where = "/".join(parts[: index + 1])
            child = _step(fd, name, path, where, left_out, last=index == len(parts) - 1)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _step(
    parent: int, name: str, path: str, where: str, left_out: Collection[str], *, last: bool
) -> int:
    """Open the component `where` of `path` in the folder `parent`: looked at with lstat, then
    opened with O_NOFOLLOW relative to its parent, so a link put there in between is refused
    too, and a folder's link can never lead outside the tree."""
    info = _lstat(name, parent, where)
    if where in left_out:
        raise _Refused("skipped", f"{where} is left out of the uploaded tree")
    if stat.S_ISLNK(info.st_mode):
        raise _Refused("skipped", _link(path, where))
    if not last and not stat.S_ISDIR(info.st_mode):
        raise _Refused("absent")  # `a/b` where `a` is a file names nothing
    if last and not stat.S_ISREG(info.st_mode):
        raise _Refused("skipped", "it is not a regular file")
    try:
        child = os.open(name, _FILE_FLAGS if last else _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # replaced by a link meanwhile
            raise _Refused("skipped", _link(path, where)) from None
        raise _Refused("skipped", _cannot(exc)) from None
    if last and not stat.S_ISREG(os.fstat(child).st_mode):
        os.close(child)
        raise _Refused("skipped", "it is not a regular file")
    return child


def _lstat(name: str, dir_fd: int, where: str) -> os.stat_result:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        raise _Refused("absent") from None
    except OSError as exc:
        raise _Refused("skipped", f"{where}: {_cannot(exc)}") from None


def _link(path: str, where: str) -> str:
    if where == path:
        return "it is a symbolic link, and FrogNano follows none"
    return f"it is inside {where}, a symbolic link, and FrogNano follows none"


def _outside(path: str, link: str) -> str:
    where = "it is" if link == path else f"it is inside {link},"
    return (
        f"{where} a symbolic link leading outside the repository, which FrogNano left out "
        "of the tree"
    )


def _cannot(exc: OSError) -> str:
    return f"it cannot be read ({exc.strerror or exc})"


def _decode(data: bytes, cut: bool) -> str:
    """Strict UTF-8; a file cut in the middle of a character loses that character only."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not (cut and exc.reason == "unexpected end of data" and exc.end == len(data)):
            raise
        text = data[: exc.start].decode("utf-8")
    return text.removeprefix("\ufeff")


def instructions_line(
    record: InstructionsRecord, quote: Callable[[str], str], *, absent: bool
) -> str | None:
    """`Instructions for the agent: ...` in one line: what went into the first message and
    what was skipped (and with `absent`, what was not there); None when that is nothing."""
    parts = []
    if record["policy_text_bytes"]:
        parts.append(f"the policy's text ({record['policy_text_bytes']:,} bytes)")
    for item in record["files"]:
        name = quote(item["path"])
        if item["status"] == "used":
            parts.append(f"{name} ({item['bytes']:,} bytes{', cut' if item['cut'] else ''})")
        elif item["status"] == "skipped":
            parts.append(f"{name} skipped: {item['reason']}")
        elif absent:
            parts.append(f"{name} absent")
    return f"Instructions for the agent: {'; '.join(parts)}" if parts else None
