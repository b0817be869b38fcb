"""Apply a parsed `git diff --binary` to a base tree strictly: the exact result, or PatchError."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from frognano.policy.gate.diff import FileChange, Hunk, HunkLine
from frognano.policy.gate.gitbinary import apply_delta

__all__ = [
    "AppliedFile",
    "BaseEntry",
    "BaseTree",
    "EntryKind",
    "MemoryTree",
    "PatchError",
    "apply_diff",
    "blob_id",
]

EntryKind = Literal["file", "symlink", "dir", "submodule"]
REGULAR, EXECUTABLE, SYMLINK, SUBMODULE, DIRECTORY = (
    "100644",
    "100755",
    "120000",
    "160000",
    "040000",
)
_KINDS: dict[str, EntryKind] = {
    REGULAR: "file",
    EXECUTABLE: "file",
    SYMLINK: "symlink",
    SUBMODULE: "submodule",
}
# Code points HFS+ ignores in names, so ".g\u200cit" is ".git" there (git's is_hfs_dotgit).
_IGNORED_BY_HFS = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")


@dataclass(frozen=True)
class BaseEntry:
    """What a path is in the base tree."""

    kind: EntryKind
    mode: str
    """Git mode: 100644, 100755, 120000 (symlink), 160000 (submodule), 040000 (directory)."""


class BaseTree(Protocol):
    """The base commit's tree, as FrogNano itself read it (never from a sandbox). `entry`
    describes a path exactly as the tree has it: a symlink is never followed."""

    def entry(self, path: str) -> BaseEntry | None:
        """The entry at `path`, or None if the tree has none."""
        ...

    def read(self, path: str) -> bytes:
        """A file's bytes, or a symlink's target."""
        ...


class PatchError(ValueError):
    """The patch does not apply to this base exactly; the message names the file and why."""


@dataclass(frozen=True)
class AppliedFile:
    """One path of the result that differs from the base."""

    path: str
    mode: str
    """100644, 100755 or 120000 (symlink); "" for a deletion."""
    content: bytes | None
    """The new bytes (a symlink's target); None for a deletion."""


class MemoryTree:
    """A base tree in memory: path -> (git mode, bytes); directories are implied by paths."""

    def __init__(self, files: Mapping[str, tuple[str, bytes]]) -> None:
        self._files = dict(files)
        self._dirs: set[str] = set()
        for path, (mode, _) in self._files.items():
            if mode not in _KINDS:
                raise ValueError(f"{path!r}: unsupported mode {mode!r}")
            parts = path.split("/")
            self._dirs.update("/".join(parts[:end]) for end in range(1, len(parts)))
        clash = self._dirs & self._files.keys()
        if clash:
            raise ValueError(f"{min(clash)!r} is both a file and a directory")

    def entry(self, path: str) -> BaseEntry | None:
        if path in self._files:
            mode = self._files[path][0]
            return BaseEntry(_KINDS[mode], mode)
        return BaseEntry("dir", DIRECTORY) if path in self._dirs else None

    def read(self, path: str) -> bytes:
        return self._files[path][1]


def blob_id(data: bytes) -> str:
    """Git's SHA-1 object id of a blob holding `data`."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def apply_diff(changes: Sequence[FileChange], base: BaseTree) -> tuple[AppliedFile, ...]:
    """The files `changes` (from `parse_diff`) make of `base`: one per changed path, the final
    state of a type change (a deletion then an addition of one path), sorted by the path's
    bytes. Raises PatchError unless every change applies exactly as git made it.

    A consumer that writes the result to disk must apply the deletions first."""
    result: dict[str, AppliedFile] = {}
    seen: dict[str, str] = {}
    for change in changes:
        shown = _shown(change.path)
        _check_path(change.path, shown)
        _check_parents(change.path, shown, base)
        if SUBMODULE in (change.old_mode, change.new_mode):
            raise PatchError(
                f"{shown}: the patch changes a submodule, which FrogNano does not apply"
            )
        content_changes = change.status != "modified" or change.hunks or change.binary
        if content_changes and (change.old_id is None or change.new_id is None):
            raise PatchError(f"{shown}: a change without an index line cannot be checked")
        previous = seen.get(change.path)
        if previous is not None and (previous, change.status) != ("deleted", "added"):
            raise PatchError(
                f"{shown}: the patch changes this path twice ({previous}, then "
                f"{change.status}); git prints a path once, or a deletion then an addition"
            )
        seen[change.path] = change.status
        entry = base.entry(change.path)
        if change.status == "added":
            result[change.path] = _add(change, entry, shown, replaced=previous is not None)
        elif change.status == "deleted":
            result[change.path] = _delete(change, entry, base, shown)
        else:
            result[change.path] = _modify(change, entry, base, shown)
    _check_result(result)
    return tuple(sorted(result.values(), key=lambda applied: _raw(applied.path)))


def _add(change: FileChange, entry: BaseEntry | None, shown: str, replaced: bool) -> AppliedFile:
    if entry is not None and not replaced:
        what = "a directory" if entry.kind == "dir" else "already"
        raise PatchError(f"{shown}: the patch adds this path, but it is {what} in the base")
    mode = _new_mode(change, shown)
    content = _content(change, b"", shown)
    _check_id(change.new_id, content, shown, "new")
    return _result(change.path, mode, content, shown)


def _delete(change: FileChange, entry: BaseEntry | None, base: BaseTree, shown: str) -> AppliedFile:
    data = _old_content(change, entry, base, shown, "deletes")
    if _content(change, data, shown):
        raise PatchError(
            f"{shown}: the deletion does not remove all of the base file's content "
            "(the patch was made against another version of it)"
        )
    _check_id(change.old_id, data, shown, "old")
    return AppliedFile(change.path, "", None)


def _modify(change: FileChange, entry: BaseEntry | None, base: BaseTree, shown: str) -> AppliedFile:
    data = _old_content(change, entry, base, shown, "modifies")
    mode = _new_mode(change, shown)
    if (mode == SYMLINK) != (change.old_mode == SYMLINK):
        raise PatchError(
            f"{shown}: a mode change between a file and a symlink; git prints a type "
            "change as a deletion and an addition"
        )
    content = _content(change, data, shown)
    _check_id(change.old_id, data, shown, "old")
    _check_id(change.new_id, content, shown, "new")
    return _result(change.path, mode, content, shown)


def _old_content(
    change: FileChange, entry: BaseEntry | None, base: BaseTree, shown: str, verb: str
) -> bytes:
    """The base's bytes of a path the change deletes or modifies, checked against the
    change's old mode (the old blob id is checked after the hunks, whose refusals say more)."""
    if entry is None:
        raise PatchError(f"{shown}: the patch {verb} this path, but the base has no such file")
    if entry.kind not in ("file", "symlink"):
        raise PatchError(
            f"{shown}: the patch {verb} this path, but it is a {entry.kind} in the base"
        )
    if change.old_mode != entry.mode:
        raise PatchError(
            f"{shown}: the patch says the old mode is {change.old_mode}, but the base has "
            f"{entry.mode} (the patch was made against another base)"
        )
    return base.read(change.path)


def _new_mode(change: FileChange, shown: str) -> str:
    if change.new_mode not in (REGULAR, EXECUTABLE, SYMLINK):
        raise PatchError(f"{shown}: unsupported file mode {change.new_mode}")
    return change.new_mode


def _content(change: FileChange, data: bytes, shown: str) -> bytes:
    """The change's new bytes from the old ones."""
    if not change.binary:
        return _apply_hunks(change.hunks, data, shown)
    patch = change.binary_patch
    if patch is None:
        raise PatchError(
            f"{shown}: a binary change without data ('Binary files ... differ'); the diff "
            "must be made with --binary"
        )
    if patch.kind == "literal":
        return patch.data
    try:
        return apply_delta(data, patch.data)
    except ValueError as exc:
        raise PatchError(f"{shown}: the binary delta does not fit the base file: {exc}") from None


def _apply_hunks(hunks: Sequence[Hunk], data: bytes, shown: str) -> bytes:
    """Apply `hunks` at exactly the lines they name: no fuzz, no offsets."""
    old = _split_lines(data)
    out: list[bytes] = []
    copied = 0  # old lines before this are in `out` or replaced
    for number, hunk in enumerate(hunks, 1):
        where = f"{shown}, hunk {number} (@@ -{hunk.old_start},{hunk.old_count} ...)"
        old_side = [line for line in hunk.lines if line.marker != "+"]
        new_side = [line for line in hunk.lines if line.marker != "-"]
        if (len(old_side), len(new_side)) != (hunk.old_count, hunk.new_count):
            raise PatchError(f"{where}: the hunk's lines disagree with its header")
        start = hunk.old_start - 1 if hunk.old_count else hunk.old_start
        if start < copied or start + hunk.old_count > len(old):
            raise PatchError(
                f"{where}: the hunk does not fit the base file of {len(old)} lines "
                "(the patch was made against another version of it)"
            )
        out.extend(old[copied:start])
        new_start = hunk.new_start - 1 if hunk.new_count else hunk.new_start
        if new_start != len(out):
            raise PatchError(f"{where}: the hunk's new start is not where it lands ({len(out)})")
        for offset, expected in enumerate(_lines(old_side, hunk.old_missing_newline)):
            if old[start + offset] != expected:
                raise PatchError(
                    f"{where}: the base's line {start + offset + 1} is "
                    f"{_show(old[start + offset])}, but the patch expects {_show(expected)} "
                    "(the patch was made against another version of the file)"
                )
        out.extend(_lines(new_side, hunk.new_missing_newline))
        copied = start + hunk.old_count
        if hunk.new_missing_newline and copied != len(old):
            raise PatchError(f"{where}: the new file ends in this hunk, but base lines follow")
    out.extend(old[copied:])
    return b"".join(out)


def _lines(side: list[HunkLine], missing_newline: bool) -> list[bytes]:
    """The bytes of one side's lines, the last without its newline if the diff says so."""
    lines = [line.text + b"\n" for line in side]
    if missing_newline and lines:
        lines[-1] = side[-1].text
    return lines


def _split_lines(data: bytes) -> list[bytes]:
    """Lines with their newline (only "\\n" ends a line, as in git); the last may lack one."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def _check_id(expected: str | None, data: bytes, shown: str, side: str) -> None:
    """The `index` line's id for this side must name `data` (a prefix when abbreviated)."""
    if expected is None:
        return
    actual = blob_id(data)
    if len(expected) > len(actual) or not actual.startswith(expected):
        made = (
            "the patch was made against another base"
            if side == "old"
            else "the patch does not produce the file it names"
        )
        raise PatchError(
            f"{shown}: the {side} file's blob id is {actual}, but the patch's index line "
            f"says {expected} ({made})"
        )


def _result(path: str, mode: str, content: bytes, shown: str) -> AppliedFile:
    if mode == SYMLINK and (not content or b"\0" in content):
        raise PatchError(f"{shown}: a symlink's target cannot be empty or hold a NUL byte")
    return AppliedFile(path, mode, content)


def _check_path(path: str, shown: str) -> None:
    """A relative path of plain components, none of them git's own directory."""
    if not path or "\0" in path:
        raise PatchError(f"{shown}: an empty path or one with a NUL byte")
    if path.startswith("/"):
        raise PatchError(f"{shown}: an absolute path")
    for part in path.split("/"):
        if part in ("", ".", ".."):
            raise PatchError(f"{shown}: a path with an empty, '.' or '..' component")
    for part in re.split(r"[/\\]", path):  # a backslash separates on Windows checkouts
        # What Windows (trailing dots and spaces, 8.3 names, `:` streams) and macOS
        # (ignored code points, case) would open as `.git`.
        name = _IGNORED_BY_HFS.sub("", part).split(":")[0].rstrip(". ").casefold()
        if name in (".git", "git~1"):
            raise PatchError(f"{shown}: the patch touches git's own directory (.git)")


def _check_parents(path: str, shown: str, base: BaseTree) -> None:
    """No parent of `path` may be anything but a directory in the base, so no change goes
    through a symlink or into a submodule."""
    parts = path.split("/")
    for end in range(1, len(parts)):
        parent = "/".join(parts[:end])
        entry = base.entry(parent)
        if entry is not None and entry.kind != "dir":
            raise PatchError(
                f"{shown}: its parent {_shown(parent)} is a {entry.kind} in the base; the "
                "patch cannot change a path through it"
            )


def _check_result(result: Mapping[str, AppliedFile]) -> None:
    """No path may be a file and a directory in the result (an addition over a directory of
    the base is refused where it happens)."""
    for path, applied in result.items():
        if applied.content is None:
            continue
        parts = path.split("/")
        for end in range(1, len(parts)):
            parent = "/".join(parts[:end])
            if parent in result and result[parent].content is not None:
                raise PatchError(
                    f"{_shown(path)}: its parent {_shown(parent)} is a file in the result"
                )


def _raw(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def _shown(path: str) -> str:
    return repr(_raw(path).decode("utf-8", "replace"))


def _show(line: bytes) -> str:
    text = line[:60].decode("utf-8", "replace")
    return repr(text + ("..." if len(line) > 60 else ""))
