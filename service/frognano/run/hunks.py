"""A fix's hunks, from FrogNano's own diff of base and patched bytes, and their exact reverts."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from frognano.run.apply import AppliedFile

PREVIEW_LINES = 3
PREVIEW_CHARS = 120


@dataclass(frozen=True)
class Hunk:
    """One hunk of one file, by the line numbers a reviewer sees in the diff."""

    path: str
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    preview: tuple[str, ...]
    """Its first added lines (removed ones when it only removes), shortened."""

    @property
    def where(self) -> str:
        if self.new_count == 0:
            return f"{self.path}:{self.old_start} (removed lines of the base)"
        end = self.new_start + self.new_count - 1
        lines = str(self.new_start) if end == self.new_start else f"{self.new_start}-{end}"
        return f"{self.path}:{lines}"


@dataclass(frozen=True)
class Unit:
    """What one check reverts at once: a hunk, or several of a file's hunks together."""

    hunks: tuple[Hunk, ...]
    reverted: AppliedFile
    """The file as it is with this unit reverted and every other change of the fix kept;
    content None where the base has no such file."""
    grouped: str = ""
    """Why these hunks are reverted together; empty for a single hunk."""

    @property
    def path(self) -> str:
        return self.hunks[0].path


Base = Callable[[str], tuple[str, bytes] | None]
"""The base's (git mode, bytes) of a path, None where the base has none."""


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "surrogateescape").splitlines(keepends=True)


def _preview(lines: Sequence[str]) -> tuple[str, ...]:
    shown = [line.rstrip("\r\n") for line in lines if line.strip()][:PREVIEW_LINES]
    return tuple(
        line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…" for line in shown
    )


Opcodes = list[tuple[str, int, int, int, int]]


def _groups(old: list[str], new: list[str]) -> list[Opcodes]:
    """Each run of changed lines on its own: finer than git's hunks, which join changes up to
    six lines apart, so that a line slipped in beside a fix is a hunk of its own."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [[op] for op in matcher.get_opcodes() if op[0] != "equal"]


def _rebuild(old: list[str], new: list[str], groups: list[Opcodes], revert: set[int]) -> bytes:
    """`old` with every group's change made except those in `revert`."""
    out: list[str] = []
    position = 0
    for index, group in enumerate(groups):
        for _, i1, i2, j1, j2 in group:
            out += old[position:i1]
            out += old[i1:i2] if index in revert else new[j1:j2]
            position = i2
    out += old[position:]
    return "".join(out).encode("utf-8", "surrogateescape")


def _hunk(path: str, group: Opcodes, old: list[str], new: list[str]) -> Hunk:
    i1, j1 = group[0][1], group[0][3]
    i2, j2 = group[-1][2], group[-1][4]
    added = [line for _, _, _, b1, b2 in group for line in new[b1:b2]]
    removed = [line for _, a1, a2, _, _ in group for line in old[a1:a2]]
    return Hunk(path, i1 + 1, i2 - i1, j1 + 1, j2 - j1, _preview(added or removed))


def _parses(path: str, data: bytes | None) -> bool:
    if data is None or not path.endswith(".py"):
        return True
    try:
        ast.parse(data)
    except (SyntaxError, ValueError):
        return False
    return True


def file_units(change: AppliedFile, base: tuple[str, bytes] | None) -> list[Unit]:
    """The units of one changed file: each hunk alone where reverting it alone leaves the file
    parseable (Python), else the file's hunks together; a whole file where it is added,
    deleted, binary, a symlink or only changes mode."""
    whole_base = _whole(change, base)
    new_bytes = change.content
    if (
        base is None
        or new_bytes is None
        or base[0] != change.mode
        or change.mode == "120000"
        or b"\0" in new_bytes
        or b"\0" in base[1]
    ):
        hunk = Hunk(change.path, 1, 0, 1, 0, ())
        return [Unit((hunk,), whole_base, _whole_file_reason(change, base))]
    old, new = _lines(base[1]), _lines(new_bytes)
    groups = _groups(old, new)
    hunks = [_hunk(change.path, group, old, new) for group in groups]
    if not hunks:
        return []
    # Self-check: reverting all must give the base, none the patched bytes, exactly.
    if _rebuild(old, new, groups, set(range(len(groups)))) != base[1] or (
        _rebuild(old, new, groups, set()) != new_bytes
    ):
        raise ValueError(f"{change.path}: the hunks do not rebuild the file exactly")
    singles = [
        AppliedFile(change.path, change.mode, _rebuild(old, new, groups, {index}))
        for index in range(len(groups))
    ]
    broken = {i for i, single in enumerate(singles) if not _parses(change.path, single.content)}
    units = [Unit((hunks[i],), single) for i, single in enumerate(singles) if i not in broken]
    if not broken:
        return units
    together = AppliedFile(change.path, change.mode, _rebuild(old, new, groups, broken))
    if _parses(change.path, together.content):
        why = "reverting any one of them alone leaves the file unparseable"
        return [*units, Unit(tuple(hunks[i] for i in sorted(broken)), together, why)]
    why = "reverting its hunks apart leaves the file unparseable, so they are reverted together"
    return [Unit(tuple(hunks), whole_base, why)]


def _whole_file_reason(change: AppliedFile, base: tuple[str, bytes] | None) -> str:
    if base is None:
        return "a new file: reverted by removing it"
    if change.content is None:
        return "a deleted file: reverted by restoring it"
    if change.mode == "120000" or base[0] == "120000":
        return "a symlink: reverted whole"
    if base[0] != change.mode:
        return "its mode changes: reverted whole"
    return "a binary file: reverted whole"


def units_of(changes: Sequence[AppliedFile], base: Base, limit: int) -> tuple[list[Unit], str]:
    """Every unit of the fix, and a note when `limit` made them coarser: past it, each file's
    hunks are one unit; past it in files too, the units are the first `limit` files."""
    per_file = [file_units(change, base(change.path)) for change in changes]
    units = [unit for found in per_file for unit in found]
    if len(units) <= limit:
        return units, ""
    whole = [
        Unit(
            tuple(h for unit in found for h in unit.hunks),
            _whole(change, base(change.path)),
            f"more than {limit} hunks in the fix (policy verify.hunk_limit): grouped by file",
        )
        for change, found in zip(changes, per_file, strict=True)
        if found
    ]
    note = (
        f"The fix has {len(units)} hunks, more than verify.hunk_limit ({limit}): each file's "
        "hunks were checked together."
    )
    if len(whole) > limit:
        note += f" It changes {len(whole)} files: only the first {limit} were checked."
    return whole[:limit], note


def _whole(change: AppliedFile, base: tuple[str, bytes] | None) -> AppliedFile:
    """The file as the base has it: what reverting all of it writes (None: removed)."""
    if base is None:
        return AppliedFile(change.path, "", None)
    return AppliedFile(change.path, base[0], base[1])
