"""The run job for one issue, stage by stage: authorise, acknowledge, fetch, pipeline, publish."""

# `run_issue` reads top to bottom as the flow; each stage below it is one function. Every
# stage is idempotent (the status comment is edited in place, publish converges on one
# branch and one pull request), so arq's re-run after a crash neither duplicates nor loses
# work. However the run ends, `_finish` frees the issue for the next label event.

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from arq.worker import Retry

from frognano.app.attempt import Attempt, RunDeps
from frognano.app.bestof import BestOf, best_of
from frognano.app.bestof_texts import attempt_lines
from frognano.app.cancelling import RunCancelled
from frognano.app.events.decisions import RunRequest
from frognano.app.intake import IntakeQueue, Waiting
from frognano.app.ledger import LabelledIssue
from frognano.app.markdown import code
from frognano.app.permissions import role_at_least
from frognano.app.policy_note import policy_note
from frognano.app.publish import PublishRequest, publish
from frognano.app.status import (
    Cancelled,
    Error,
    NoPullRequest,
    Published,
    Queued,
    TreeRefused,
)
from frognano.app.status_comment import StatusComment, reply
from frognano.errors import FrogNanoError, SandboxBusy
from frognano.github.archive import ArchiveRefused
from frognano.github.auth import ACKNOWLEDGE, FETCH, PUBLISH, Permissions
from frognano.github.client import RepoClient
from frognano.github.models import FileChange
from frognano.log import bound_contextvars, get_logger
from frognano.policy.models import EffectivePolicy
from frognano.policy.paths import path_matches
from frognano.run.leftout import LeftOutLink
from frognano.run.pipeline import SolveOutcome

__all__ = ["RUN_MAX_TRIES", "run_issue"]

log = get_logger(__name__)

RUN_MAX_TRIES = 3


async def run_issue(deps: RunDeps, request: RunRequest, *, run_id: str, attempt: int) -> str:
    """One run for one issue (`attempt` is arq's try, from 1). Returns how it ended:
    published, no_pull_request, unauthorised, refused (the base), cancelled or disabled;
    raises arq's Retry to wait for a sandbox, and whatever failed otherwise."""
    run = _Run(deps, request, run_id, attempt)
    issue = request.issue
    with bound_contextvars(run_id=run_id, repo=issue.repo, issue=issue.number):
        result = "error"
        try:
            result = await _stages(run)
        except asyncio.CancelledError:
            result = "cancelled"
            raise
        except Retry:
            result = "waiting"  # the same run, deferred: it keeps the issue's single flight
            raise
        else:
            return result
        finally:
            await _finish(run, result)


async def _stages(run: _Run) -> str:  # noqa: PLR0911 - one return per outcome
    standing = run.deps.policies.standing()
    policy = standing.policies.for_repo(run.request.issue.repo)
    if not policy.enabled:
        log.info("run.disabled")
        return "disabled"
    ack = await _authorise(run, policy)
    if ack is None:
        return "unauthorised"
    if await _refuse_base(run, policy, ack):
        return "refused"
    request = run.request
    labelled = LabelledIssue(request.issue.number, request.title, request.body, request.labeller)
    await run.deps.ledger.keep_issue(run.run_id, labelled)  # what every later round works from
    attempt = await _acknowledge(run, ack, policy_note(standing))
    status = attempt.status
    try:
        async with _fetch(run) as base:
            outcome, best = await _pipeline(run, policy, base, attempt)
        if not outcome.patch_ready:
            lines = attempt_lines(best, {}) if best is not None else ()
            await status.say(NoPullRequest(why=outcome.report, run_id=run.run_id, attempts=lines))
            return "no_pull_request"
        await _publish(run, policy, base, outcome, attempt, best)
    except RunCancelled as exc:
        await status.say(Cancelled(reason=str(exc), run_id=run.run_id))
        return "cancelled"
    except SandboxBusy as exc:
        await _wait_for_sandbox(run, status, exc)
    except ArchiveRefused as exc:
        # The repository's own content refused its archive: its maintainers can act on that.
        log.warning("run.archive_refused", reason=str(exc))
        await status.say(TreeRefused(why=exc.why, member=exc.member, run_id=run.run_id,
                                     label=run.request.label))  # fmt: skip
        return "no_pull_request"
    except asyncio.CancelledError:
        # arq aborted the job (a cancel that arrived while it was queued or running).
        with contextlib.suppress(Exception):
            await asyncio.shield(_say_cancelled(run, status))
        raise
    except Exception:
        log.exception("run.failed")
        with contextlib.suppress(Exception):
            await status.say(Error(run_id=run.run_id))
        raise
    return "published"


@dataclass(frozen=True)
class _Run:
    """What every stage of one run is about."""

    deps: RunDeps
    request: RunRequest
    run_id: str
    attempt: int

    async def client(self, permissions: Permissions) -> RepoClient:
        """The issue's repository, with a token narrowed to one stage's `permissions`."""
        issue = self.request.issue
        return await self.deps.app.repo_client(
            issue.installation_id, issue.repo, issue.repo_id, permissions
        )


async def _authorise(run: _Run, policy: EffectivePolicy) -> RepoClient | None:
    """The acknowledging client when the labeller may start a run, else None."""
    ack = await run.client(ACKNOWLEDGE)
    labeller = run.request.labeller
    allowed, role = await role_at_least(ack, labeller, policy.trigger.min_permission)
    if not allowed:
        # No comment: an outsider must not be able to make the bot talk.
        log.warning("run.unauthorised", labeller=labeller, role=role)
        return None
    return ack


async def _acknowledge(run: _Run, ack: RepoClient, note: str | None) -> Attempt:
    """👀 on the issue, and its status comment saying the run is queued (with `note` under
    it: the policy files fail to load)."""
    issue = run.request.issue
    attempt = Attempt.on_issue(run.deps, ack, issue=issue.number, repo_id=issue.repo_id,
                               run_id=run.run_id, number=run.attempt, note=note)  # fmt: skip
    await ack.react(issue.number, "eyes")
    await attempt.status.say(Queued(run_id=run.run_id))
    return attempt


async def _refuse_base(run: _Run, policy: EffectivePolicy, ack: RepoClient) -> bool:
    """True, after a one-line reply and before any other trace on the issue, when the base a
    writer picked is not in `publish.base_branches` (the default branch always is) or is
    not a branch of the repository."""
    request = run.request
    base = request.base
    if base is None:
        return False
    fetch = await run.client(FETCH)
    default, _sha = await fetch.default_branch()
    if base != default and path_matches(base, policy.publish.base_branches) is None:
        why = "the policy's `publish.base_branches` does not list it"
    elif await fetch.branch_sha(base) is None:
        why = "the repository has no such branch"
    else:
        return False
    log.warning("run.base_refused", why=why)
    text = f"FrogNano did not start a run on {code(base)}: {why}."
    await reply(ack, request.issue.number, request.delivery_id, request.labeller, text)
    return True


@dataclass(frozen=True)
class _Base:
    branch: str
    sha: str
    tree: Path
    """The base commit's files; gone once `_fetch` exits."""
    picked: bool = False
    """A branch a writer picked, not the default one."""
    left_out: tuple[LeftOutLink, ...] = ()
    """The repository's symlinks leading outside it, which the download left out."""


@contextlib.asynccontextmanager
async def _fetch(run: _Run) -> AsyncIterator[_Base]:
    """The base's head commit (the default branch's unless a writer picked one), downloaded
    into a scratch directory."""
    fetch = await run.client(FETCH)
    branch, sha = await fetch.default_branch()
    base = run.request.base
    picked = base is not None and base != branch
    if base is not None and picked:
        branch, head = base, await fetch.branch_sha(base)
        if head is None:
            raise FrogNanoError(f"the base branch {base} is gone")
        sha = head
    with tempfile.TemporaryDirectory(prefix="frognano-base-") as scratch:
        tree = await fetch.download_tree(sha, Path(scratch) / "tree")
        left_out = tuple(LeftOutLink(link.path, link.target) for link in tree.left_out)
        yield _Base(branch, sha, tree.root, picked, left_out)


async def _pipeline(
    run: _Run, policy: EffectivePolicy, base: _Base, attempt: Attempt
) -> tuple[SolveOutcome, BestOf | None]:
    """Solve the issue on the base tree (sandbox, agent, verification, gate), cancellable;
    with policy `agent.attempts` above 1, that many times, and the strongest is the outcome."""
    request = run.request
    job = attempt.job(
        repo_dir=base.tree,
        title=request.title,
        body=request.body,
        repo=request.issue.repo,
        policy=policy,
        left_out=base.left_out,
    )
    count = policy.agent.attempts
    if count == 1:
        return await attempt.solve(job, can_cancel=True), None
    best = await best_of(attempt, job, count, can_cancel=True)
    return best.outcome, best


async def _publish(  # noqa: PLR0917 - the run, then what it made
    run: _Run,
    policy: EffectivePolicy,
    base: _Base,
    outcome: SolveOutcome,
    attempt: Attempt,
    best: BestOf | None,
) -> None:
    """The verified patch (best-of-N: the chosen attempt's) as a draft pull request, linked
    from the status comment."""
    request = run.request
    folder = attempt.trajectory_folder if best is None else best.choice.folder
    asked = PublishRequest(
        report=outcome.report,
        changes=[FileChange(c.path, c.mode or "100644", c.content) for c in outcome.changes],
        base_sha=base.sha,
        base_branch=base.branch,
        issue_number=request.issue.number,
        issue_title=request.title,
        issue_body=request.body,
        labeller=request.labeller,
        labeller_id=request.labeller_id,
        run_id=run.run_id,
        trajectory_location=f"{folder}/trajectory.jsonl",
        story=attempt.story() if best is None else best.choice.story,
        fresh_branch=request.retry,
        picked_base=base.picked,
        best_of=best,
    )
    published = await publish(
        await run.client(PUBLISH),
        asked,
        policy=policy.publish,
        app_login=await run.deps.app.app_login(),
    )
    pull = published.pull
    await attempt.status.say(
        Published(
            url=pull.html_url,
            draft=pull.draft,
            run_id=run.run_id,
            story_url=published.verification_url,
            left_out=outcome.report["left_out_links"],
            hidden=outcome.report["hidden_input"],
            attempts=attempt_lines(best, {}) if best is not None else (),
        )
    )


async def _wait_for_sandbox(run: _Run, status: StatusComment, busy: SandboxBusy) -> NoReturn:
    """Defer the run while the sandbox quota is full, saying so on the issue; give up with
    the usual error comment after the last attempt."""
    attempt = run.attempt
    if attempt >= RUN_MAX_TRIES:
        log.exception("run.no_sandbox", attempts=attempt)
        with contextlib.suppress(Exception):
            await status.say(Error(run_id=run.run_id))
        raise busy
    delay = run.deps.busy_retry_seconds * attempt
    log.warning("run.sandbox_busy", error=str(busy), retry_in=delay, attempt=attempt)
    await status.say(Queued(run_id=run.run_id, retry_in=delay))
    raise Retry(defer=delay) from busy


async def _say_cancelled(run: _Run, status: StatusComment) -> None:
    reason = await run.deps.queue.cancel_reason(run.run_id) or "the run was cancelled"
    await status.say(Cancelled(reason=reason, run_id=run.run_id))


async def _finish(run: _Run, result: str) -> None:
    """Count the run and free the issue (unless it only waits for a sandbox)."""
    deps, issue = run.deps, run.request.issue
    deps.runs.labels(result=result).inc()
    if result == "waiting":
        return
    waiting = await deps.queue.finish_run(issue.repo_id, issue.number, run.run_id)
    if result == "unauthorised":
        await _requeue_others(deps.queue, waiting, run.request.labeller)
    elif waiting:
        log.info("run.waiting_triggers_dropped", count=len(waiting))


async def _requeue_others(queue: IntakeQueue, waiting: list[Waiting], labeller: str) -> None:
    """After an unauthorised labeller's run, the label events that waited for it are not
    dropped: each other labeller's is queued (the first as a run, the rest waiting for it),
    so an outsider's label cannot block a writer's. Their permission is checked in turn."""
    seen: set[str] = set()
    for entry in waiting:
        if entry.labeller == labeller or entry.labeller in seen or entry.request is None:
            continue
        seen.add(entry.labeller)
        submission = await queue.requeue(entry)
        log.info(
            "run.waiting_trigger_queued",
            labeller=entry.labeller,
            delivery=entry.delivery_id,
            status=submission.status,
            job_id=submission.job_id,
        )
