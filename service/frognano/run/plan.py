"""Sorting a patch's files: the fix, the agent's new tests, and what is put back to base."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from frognano.policy.gate.agentfiles import (
    IMPORTING,
    MAX_IMPORT_DEPTH,
    agent_file_reason,
    imports,
    link_target,
    linked_names,
)
from frognano.policy.gate.findings import display
from frognano.policy.gate.harness.files import harness_changes
from frognano.policy.models import AgentPolicy, EffectivePolicy
from frognano.policy.paths import path_matches_anywhere
from frognano.run.apply import AppliedFile, BaseTree
from frognano.run.trees import Overlay, overlay

Rule = Literal["harness", "test_file", "agent_file"]
"""`harness`: it decides how tests run (config, conftest, plugins; policy/gate/harness/files.py);
`test_file`: it matches `verify.protected_paths`; `agent_file`: coding agents read it as
instructions or configuration (`agent.instructions_files`, `agent.protected_files` and
policy/gate/agentfiles.py)."""


@dataclass(frozen=True)
class Protected:
    """A file of the patch that a rule protects: put back to its base state for verification
    (and left out of the pull request), or, for an agent file the policy allows, published
    with a warning."""

    path: str
    why: str
    """One sentence: why the rule protects it."""
    rule: Rule


@dataclass(frozen=True)
class Plan:
    """The patch's files, sorted by what verification does with them."""

    source: tuple[AppliedFile, ...]
    """Changes to the code: in every run with the patch, and published."""
    new_tests: tuple[AppliedFile, ...]
    """Test files the patch adds: run on their own (with the patch and on the base), kept
    out of the run that judges the repository's own tests, and published."""
    restored: tuple[Protected, ...]
    """Protected test files, harness files and agent files the patch changes: put back to the
    base."""
    allowed_agent_files: tuple[Protected, ...] = ()
    """Agent files the patch changes that the policy lets through (`agent.on_instructions_change:
    allow`): also in `source`, so verified and published, each named by a warning."""

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
    policy: EffectivePolicy,
) -> Plan:
    """Harness files first (whatever their name), then agent files (added ones too: a new
    AGENTS.md is read like an edited one), then protected test files: changed or deleted ones
    are restored, added ones are the agent's new tests; the rest is the fix."""
    verify, agent = policy.verify, policy.agent
    pairs = [(change.path, _base_bytes(base, change.path), change.content) for change in applied]
    hits = {
        hit.path: hit.reason
        for hit in harness_changes(pairs, command=verify.command, base_paths=base_paths)
    }
    names = _Names(_links(base, base_paths), _imported(base, base_paths))
    source: list[AppliedFile] = []
    new_tests: list[AppliedFile] = []
    restored: list[Protected] = []
    allowed: list[Protected] = []
    for change in sorted(applied, key=lambda change: change.path):
        if change.path in hits:
            restored.append(Protected(change.path, hits[change.path], "harness"))
            continue
        why = _agent_file(change.path, agent, names)
        if why is not None:
            found = Protected(change.path, why, "agent_file")
            if agent.on_instructions_change == "allow":
                allowed.append(found)
                source.append(change)
            else:
                restored.append(found)
            continue
        pattern = path_matches_anywhere(change.path, verify.protected_paths)
        if pattern is None:
            source.append(change)
        elif change.path in base_paths:
            restored.append(
                Protected(
                    change.path,
                    f"it is a protected test file (verify.protected_paths: {pattern!r})",
                    "test_file",
                )
            )
        else:
            new_tests.append(change)
    return Plan(tuple(source), tuple(new_tests), tuple(restored), tuple(allowed))


@dataclass(frozen=True)
class _Names:
    """What else makes a file of the base an agent file: the names its symlinks give it."""

    links: Mapping[str, str]
    """Every symlink of the base that stays in the tree -> the path it points to."""
    imported: Mapping[str, str]
    """Every file a memory file of the base imports (`@path`) -> that memory file."""


def _agent_file(path: str, agent: AgentPolicy, names: _Names) -> str | None:
    """Why `path` is an agent file: under its own name, under a name a symlink of the base
    gives it (`AGENTS.md -> docs/guide.md` makes docs/guide.md what the tools read), or as a
    file a memory file of the base imports (`@docs/style.md` in CLAUDE.md)."""
    why = agent_file_reason(path, agent.instructions_files, agent.protected_files)
    if why is not None:
        return why
    for name in linked_names(path, names.links):
        why = agent_file_reason(name, agent.instructions_files, agent.protected_files)
        if why is not None:
            return f"{display(name)} in the base is a symbolic link to it, and {why}"
    root = names.imported.get(path)
    if root is not None:
        why = agent_file_reason(root, agent.instructions_files, agent.protected_files)
        if why is not None:  # always: IMPORTING names only built-in agent files
            return f"{display(root)} in the base imports it (`@` imports), and {why}"
    return None


def _links(base: BaseTree, base_paths: frozenset[str]) -> dict[str, str]:
    links = {}
    for path in sorted(base_paths):
        entry = base.entry(path)
        if entry is not None and entry.kind == "symlink":
            target = link_target(path, base.read(path))
            if target is not None:
                links[path] = target
    return links


def _imported(base: BaseTree, base_paths: frozenset[str]) -> dict[str, str]:
    """The base files the base's memory files (CLAUDE.md, GEMINI.md...) import, and what those
    import in turn, five deep, each -> the memory file it was reached from."""
    found: dict[str, str] = {}
    frontier = [(p, p) for p in sorted(base_paths) if posixpath.basename(p).lower() in IMPORTING]
    for _ in range(MAX_IMPORT_DEPTH):
        reached = []
        for path, root in frontier:
            entry = base.entry(path)
            if entry is None or entry.kind != "file":
                continue
            for name in imports(path, base.read(path)):
                if name in base_paths and name != root and name not in found:
                    found[name] = root
                    reached.append((name, root))
        frontier = reached
    return found


def _base_bytes(base: BaseTree, path: str) -> bytes | None:
    entry = base.entry(path)
    if entry is None or entry.kind == "dir":
        return None
    return base.read(path)
