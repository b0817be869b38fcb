"""The follow-up job: a writer's command on the App's pull request answered with one commit."""

# The order, and why (docs/github-app.md, "Follow-ups on a pull request"):
#
# 1. The commenter's permission, read from GitHub (the payload says who, not what they may
#    do): below `trigger.min_permission`, nothing at all, not even a reply.
# 2. The pull request: the App's (opened by the App from a branch under the policy's prefix,
#    with FrogNano's records on its commits, pull_history.py), else nothing. A request one of
#    its rounds already answers (a re-run after a crash): done. A closed one, the cap
#    (`publish.max_followups`, counted as FrogNano's commits on it less the first), a commit
#    on it that FrogNano did not make, or an issue whose labelled text FrogNano cannot tell
#    (labelled.py): one short reply, no run.
# 3. One follow-up at a time per pull request (intake_scripts.PullLock): a command arriving
#    while another runs waits (arq's Retry) and runs after it, checks 1 and 2 read again.
# 4. 👀 on the comment (and a note when the issue changed since it was labelled); the
#    original base (the first commit's parent) and the head, both downloaded; the pipeline
#    with `follow_up`, on the issue as labelled; the issue's status comment kept current.
# 5. One commit on the head (no author: GitHub signs it as the App), both check runs on it
#    BEFORE the branch moves: verification with the story and this round's marker (the run,
#    the round, who asked for it and the request it answers: the record a re-run finds),
#    human review `action_required` (an approval of an older head never counts, and whoever
#    asked for this round is not independent of it); then the branch, fast-forward only.

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from arq.worker import Retry

from frognano.agent.followup import Review, ReviewComment
from frognano.app.attempt import Attempt, RunDeps, say_branch_moved
from frognano.app.commit import co_author_trailer, commit_message
from frognano.app.events.decisions import ReviewGateCheck
from frognano.app.events.followups import FollowUpRequest
from frognano.app.labelled import changed_notice, issue_texts
from frognano.app.ledger import LabelledIssue
from frognano.app.markdown import code
from frognano.app.permissions import role_at_least
from frognano.app.policy_note import policy_note
from frognano.app.publish import write_verification_check
from frognano.app.pull_history import PullHistory, read_history
from frognano.app.review import Excluded, evaluate, review_marker
from frognano.app.review_gate import complete_review_check, review_gate
from frognano.app.status import FollowUpCommitted, FollowUpNoCommit
from frognano.app.status_comment import reply
from frognano.github.auth import FETCH, PUBLISH, Permissions
from frognano.github.client import RepoClient
from frognano.github.errors import BranchConflict
from frognano.github.models import FileChange, PullState
from frognano.log import bound_contextvars, get_logger
from frognano.policy.models import EffectivePolicy
from frognano.run.followup import FollowUp
from frognano.run.leftout import LeftOutLink
from frognano.run.pipeline import SolveOutcome
from frognano.run.runid import new_run_id

__all__ = ["FOLLOWUP_MAX_TRIES", "run_follow_up"]

log = get_logger(__name__)

ANSWER: Permissions = {
    "metadata": "read",
    "issues": "write",
    "pull_requests": "write",
    "checks": "read",
}
"""Check the commenter and the pull request (its commits, the verification check's marker),
react and reply on it, and keep the issue's status comment current."""
FOLLOWUP_MAX_TRIES = 200
"""arq tries of one follow-up job: each wait for the pull request's running follow-up is one
(`busy_retry_seconds` apart)."""


async def run_follow_up(  # noqa: PLR0911 - one return per rule
    deps: RunDeps, request: FollowUpRequest, *, job_id: str, attempt: int
) -> str:
    """Answer one command on a pull request (once: a re-run finds its commit). Returns: disabled,
    unauthorised, not_ours, closed, cap, pushed, moved, no_commit or committed; raises
    arq's Retry while another follow-up runs on the pull request."""
    with bound_contextvars(
        repo=request.repo, pull=request.pull_number, delivery=request.delivery_id
    ):
        if request.kind == "review":
            # The review counts for the gate exactly as one without the command would.
            check = ReviewGateCheck(request.installation_id, request.repo, request.repo_id,
                                    request.pull_number, "", request.delivery_id)  # fmt: skip
            await review_gate(deps.app, check, deps.ledger)
        standing = deps.policies.standing()
        policy = standing.policies.for_repo(request.repo)
        if not policy.enabled:
            log.info("followup.disabled")
            return "disabled"
        ack = await _client(deps, request, ANSWER)
        allowed, role = await role_at_least(ack, request.commenter, policy.trigger.min_permission)
        if not allowed:
            log.warning("followup.unauthorised", commenter=request.commenter, role=role)
            return "unauthorised"
        app_login = await deps.app.app_login()
        pull = await ack.pull(request.pull_number)
        ours = pull.head_ref.startswith(policy.publish.branch_prefix)
        if not ours or pull.author.casefold() != app_login.casefold():
            log.info("followup.not_ours", branch=pull.head_ref, author=pull.author)
            return "not_ours"
        pushers = await deps.ledger.pushers(request.repo_id, pull.number)
        history = await read_history(ack, pull.number, pull.head_sha, pushers)
        if history.origin is None:
            log.info("followup.no_origin")
            return "not_ours"
        if history.answered(request.reply_key) is not None:
            log.info("followup.already_committed")
            return "committed"
        refusal = _refusal(pull, history, policy)
        texts = None if refusal is not None else await issue_texts(deps.ledger, ack, history.origin)
        if texts is not None and texts.labelled is None:
            refusal = "no_text", _no_text(history.origin.issue, policy.trigger.command)
        if refusal is not None or texts is None or texts.labelled is None:
            what, text = refusal or ("no_text", "")
            log.info("followup.refused", why=what)
            await reply(ack, pull.number, request.reply_key, request.commenter, text)
            return what
        holder = await deps.queue.pull_lock.claim(request.repo_id, pull.number, job_id)
        if holder is not None:
            log.info("followup.waiting", running=holder)
            raise Retry(defer=deps.busy_retry_seconds)
        try:
            notice = changed_notice(texts, policy.trigger.command)
            if notice is not None:
                await reply(ack, pull.number, f"{request.reply_key}.issue", request.commenter,
                            notice)  # fmt: skip
            return await _run(
                deps,
                request,
                policy=policy,
                ack=ack,
                pull=pull,
                history=history,
                labelled=texts.labelled,
                attempt=attempt,
                note=policy_note(standing),
            )
        finally:
            await deps.queue.pull_lock.release(request.repo_id, pull.number, job_id)


async def _client(deps: RunDeps, request: FollowUpRequest, permissions: Permissions) -> RepoClient:
    return await deps.app.repo_client(
        request.installation_id, request.repo, request.repo_id, permissions
    )


def _no_text(issue: int, command: str) -> str:
    return (
        f"FrogNano no longer knows the text of issue #{issue} as it was labelled, and the issue "
        "does not read exactly as it did then; it works only from text a writer labelled. "
        f"Comment {code(command + ' retry')} on the issue for a new run from the issue as it "
        "reads now."
    )


def _refusal(
    pull: PullState, history: PullHistory, policy: EffectivePolicy
) -> tuple[str, str] | None:
    """Why a writer's follow-up cannot be served, and the reply saying so; None: it can."""
    if pull.state != "open":
        how = "merged" if pull.merged else "closed"
        return "closed", f"This pull request is {how}: FrogNano adds no commit to it."
    cap = policy.publish.max_followups
    if history.followups >= cap:
        return "cap", (
            f"This pull request has had its {cap} follow-up commit{'s' if cap != 1 else ''} "
            "(the policy's `publish.max_followups`): FrogNano adds no more to it."
        )
    if history.foreign:
        return "pushed", (
            "Someone else pushed to this pull request's branch: FrogNano only adds commits "
            "to a branch that holds its own."
        )
    return None


async def _run(
    deps: RunDeps,
    request: FollowUpRequest,
    *,
    policy: EffectivePolicy,
    ack: RepoClient,
    pull: PullState,
    history: PullHistory,
    labelled: LabelledIssue,
    attempt: int,
    note: str | None,
) -> str:
    """Step 4 above, holding the pull request; `note` goes under the status comment."""
    run_id = new_run_id()
    if request.kind == "comment":  # a review itself has no reactions on GitHub
        await ack.react_to_comment(request.comment_id, "eyes")
    elif request.kind == "review_comment":
        await ack.react_to_review_comment(request.comment_id, "eyes")
    attempt_ = Attempt.on_issue(deps, ack, issue=labelled.issue, repo_id=request.repo_id,
                                run_id=run_id, number=attempt, note=note)  # fmt: skip
    status = attempt_.status
    base_sha = history.ours[0].parent
    if base_sha is None:
        raise ValueError(f"the first commit of #{pull.number} has no parent")
    fetch = await _client(deps, request, FETCH)
    with bound_contextvars(run_id=run_id), tempfile.TemporaryDirectory(prefix="frognano-") as tmp:
        base_tree = await fetch.download_tree(base_sha, Path(tmp) / "base")
        head_tree = await fetch.download_tree(pull.head_sha, Path(tmp) / "head")
        base, head = base_tree.root, head_tree.root
        # The head's commit goes on top of the head: its left-out links count as the base's.
        found = (*base_tree.left_out, *head_tree.left_out)
        left_out = tuple(dict.fromkeys(LeftOutLink(link.path, link.target) for link in found))
        review, asked = await _review(ack, request)
        job = attempt_.job(
            repo_dir=base,
            title=labelled.title,
            body=labelled.body,
            repo=request.repo,
            policy=policy,
            left_out=left_out,
            follow_up=FollowUp(head, review, round=history.followups + 2, head_exclude=()),
        )
        outcome = await attempt_.solve(job, can_cancel=False)
    if not outcome.patch_ready or outcome.follow_up is None or not outcome.follow_up.increment:
        await status.say(FollowUpNoCommit(url=pull.html_url, why=outcome.report, run_id=run_id))
        log.info("followup.no_commit")
        return "no_commit"
    round_ = _Round(history, labelled, history.followups + 2, asked)
    return await _commit(deps, request, pull=pull, round_=round_, outcome=outcome,
                         attempt=attempt_)  # fmt: skip


@dataclass(frozen=True)
class _Round:
    """The round being committed: what it builds on, and who asked for it."""

    history: PullHistory
    labelled: LabelledIssue
    number: int
    asked: tuple[str, ...]
    """The commenter first, then whoever else wrote what the round answers."""

    def marker(self, request: FollowUpRequest) -> str:
        """This round's record on its commit's verification check (review.py)."""
        origin = self.history.origin
        if origin is None:
            raise ValueError("a round of a pull request without FrogNano's record")
        return review_marker(
            origin.run_id,
            origin.labeller,
            origin.issue,
            round=self.number,
            asked=self.asked,
            answers=request.reply_key,
            text=origin.text or self.labelled.digest,
        )

    def excluded(self, app_login: str) -> list[Excluded]:
        why = f"asked for round {self.number}"
        return [*self.history.excluded(app_login), *(Excluded(who, why) for who in self.asked)]


async def _review(client: RepoClient, request: FollowUpRequest) -> tuple[Review, tuple[str, ...]]:
    """What the agent answers (the comment, the review's body and all its line comments, or
    one line comment, re-read from GitHub with its file, line and diff hunk), and who wrote
    it: the commenter first."""
    if request.kind == "comment":
        return Review(body=request.body), (request.commenter,)
    if request.kind == "review_comment":
        found = [await client.review_comment(request.comment_id)]
    else:
        found = await client.review_comments(request.pull_number, request.comment_id)
    comments = tuple(ReviewComment(c.path, c.line, c.diff_hunk, c.body) for c in found)
    authors = (request.commenter, *(c.author for c in found if c.author))
    review_id = request.comment_id if request.kind == "review" else None
    body = request.body if request.kind == "review" else ""
    return Review(body, comments, review_id=review_id), tuple(dict.fromkeys(authors))


async def _commit(
    deps: RunDeps,
    request: FollowUpRequest,
    *,
    pull: PullState,
    round_: _Round,
    outcome: SolveOutcome,
    attempt: Attempt,
) -> str:
    """Step 5 above: the new commit on the head, its check runs, the branch, the status
    comment."""
    if outcome.follow_up is None:
        raise ValueError("a follow-up's outcome without its increment")
    client = await _client(deps, request, PUBLISH)
    app_login = await deps.app.app_login()
    if await client.branch_sha(pull.head_ref) != pull.head_sha:
        return await say_branch_moved(client, pull.number, request.reply_key, request.commenter)
    report, labelled = outcome.report, round_.labelled
    message = commit_message(
        labelled.issue,
        labelled.title,
        report["summary"],
        co_author_login=request.commenter,
        co_author_id=request.commenter_id,
    )
    co_author = co_author_trailer(request.commenter, request.commenter_id)
    changes = [
        FileChange(c.path, c.mode or "100644", c.content) for c in outcome.follow_up.increment
    ]
    sha = await client.create_commit(
        pull.head_sha, changes, message, co_author=co_author.removeprefix("Co-authored-by: ")
    )
    # The checks first: once the branch points at the commit, FrogNano's record of it (who
    # asked, what it answers) is already there for the gate and for a re-run of this job.
    check_id = await write_verification_check(
        client, sha, report, story=attempt.story(), marker=round_.marker(request)
    )
    # No review of the new head yet: the gate's own verdict for that, action_required.
    excluded = round_.excluded(app_login)
    verdict = evaluate([], head_sha=sha, excluded=excluded, app_login=app_login, permissions={})
    await complete_review_check(client, sha, verdict)
    try:
        await client.fast_forward(pull.head_ref, sha)
    except BranchConflict:
        return await say_branch_moved(client, pull.number, request.reply_key, request.commenter)
    story_url = f"{pull.html_url}/checks?check_run_id={check_id}"
    await attempt.status.say(
        FollowUpCommitted(
            url=pull.html_url,
            sha=sha,
            round=round_.number,
            run_id=attempt.run_id,
            story_url=story_url,
            hidden=report["hidden_input"],
        )
    )
    log.info("followup.committed", sha=sha, files=len(changes))
    return "committed"
