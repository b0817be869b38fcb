"""A follow-up's own stages: the head built in the agent's sandbox, the increment checked."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from frognano.log import get_logger
from frognano.policy.diff import parse_diff
from frognano.policy.findings import Finding
from frognano.run.apply import AppliedFile, apply_diff
from frognano.run.followup import (
    FollowUp,
    FollowUpState,
    increment_files,
    increment_findings,
    tree_changes,
)
from frognano.run.job import RunState
from frognano.run.plan import Plan
from frognano.run.trees import HostTree, apply_overlay, overlay
from frognano.run.workspace import collect_patch, commit_all, upload_excludes
from frognano.sandbox.base import Sandbox

log = get_logger(__name__)


async def prepare_head(run: RunState, follow_up: FollowUp, box: Sandbox, base: HostTree) -> None:
    """Turn the sandbox's base (setup done) into the PR's head and commit it, so the agent
    sees its earlier change as the current code and this round's diff is taken against it.
    The head's files are written by FrogNano from the host's copy, never copied by git."""
    if run.base_commit is None:
        raise ValueError("the base must be committed before the head")
    excludes = (
        list(follow_up.head_exclude)
        if follow_up.head_exclude is not None
        else await asyncio.to_thread(upload_excludes, follow_up.head_dir)
    )
    head = await HostTree.scan(follow_up.head_dir, excludes)
    state = FollowUpState(head, await asyncio.to_thread(tree_changes, base, head))
    run.follow_up = state
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


async def collect_increment(run: RunState, box: Sandbox) -> None:
    state = run.follow_up
    if state is not None and state.head_commit is not None:
        state.increment = await collect_patch(box, state.head_commit)


async def check_increment(
    run: RunState, base: HostTree, plan: Plan, cumulative: Sequence[Finding]
) -> bool:
    """Gate the increment against the head and compute the files to publish from the
    verified tree; False (with a blocking finding) when the increment diff does not apply to
    the head, or the head plus it is not the tree the cumulative diff makes."""
    state = run.follow_up
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
        state.increment.diff, applied, state, cumulative, run.job.policy
    )
    state.files, disagreement = await asyncio.to_thread(increment_files, base, state, plan, applied)
    if disagreement is not None:
        shown = disagreement.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        state.findings.append(
            _malformed(f"the increment and the cumulative diff disagree about {shown}")
        )
        return False
    return True


def _malformed(why: str) -> Finding:
    return Finding("block", "malformed", f"{why}; it is neither tested nor published")
