"""What the gate reports (findings) and what it is told about the trees (TreeFacts)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["block", "warn"]

SYMLINK = "120000"
SUBMODULE = "160000"
EXECUTABLE = "100755"


@dataclass(frozen=True)
class Finding:
    """One thing the gate found in a patch."""

    severity: Severity
    kind: str
    """forbidden_path, too_many_files, too_many_lines, binary, symlink, executable, submodule,
    large_file, secret, suspicious, not_analysed, protected_change, agent_file, empty,
    malformed, scan_incomplete."""
    reason: str
    """One sentence a maintainer can act on."""
    path: str | None = None
    line: str | None = None
    """The offending added line, shortened, with secrets redacted."""


@dataclass(frozen=True)
class TreeFacts:
    """What the gate cannot see in the diff: facts about the patched and the base tree."""

    sizes: Mapping[str, int]
    """Size in bytes of each added or modified file in the patched tree."""
    base_paths: frozenset[str] = field(default_factory=frozenset)
    """Paths that exist in the base tree."""
    contents: Mapping[str, bytes] = field(default_factory=dict)
    """The bytes of every added or modified path after the patch (a symlink's target), computed
    by FrogNano from the base and the diff; missing entries fall back to what the diff shows."""
    automation_paths: frozenset[str] = field(default_factory=frozenset)
    """Base files that the repository's automation runs (see automation.workflow_scripts); an
    entry ending in `/` stands for every file below that folder."""
    automation_runners: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """For entries of `automation_paths`, the workflow files that run them (for the reason of
    a finding; see automation.workflow_runners)."""


def display(path: str) -> str:
    """`path` for a sentence: bytes that are not UTF-8 shown as U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def count_lines(count: int) -> str:
    """`1 line`, `3 lines`."""
    return f"{count} line" if count == 1 else f"{count} lines"
