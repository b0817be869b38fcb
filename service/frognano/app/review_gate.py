"""The review gate job: read a pull request from GitHub and complete its human-review check."""

# The runs behind a pull request are read from the app's `FrogNano / verification` check
# runs (review.py says why there). The gate looks for the marker on the head commit first;
# when the head has none (someone pushed on top of the app's commit) it looks at every commit
# of the pull request that the app authored, and every labeller found there is excluded.
# Check runs of any other App are ignored, whatever their name. No marker: `action_required`,
# saying that the pull request was not opened by a FrogNano run the gate can verify.

from __future__ import annotations

from frognano.app.review import (
    HUMAN_REVIEW_CHECK,
    SHORT_SHA,
    VERIFICATION_CHECK,
    ReviewOrigin,
    ReviewVerdict,
    evaluate,
    parse_review_marker,
    permission_logins,
    unverified,
)
from frognano.app.triggers import ReviewGateCheck
from frognano.github.auth import REVIEW_GATE, GitHubApp
from frognano.github.client import RepoClient
from frognano.github.errors import GitHubError, GitHubNotFound
from frognano.log import get_logger

__all__ = ["complete_review_check", "find_origins", "review_gate"]

log = get_logger(__name__)

_BUILTIN_ROLES = frozenset({"admin", "maintain", "write", "triage", "read", "none"})
_PULL_COMMITS_LIMIT = 250
"""GitHub lists at most this many commits of a pull request."""
_APP_COMMITS_LIMIT = 50
"""Most of the app's own commits searched for markers; more and the gate fails closed."""


async def _markers_on(client: RepoClient, sha: str, app_id: int) -> list[ReviewOrigin]:
    runs = await client.check_runs(sha, VERIFICATION_CHECK)
    found = []
    for run in runs:
        if run.app_id != app_id:  # another App can name a check run anything
            continue
        origin = parse_review_marker(run.external_id)
        if origin is not None:
            found.append(origin)
    return found


async def find_origins(client: RepoClient, number: int, head_sha: str) -> list[ReviewOrigin]:
    """The runs recorded on the app's verification check runs of pull request `number`,
    newest first: those on `head_sha`, or when it has none, those on every commit of the pull
    request that the app authored. Raises GitHubError when the search cannot be complete."""
    if client.app_id is None or client.app_login is None:
        raise GitHubError("the review gate needs the App's numeric id and login")
    origins = await _markers_on(client, head_sha, client.app_id)
    if origins:
        return origins
    try:
        commits = await client.pull_commits(number)
    except GitHubNotFound:
        log.warning("review_gate.commits_unlisted", pull=number)
        return []
    if len(commits) >= _PULL_COMMITS_LIMIT:
        raise GitHubError(
            f"pull request #{number} has {len(commits)} or more commits, too many to search "
            "for the FrogNano run that opened it"
        )
    app_login = client.app_login.casefold()
    ours = [
        commit.sha
        for commit in reversed(commits)
        if commit.sha != head_sha and (commit.author or "").casefold() == app_login
    ]
    if len(ours) > _APP_COMMITS_LIMIT:
        raise GitHubError(
            f"pull request #{number} has {len(ours)} commits by the app, too many to search "
            "for the FrogNano runs behind it"
        )
    for sha in ours:
        origins.extend(await _markers_on(client, sha, client.app_id))
    return origins


async def _decide(client: RepoClient, number: int, head_sha: str, author: str) -> ReviewVerdict:
    app_login = client.app_login or ""
    if author.casefold() != app_login.casefold():
        return unverified(head_sha, f"it was opened by @{author}, not by this app")
    origins = await find_origins(client, number, head_sha)
    if not origins:
        return unverified(
            head_sha,
            f"none of its commits carries this app's `{VERIFICATION_CHECK}` check run "
            "with the record of who started the run",
        )
    labeller = origins[0].labeller
    others = sorted({o.labeller for o in origins[1:]} - {labeller})
    reviews = await client.reviews(number)
    permissions = {}
    for login in permission_logins(
        reviews,
        head_sha=head_sha,
        labeller=labeller,
        app_login=app_login,
        other_labellers=others,
    ):
        role_name, legacy = await client.permission_levels(login)
        # A custom role is judged by its base role, which the legacy field shows.
        permissions[login] = role_name if role_name in _BUILTIN_ROLES else legacy
    return evaluate(
        reviews,
        head_sha=head_sha,
        labeller=labeller,
        app_login=app_login,
        permissions=permissions,
        other_labellers=others,
    )


async def review_gate(app: GitHubApp, check: ReviewGateCheck) -> str:
    """The review gate job's work (worker.review_gate_job): re-read the pull request, its
    head and its reviews from GitHub (the delivery may be stale or out of order), decide,
    and complete the human-review check on the CURRENT head. Returns the conclusion.

    When deciding fails after the head is known, the check is completed as
    `action_required` (best effort) and the error raised.
    """
    repo, number = check.repo, check.pull_number
    client = await app.repo_client(check.installation_id, repo, check.repo_id, REVIEW_GATE)
    bound = log.bind(repo=repo, pull=number, delivery_id=check.delivery_id)
    async with client:
        pull = await client.pull(number)
        head = pull.head_sha
        if head != check.head_sha:
            bound.info("review_gate.head_moved", delivered=check.head_sha)
        try:
            verdict = await _decide(client, number, head, pull.author)
        except Exception as exc:
            failed = ReviewVerdict(
                conclusion="action_required",
                title="The review gate could not decide",
                summary=(
                    f"The review gate failed while reading {head[:SHORT_SHA]}'s reviews: "
                    f"{type(exc).__name__}: {exc}. It is blocked until an event retries it."
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
