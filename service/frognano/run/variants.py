"""What differs between a first run and a follow-up: the hooks one pipeline calls for either."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Protocol

from frognano.agent.followup import FollowUpPrompt
from frognano.log import get_logger
from frognano.policy.gate.diff import parse_diff
from frognano.policy.gate.findings import Finding
from frognano.run.apply import AppliedFile, apply_diff
from frognano.run.followup import (
    FollowUp,
    FollowUpResult,
    FollowUpState,
    block_reasons,
    increment_files,
    increment_findings,
    tree_changes,
)
from frognano.run.job import RunState
from frognano.run.plan import Plan
from frognano.run.report import FollowUpRecord
from frognano.run.reports import gate_record, patch_record
from frognano.run.trees import HostTree, apply_overlay, overlay
from frognano.run.workspace import Patch, collect_patch, commit_all, upload_excludes
from frognano.sandbox.base import Sandbox

__all__ = ["FirstRun", "FollowUpRun", "Variant", "variant_for"]

log = get_logger(__name__)


class Variant(Protocol):
    """The hooks of one run's kind, in the order the pipeline calls them. A first run's do
    nothing; a follow-up's build the pull request's head, then take and check this round's
    increment on it."""

    async def prepare(
        self, run: RunState, box: Sandbox, exclude: list[str], stage: Callable[[str], None]
    ) -> None:
        """After the base is in the agent's sandbox (setup done), before the agent;
        `exclude` is what the upload left out of the base, `stage` tells the user."""

    def prompt(self) -> FollowUpPrompt | None:
        """What the agent's first message shows besides the issue; None: the issue alone."""

    async def collect(self, box: Sandbox) -> None:
        """After the agent, beside the cumulative patch against the base."""

    def unchanged(self) -> bool:
        """Whether this run changed nothing of its own (a follow-up's empty increment)."""

    async def check(self, run: RunState, base: HostTree, plan: Plan) -> bool:
        """After the gate, before verification: False stops the run here (blocked)."""

    def blocked(self, findings: Sequence[Finding]) -> list[str]:
        """The reasons the gate's findings block the patch, in the verdict's words."""

    def result(self, patch: Patch | None) -> FollowUpResult | None:
        """What publishing needs besides the plan's files (only for a ready patch)."""

    def empty_reason(self) -> str | None:
        """Why an empty cumulative patch is no patch, when the kind has its own reason."""

    def record(self, patch: Patch | None) -> FollowUpRecord | None:
        """report.json's record of the kind; None for a first run."""


class FirstRun:
    """A run on an issue: the agent starts from the base."""

    async def prepare(
        self, run: RunState, box: Sandbox, exclude: list[str], stage: Callable[[str], None]
    ) -> None:
        del run, box, exclude, stage

    def prompt(self) -> FollowUpPrompt | None:
        return None

    async def collect(self, box: Sandbox) -> None:
        del box

    def unchanged(self) -> bool:
        return False

    async def check(self, run: RunState, base: HostTree, plan: Plan) -> bool:
        del run, base, plan
        return True

    def blocked(self, findings: Sequence[Finding]) -> list[str]:
        return [f.reason for f in findings if f.severity == "block"]

    def result(self, patch: Patch | None) -> FollowUpResult | None:
        del patch
        return None

    def empty_reason(self) -> str | None:
        return None

    def record(self, patch: Patch | None) -> FollowUpRecord | None:
        del patch
        return None


class FollowUpRun:
    """A later round on a pull request a run opened: the agent starts from its head (the
    base plus the earlier rounds) and answers a review; what it publishes is this round's
    increment on the head, gated against the head and verified against the base."""

    def __init__(self, follow_up: FollowUp) -> None:
        self.follow_up = follow_up
        self.state: FollowUpState | None = None

    async def prepare(
        self, run: RunState, box: Sandbox, exclude: list[str], stage: Callable[[str], None]
    ) -> None:
        """Turn the sandbox's base into the PR's head and commit it, so the agent sees its
        earlier change as the current code and this round's diff is taken against it. The
        head's files are written by FrogNano from the host's copy, never copied by git."""
        follow_up = self.follow_up
        if run.base_commit is None:
            raise ValueError("the base must be committed before the head")
        stage("writing the pull request's head")
        base = await HostTree.scan(run.job.repo_dir.resolve(), exclude)
        excludes = (
            list(follow_up.head_exclude)
            if follow_up.head_exclude is not None
            else await asyncio.to_thread(upload_excludes, follow_up.head_dir)
        )
        head = await HostTree.scan(follow_up.head_dir, excludes)
        self.state = state = FollowUpState(head, await asyncio.to_thread(tree_changes, base, head))
        await apply_overlay(box, base, overlay(state.earlier))
        state.head_commit = await commit_all(box, f"FrogNano rounds 1 to {follow_up.round - 1}")
        state.earlier_patch = await collect_patch(box, run.base_commit)
        log.info(
            "followup.head_ready",
            run_id=run.job.run_id,
            round=follow_up.round,
            files=len(state.earlier),
            diff_bytes=len(state.earlier_patch.diff),
        )

    def prompt(self) -> FollowUpPrompt | None:
        earlier = self.state.earlier_patch if self.state else None
        return FollowUpPrompt(earlier.diff if earlier else b"", self.follow_up.review)

    async def collect(self, box: Sandbox) -> None:
        state = self.state
        if state is not None and state.head_commit is not None:
            state.increment = await collect_patch(box, state.head_commit)

    def unchanged(self) -> bool:
        state = self.state
        return state is not None and (state.increment is None or state.increment.empty)

    async def check(self, run: RunState, base: HostTree, plan: Plan) -> bool:
        """Gate the increment against the head and compute the files to publish from the
        verified tree; False (with a blocking finding) when the increment diff does not
        apply to the head, or the head plus it is not the tree the cumulative diff makes."""
        state = self.state
        if state is None or state.increment is None:
            return True
        try:
            applied: Sequence[AppliedFile] = await asyncio.to_thread(
                apply_diff, parse_diff(state.increment.diff), state.head
            )
        except ValueError as exc:
            state.findings = [_malformed(f"the increment cannot be applied to the head ({exc})")]
            return False
        state.findings = increment_findings(
            state.increment.diff, applied, state, run.findings or [], run.job.policy
        )
        state.files, disagreement = await asyncio.to_thread(
            increment_files, base, state, plan, applied
        )
        if disagreement is not None:
            shown = disagreement.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            state.findings.append(
                _malformed(f"the increment and the cumulative diff disagree about {shown}")
            )
            return False
        return True

    def blocked(self, findings: Sequence[Finding]) -> list[str]:
        return block_reasons(findings, (self.state.findings if self.state else None) or [])

    def result(self, patch: Patch | None) -> FollowUpResult | None:
        state = self.state
        if state is None or state.increment is None or patch is None:
            return None
        return FollowUpResult(state.files, patch, state.increment)

    def empty_reason(self) -> str | None:
        if self.unchanged():
            return None
        return "this round undoes every earlier change: the cumulative diff is empty"

    def record(self, patch: Patch | None) -> FollowUpRecord | None:
        state, follow_up = self.state, self.follow_up
        return {
            "round": follow_up.round,
            "review_id": follow_up.review.review_id,
            "line_comments": len(follow_up.review.comments),
            "head_commit": state.head_commit if state else None,
            "increment": patch_record(state.increment if state else None),
            "cumulative": patch_record(patch),
            "gate": gate_record(state.findings if state else None),
        }


def variant_for(follow_up: FollowUp | None) -> Variant:
    return FirstRun() if follow_up is None else FollowUpRun(follow_up)


def _malformed(why: str) -> Finding:
    return Finding("block", "malformed", f"{why}; it is neither tested nor published")
