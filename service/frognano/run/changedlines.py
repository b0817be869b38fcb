"""Which changed lines of the fix the tests executed: statements by coverage.py's parser."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from coverage.exceptions import CoverageException
from coverage.parser import PythonParser

from frognano.run.apply import AppliedFile
from frognano.run.hunks import Base
from frognano.run.outcomes import TestRun


@dataclass(frozen=True)
class FileLines:
    """One changed Python file of the fix: its added or changed statements, by line."""

    path: str
    changed: tuple[int, ...]
    executed: tuple[int, ...]

    @property
    def missed(self) -> tuple[int, ...]:
        ran = set(self.executed)
        return tuple(line for line in self.changed if line not in ran)


@dataclass(frozen=True)
class ChangedLines:
    """The fix's changed statements, and which of them any test executed."""

    files: tuple[FileLines, ...]
    error: str = ""
    """Why the measurement is missing or partial: then nothing here is a pass."""
    skipped: tuple[str, ...] = ()
    """Changed Python files that could not be parsed, so their statements are unknown."""

    @property
    def total(self) -> int:
        return sum(len(f.changed) for f in self.files)

    @property
    def executed(self) -> int:
        return sum(len(f.changed) - len(f.missed) for f in self.files)

    @property
    def share(self) -> float | None:
        return None if self.total == 0 else self.executed / self.total


def measured_files(changes: Iterable[AppliedFile]) -> tuple[str, ...]:
    """The fix's Python files that exist with it: what the test runs measure."""
    return tuple(c.path for c in changes if c.content is not None and c.path.endswith(".py"))


def changed_statements(new: bytes, old: bytes | None) -> set[int] | None:
    """Line numbers in `new` of statements added or changed against `old` (None: a new
    file); None when `new` does not parse."""
    try:
        parser = PythonParser(text=new.decode("utf-8", "surrogateescape"))
        parser.parse_source()
    except (CoverageException, SyntaxError, ValueError):
        return None
    new_lines = new.decode("utf-8", "surrogateescape").splitlines()
    if old is None:
        touched = set(range(1, len(new_lines) + 1))
    else:
        old_lines = old.decode("utf-8", "surrogateescape").splitlines()
        matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        touched = {
            line
            for tag, _, _, j1, j2 in matcher.get_opcodes()
            if tag != "equal"
            for line in range(j1 + 1, j2 + 1)
        }
    return touched & set(parser.statements)


def changed_lines(
    changes: Sequence[AppliedFile], base: Base, runs: Sequence[TestRun | None]
) -> ChangedLines:
    """The fix's changed statements against what the `runs` executed (their union)."""
    executed: dict[str, set[int]] = {}
    errors: list[str] = []
    for run in runs:
        if run is None:
            continue
        if run.coverage_error or run.executed is None:
            errors.append(run.coverage_error or "the run measured nothing")
        for path, lines in (run.executed or {}).items():
            executed.setdefault(path, set()).update(lines)
    files: list[FileLines] = []
    skipped: list[str] = []
    paths = set(measured_files(changes))
    for change in changes:
        if change.path not in paths or change.content is None:
            continue
        before = base(change.path)
        statements = changed_statements(change.content, before[1] if before else None)
        if statements is None:
            skipped.append(change.path)
            continue
        ran = executed.get(change.path, set())
        files.append(
            FileLines(change.path, tuple(sorted(statements)), tuple(sorted(statements & ran)))
        )
    error = "; ".join(dict.fromkeys(errors))
    return ChangedLines(tuple(f for f in files if f.changed), error, tuple(skipped))


def spans(lines: Sequence[int]) -> str:
    """`3, 7-9, 12` for [3, 7, 8, 9, 12]."""
    out: list[str] = []
    start = previous = None
    for line in lines:
        if previous is not None and line == previous + 1:
            previous = line
            continue
        if start is not None:
            out.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = line
    if start is not None:
        out.append(str(start) if start == previous else f"{start}-{previous}")
    return ", ".join(out)


def not_executed(result: ChangedLines) -> Mapping[str, str]:
    """path -> the changed lines no test executed, as spans."""
    return {f.path: spans(f.missed) for f in result.files if f.missed}
