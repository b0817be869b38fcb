"""A follow-up run: its input (the PR's head and the review), and the increment checked."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from frognano.agent.followup import FollowUpPrompt, Review
from frognano.policy.gate.check import run_gate
from frognano.policy.gate.findings import Finding
from frognano.policy.models import EffectivePolicy
from frognano.run.apply import AppliedFile
from frognano.run.gatecheck import tree_facts
from frognano.run.plan import Plan
from frognano.run.trees import HostTree, git_mode
from frognano.run.workspace import Patch

_PLAN_KINDS = frozenset({"protected_change", "agent_file"})
"""The kinds of finding `gatecheck.plan_findings` makes: about files the plan sorted."""

State = tuple[str, bytes] | None
"""One path's content in a tree: (git mode, bytes), or None when it holds no file there."""


@dataclass(frozen=True)
class FollowUp:
    """What makes a run a follow-up: the pull request's head tree and the review to answer.

    The job's `repo_dir` stays the original base (the tree the first run started from);
    `head_dir` is that base plus the cumulative diff of the earlier rounds.
    """

    head_dir: Path
    review: Review
    round: int = 2
    """1 is the first run; a follow-up is the second, third, ..."""
    head_exclude: tuple[str, ...] | None = None
    """Relative paths of `head_dir` left out, as `SolveJob.exclude` for the base."""


@dataclass
class FollowUpState:
    """What a follow-up has found besides a first run's state."""

    head: HostTree
    earlier: tuple[AppliedFile, ...]
    """The head as files that differ from the base: the earlier rounds, as FrogNano sees them."""
    head_commit: str | None = None
    earlier_patch: Patch | None = None
    """The earlier rounds as the diff the agent is shown."""
    increment: Patch | None = None
    """This round's diff against the head."""
    findings: list[Finding] | None = None
    """The gate's findings about the increment."""
    files: tuple[AppliedFile, ...] = ()
    """The increment's files relative to the head: what one new commit on the branch holds."""

    def prompt(self, review: Review) -> FollowUpPrompt:
        return FollowUpPrompt(self.earlier_patch.diff if self.earlier_patch else b"", review)


@dataclass(frozen=True)
class FollowUpResult:
    """What publishing a follow-up needs: one commit's files on the head, and the whole diff."""

    increment: tuple[AppliedFile, ...]
    """Relative to the head tree: head + these files is exactly the tree verification tested."""
    cumulative: Patch
    """Against the original base: the earlier rounds and this one."""
    increment_patch: Patch
    """This round's diff against the head, as the agent made it."""


def tree_state(tree: HostTree, path: str) -> State:
    entry = tree.entries.get(path)
    if entry is None or entry.kind == "dir":
        return None
    return git_mode(entry), tree.read(path)


def file_state(change: AppliedFile) -> State:
    return None if change.content is None else (change.mode, change.content)


def tree_changes(base: HostTree, head: HostTree) -> tuple[AppliedFile, ...]:
    """The files and symlinks in which `head` differs from `base`, as applied files."""
    changes = []
    for path in sorted(base.paths | head.paths):
        before, after = tree_state(base, path), tree_state(head, path)
        if before != after:
            changes.append(
                AppliedFile(path, "", None) if after is None else AppliedFile(path, *after)
            )
    return tuple(changes)


def increment_files(
    base: HostTree,
    state: FollowUpState,
    plan: Plan,
    applied_increment: Sequence[AppliedFile],
) -> tuple[tuple[AppliedFile, ...], str | None]:
    """The increment to publish, computed from the verified tree (base + the plan's files)
    and the head; and why the agent's increment diff disagrees with it, if it does.

    Files verification put back to the base stay as on the head, out of the increment.
    """
    published = {change.path: change for change in plan.published}
    restored = {item.path for item in plan.restored}
    by_diff = {change.path: change for change in applied_increment}
    paths = {c.path for c in state.earlier} | published.keys() | by_diff.keys()
    files, disagreement = [], None
    for path in sorted(paths - restored):
        change = published.get(path)
        target = file_state(change) if change else tree_state(base, path)
        head = tree_state(state.head, path)
        claimed = file_state(by_diff[path]) if path in by_diff else head
        if claimed != target and disagreement is None:
            disagreement = path
        if target != head:
            files.append(
                AppliedFile(path, "", None) if target is None else AppliedFile(path, *target)
            )
    return tuple(files), disagreement


def increment_findings(
    diff: bytes,
    applied: Sequence[AppliedFile],
    state: FollowUpState,
    cumulative: Iterable[Finding],
    policy: EffectivePolicy,
) -> list[Finding]:
    """The gate over the increment against the head, and the cumulative diff's findings about
    the files the increment touches (a protected test or an AGENTS.md it edits, say), sorted
    by path."""
    touched = {change.path for change in applied}
    findings = run_gate(diff, tree_facts(applied, state.head), policy.gate)
    findings += [f for f in cumulative if f.kind in _PLAN_KINDS and f.path in touched]
    unique = list(dict.fromkeys(findings))
    unique.sort(key=lambda finding: (finding.path or "", finding.kind))
    return unique


def block_reasons(cumulative: Sequence[Finding], increment: Sequence[Finding]) -> list[str]:
    """Each blocking finding's reason, saying which diff it came from."""
    said = [f"in the cumulative diff: {f.reason}" for f in cumulative if f.severity == "block"]
    said += [f"in the increment: {f.reason}" for f in increment if f.severity == "block"]
    return said
