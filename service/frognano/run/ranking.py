"""Which of several attempts has the strongest evidence: the order best-of-N publishes by."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from frognano.run.report import RunReport

_NONE = 1_000_000_000
"""Ranks a missing check (or patch) after every real value."""


@dataclass(frozen=True)
class Strength:
    """What one attempt's own verification showed, read from its report.json (FrogNano's
    record, never the sandbox's words); no hidden test takes part."""

    ready: bool
    fixed: int
    """The repository's tests the fix made pass (failing on the base)."""
    fixed_by_agent_tests: int
    """The agent's new tests that fail on the base and pass with the fix."""
    broken: int
    """Tests that passed on the base and fail with the fix."""
    hunks_unneeded: int | None
    """Hunks no test needs (or whose check could not tell); None when not checked."""
    coverage: float | None
    """Share of the changed statements a test executed; None when not measured."""
    diff_lines: int
    """Lines added and deleted by the patch: the smaller diff wins a tie."""
    has_patch: bool

    def key(self) -> tuple[int, int, int, int, float, int]:
        """Sorts ascending from the strongest: ready over not ready; then a fix of the
        repository's own failing tests over one only the agent's new tests show; nothing
        broken; every hunk needed; more changed lines executed; a smaller diff (no patch at all
        last). Counts of tests never rank (an agent could write many), only whether there are
        any; a check that did not run ranks below one that ran and found nothing wrong."""
        unneeded = 0 if self.hunks_unneeded == 0 else 1 if self.hunks_unneeded else 2
        coverage = self.coverage if self.coverage is not None else -1.0
        return (
            0 if self.ready else 1,
            0 if self.fixed else 1 if self.fixed_by_agent_tests else 2,
            1 if self.broken else 0,
            unneeded,
            -coverage,
            self.diff_lines if self.has_patch else _NONE,
        )

    def describe(self) -> str:
        """One line for a person: what this attempt's evidence was."""
        parts = ["ready" if self.ready else "not ready"]
        if not self.has_patch:
            return "no patch"
        parts.append(
            f"{self.fixed} fixed, {self.fixed_by_agent_tests} of the agent's tests fixed, "
            f"{self.broken} broken"
        )
        if self.hunks_unneeded is not None:
            parts.append(f"{self.hunks_unneeded} hunk(s) no test needs")
        if self.coverage is not None:
            parts.append(f"{self.coverage:.0%} of changed lines executed")
        parts.append(f"{self.diff_lines}-line diff")
        return ", ".join(parts)


def strength_of(report: RunReport) -> Strength:
    """An attempt's evidence as its report.json records it."""
    patch = report["patch"]
    verification = report["verification"]
    comparison = verification["comparison"] if verification else None
    hunks = verification["hunks"] if verification else None
    changed = verification["changed_lines"] if verification else None
    unneeded = None
    if hunks is not None and hunks["hunks"]:
        unneeded = sum(1 for h in hunks["hunks"] if h["status"] != "needed")
    coverage = None
    if changed is not None and not changed["error"]:
        coverage = changed["share"]
    return Strength(
        ready=report["outcome"]["patch_ready"],
        fixed=len(comparison["fixed"]) if comparison else 0,
        fixed_by_agent_tests=len(comparison["new_evidence"]) if comparison else 0,
        broken=len(comparison["broken"]) if comparison else 0,
        hunks_unneeded=unneeded,
        coverage=coverage,
        diff_lines=(patch["insertions"] + patch["deletions"]) if patch else 0,
        has_patch=bool(patch and patch["files"]),
    )


def best(strengths: Sequence[Strength]) -> int:
    """The index of the strongest attempt; the earliest wins a full tie."""
    if not strengths:
        raise ValueError("no attempts to choose from")
    return min(range(len(strengths)), key=lambda i: (strengths[i].key(), i))
