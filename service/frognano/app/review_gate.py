"""The review gate job: read a pull request from GitHub and complete its human-review check."""

# Who must not approve is read from FrogNano's own records (pull_history.py): the markers of
# the App's `FrogNano / verification` check runs on the commits FrogNano made (the labeller,
# and who asked for each round), and the ledger's record of who pushed any other commit. A
# pull request without FrogNano's record, or one holding a commit nobody is recorded to have
# pushed: `action_required`, saying why, whatever the reviews.

from __future__ import annotations

from frognano.app.events.decisions import ReviewGateCheck
from frognano.app.ledger import Ledger
from frognano.app.markdown import md, mention
from frognano.app.pull_history import read_history
from frognano.app.review import (
    HUMAN_REVIEW_CHECK,
    SHORT_SHA,
    VERIFICATION_CHECK,
    ReviewVerdict,
    evaluate,
    permission_logins,
    unrecorded,
    unverified,
)
from frognano.github.auth import REVIEW_GATE, GitHubApp
from frognano.github.client import RepoClient
from frognano.github.errors import GitHubError
from frognano.log import get_logger

__all__ = ["complete_review_check", "review_gate"]

log = get_logger(__name__)

_BUILTIN_ROLES = frozenset({"admin", "maintain", "write", "triage", "read", "none"})


async def _decide(
    client: RepoClient, check: ReviewGateCheck, ledger: Ledger, head_sha: str, author: str
) -> ReviewVerdict:
    app_login = client.app_login or ""
    if not app_login:
        raise GitHubError("the review gate needs the App's login")
    if author.casefold() != app_login.casefold():
        return unverified(head_sha, f"it was opened by {mention(author)}, not by this app")
    pushers = await ledger.pushers(check.repo_id, check.pull_number)
    history = await read_history(client, check.pull_number, head_sha, pushers)
    if history.origin is None:
        return unverified(
            head_sha,
            f"none of its commits carries this app's `{VERIFICATION_CHECK}` check run "
            "with the record of who started the run",
        )
    problem = history.unknown(app_login)
    if problem is not None:
        return unrecorded(head_sha, problem)
    excluded = history.excluded(app_login)
    reviews = await client.reviews(check.pull_number)
    permissions = {}
    for login in permission_logins(
        reviews, head_sha=head_sha, excluded=excluded, app_login=app_login
    ):
        role_name, legacy = await client.permission_levels(login)
        # A custom role is judged by its base role, which the legacy field shows.
        permissions[login] = role_name if role_name in _BUILTIN_ROLES else legacy
    return evaluate(
        reviews,
        head_sha=head_sha,
        excluded=excluded,
        app_login=app_login,
        permissions=permissions,
    )


async def review_gate(app: GitHubApp, check: ReviewGateCheck, ledger: Ledger) -> str:
    """The review gate job's work (worker.review_gate_job): record who pushed (a synchronize
    delivery), re-read the pull request, its head and its reviews from GitHub (the delivery
    may be stale or out of order), decide, and complete the human-review check on the
    CURRENT head. Returns the conclusion.

    When deciding fails after the head is known, the check is completed as
    `action_required` (best effort) and the error raised.
    """
    repo, number = check.repo, check.pull_number
    if check.pusher is not None and check.head_sha:
        await ledger.record_push(check.repo_id, number, check.head_sha, check.pusher)
    client = await app.repo_client(check.installation_id, repo, check.repo_id, REVIEW_GATE)
    bound = log.bind(repo=repo, pull=number, delivery_id=check.delivery_id)
    async with client:
        pull = await client.pull(number)
        head = pull.head_sha
        if check.head_sha and head != check.head_sha:
            bound.info("review_gate.head_moved", delivered=check.head_sha)
        try:
            verdict = await _decide(client, check, ledger, head, pull.author)
        except Exception as exc:
            failed = ReviewVerdict(
                conclusion="action_required",
                title="The review gate could not decide",
                summary=(
                    f"The review gate failed while reading {head[:SHORT_SHA]}'s reviews: "
                    f"{type(exc).__name__}: {md(str(exc))}. It is blocked until an event "
                    "retries it."
                ),
                approver=None,
            )
            try:
                await complete_review_check(client, head, failed)
            except GitHubError as publish_error:
                bound.warning("review_gate.failure_unrecorded", error=str(publish_error))
            raise
        await complete_review_check(client, head, verdict)
    bound.info(
        "review_gate.decided", head=head, conclusion=verdict.conclusion, approver=verdict.approver
    )
    return verdict.conclusion


async def complete_review_check(client: RepoClient, head_sha: str, verdict: ReviewVerdict) -> int:
    """Complete the human-review check on `head_sha` as `verdict` says; returns its id."""
    return await client.upsert_check_run(
        head_sha,
        HUMAN_REVIEW_CHECK,
        status="completed",
        conclusion=verdict.conclusion,
        title=verdict.title,
        summary=verdict.summary,
    )
