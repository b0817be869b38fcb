"""Sorting a patch's files: the fix, the agent's new tests, and what is put back to base."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from frognano.policy.harness import harness_changes
from frognano.policy.models import VerifyPolicy
from frognano.policy.paths import path_matches_anywhere
from frognano.run.apply import AppliedFile, BaseTree
from frognano.run.trees import Overlay, overlay


@dataclass(frozen=True)
class Restored:
    """A file of the patch that verification (and the pull request) leave at its base state."""

    path: str
    why: str
    """One sentence: which rule protects it."""
    harness: bool
    """True when it decides how tests run (config, conftest, plugins); False for a test file."""


@dataclass(frozen=True)
class Plan:
    """The patch's files, sorted by what verification does with them."""

    source: tuple[AppliedFile, ...]
    """Changes to the code: in every run with the patch, and published."""
    new_tests: tuple[AppliedFile, ...]
    """Test files the patch adds: run on their own (with the patch and on the base), kept
    out of the run that judges the repository's own tests, and published."""
    restored: tuple[Restored, ...]
    """Protected test files and harness files the patch changes: put back to the base."""

    @property
    def patched(self) -> Overlay:
        return overlay(self.source)

    @property
    def with_new_tests(self) -> Overlay:
        return overlay(self.source + self.new_tests)

    @property
    def new_tests_only(self) -> Overlay:
        return overlay(self.new_tests)

    @property
    def published(self) -> tuple[AppliedFile, ...]:
        """Exactly the files of the tree the new tests ran in: what the pull request commits."""
        return tuple(sorted(self.source + self.new_tests, key=lambda change: change.path))

    @property
    def new_test_files(self) -> tuple[str, ...]:
        return tuple(change.path for change in self.new_tests if change.content is not None)


def make_plan(
    applied: Sequence[AppliedFile],
    base: BaseTree,
    base_paths: frozenset[str],
    verify: VerifyPolicy,
) -> Plan:
    """Harness files first (whatever their name), then protected test files: changed or
    deleted ones are restored, added ones are the agent's new tests; the rest is the fix."""
    pairs = [(change.path, _base_bytes(base, change.path), change.content) for change in applied]
    hits = {
        hit.path: hit.reason
        for hit in harness_changes(pairs, command=verify.command, base_paths=base_paths)
    }
    source: list[AppliedFile] = []
    new_tests: list[AppliedFile] = []
    restored: list[Restored] = []
    for change in sorted(applied, key=lambda change: change.path):
        if change.path in hits:
            restored.append(Restored(change.path, hits[change.path], harness=True))
            continue
        pattern = path_matches_anywhere(change.path, verify.protected_paths)
        if pattern is None:
            source.append(change)
        elif change.path in base_paths:
            restored.append(
                Restored(
                    change.path,
                    f"it is a protected test file (verify.protected_paths: {pattern!r})",
                    harness=False,
                )
            )
        else:
            new_tests.append(change)
    return Plan(tuple(source), tuple(new_tests), tuple(restored))


def _base_bytes(base: BaseTree, path: str) -> bytes | None:
    entry = base.entry(path)
    if entry is None or entry.kind == "dir":
        return None
    return base.read(path)
