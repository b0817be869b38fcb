"""The human-review gate: the check `FrogNano / human review` on a FrogNano pull request.

The check on the pull request's CURRENT head commit is `success` only when the latest review
of some user is an approval of exactly that commit, and that user

1. is not a bot (`type` Bot, or a login ending in `[bot]`),
2. is not this app,
3. did not apply the label that started the run (the "labeller"), and
4. has write, maintain or admin access, read through the collaborator-permission API when
   the gate runs (never trusted from a payload).

Otherwise it is completed as `action_required`, with a summary naming what is missing and
each approval that did not count and why. It is never left `in_progress` (GitHub turns checks
left incomplete for 14 days `stale`). Each user's latest review decides: a later
CHANGES_REQUESTED or DISMISSED review (GitHub also turns a dismissed approval itself into
DISMISSED) withdraws an earlier approval. COMMENTED and PENDING reviews change nothing, as in
GitHub's own review decision. Logins compare case-insensitively, as GitHub's do.

Who the labeller is must not be forgeable by whoever can edit the pull request's text, so it
is read from the `external_id` of the app's own `FrogNano / verification` check run: only the
App that created a check run can write it. The worker sets it when it publishes, with
`review_marker(run_id, labeller, issue)`, a compact JSON object:

    {"run":"20250101-120000-abc123","labeller":"alice","issue":7}

The gate looks for the marker on the head commit first; when the head has none (someone
pushed on top of the app's commit) it looks at every commit of the pull request that the app
authored, and every labeller found there is excluded. Check runs of any other App are
ignored, whatever their name. No marker: `action_required`, saying that the pull request was
not opened by a FrogNano run the gate can verify.

`evaluate` is pure; `review_gate` is the arq job that reads GitHub and writes the check.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from frognano.app.jobs import ReviewJobData, from_job
from frognano.app.triggers import ReviewGateCheck
from frognano.github.auth import REVIEW_GATE, GitHubApp
from frognano.github.client import RepoClient
from frognano.github.errors import GitHubError, GitHubNotFound
from frognano.github.models import Review, is_bot
from frognano.log import get_logger

__all__ = [
    "HUMAN_REVIEW_CHECK",
    "VERIFICATION_CHECK",
    "WRITE_ROLES",
    "ReviewOrigin",
    "ReviewVerdict",
    "complete_review_check",
    "evaluate",
    "find_origins",
    "parse_review_marker",
    "permission_logins",
    "review_gate",
    "review_marker",
    "unverified",
]

log = get_logger(__name__)

HUMAN_REVIEW_CHECK = "FrogNano / human review"
VERIFICATION_CHECK = "FrogNano / verification"

WRITE_ROLES = frozenset({"write", "maintain", "admin"})
"""Roles whose approval can count (GitHub's `role_name`, or the legacy `permission`)."""
_BUILTIN_ROLES = frozenset({"admin", "maintain", "write", "triage", "read", "none"})
_NEUTRAL_STATES = frozenset({"COMMENTED", "PENDING"})
"""Review states that leave a user's earlier review in force."""

_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
"""A GitHub user login (people only: bots never start a run)."""
_MARKER_LIMIT = 200
_PULL_COMMITS_LIMIT = 250
"""GitHub lists at most this many commits of a pull request."""
_APP_COMMITS_LIMIT = 50
"""Most of the app's own commits searched for markers; more and the gate fails closed."""
_SHORT = 7


# -- the marker ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReviewOrigin:
    """The FrogNano run a pull request came from, as its verification check run records it."""

    run_id: str
    labeller: str
    """Login of whoever applied the label that started the run."""
    issue: int


def review_marker(run_id: str, labeller: str, issue: int) -> str:
    """The `external_id` the worker gives the `FrogNano / verification` check run."""
    if not run_id or not run_id.isprintable() or len(run_id) > 100:
        raise ValueError(f"{run_id!r} is not a run id")
    if not _LOGIN.fullmatch(labeller):
        raise ValueError(f"{labeller!r} is not a GitHub user login")
    if isinstance(issue, bool) or not isinstance(issue, int) or issue < 1:
        raise ValueError(f"{issue!r} is not an issue number")
    return json.dumps(
        {"run": run_id, "labeller": labeller, "issue": issue},
        separators=(",", ":"),
        ensure_ascii=True,
    )


def parse_review_marker(text: str | None) -> ReviewOrigin | None:
    """The origin recorded by `review_marker`, or None for anything else (never raises)."""
    if not text or len(text) > _MARKER_LIMIT:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or set(data) != {"run", "labeller", "issue"}:
        return None
    run_id, labeller, issue = data["run"], data["labeller"], data["issue"]
    if (
        not isinstance(run_id, str)
        or not run_id
        or not run_id.isprintable()
        or not isinstance(labeller, str)
        or not _LOGIN.fullmatch(labeller)
        or isinstance(issue, bool)
        or not isinstance(issue, int)
        or issue < 1
    ):
        return None
    return ReviewOrigin(run_id=run_id, labeller=labeller, issue=issue)


# -- the decision (pure) ------------------------------------------------------------------------


@dataclass(frozen=True)
class ReviewVerdict:
    """What the human-review check says; `approver` is set only on success."""

    conclusion: Literal["success", "action_required"]
    title: str
    summary: str
    approver: str | None


def _latest(reviews: Sequence[Review]) -> dict[str, tuple[Review, bool]]:
    """Each user's (casefolded) latest deciding review, and whether they approved before it."""
    latest: dict[str, tuple[Review, bool]] = {}
    for review in reviews:
        if review.state in _NEUTRAL_STATES:
            continue
        key = review.user.casefold()
        earlier = latest.get(key)
        approved_before = earlier is not None and (earlier[1] or earlier[0].state == "APPROVED")
        latest[key] = (review, approved_before)
    return latest


def _screen(
    review: Review, *, head_sha: str, excluded: Collection[str], app_login: str
) -> str | None:
    """Why an approval cannot count whatever the approver's permission; None if it may."""
    if review.commit_id != head_sha:
        old = review.commit_id[:_SHORT] if review.commit_id else "an unknown commit"
        return f"approved {old}, not the current head {head_sha[:_SHORT]}"
    if review.user.casefold() == app_login.casefold():
        return "is this app"
    if is_bot(review.user, review.user_type):
        return "is a bot"
    if review.user.casefold() in excluded:
        return "applied the label that started the FrogNano run"
    return None


def _excluded(labeller: str, other_labellers: Collection[str]) -> set[str]:
    return {labeller.casefold(), *(login.casefold() for login in other_labellers)}


def permission_logins(
    reviews: Sequence[Review],
    *,
    head_sha: str,
    labeller: str,
    app_login: str,
    other_labellers: Collection[str] = (),
) -> list[str]:
    """The logins whose permission `evaluate` needs: the current approvers of the head who
    are neither bots, the app nor a labeller. Look up nobody else."""
    excluded = _excluded(labeller, other_labellers)
    return [
        review.user
        for review, _ in _latest(reviews).values()
        if review.state == "APPROVED"
        and _screen(review, head_sha=head_sha, excluded=excluded, app_login=app_login) is None
    ]


def _role(permissions: Mapping[str, str], login: str) -> str:
    folded = {key.casefold(): value for key, value in permissions.items()}
    return folded.get(login.casefold(), "none")


def _mentions(logins: Collection[str]) -> str:
    names = [f"@{login}" for login in sorted(set(logins), key=str.casefold)]
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def evaluate(
    reviews: Sequence[Review],
    *,
    head_sha: str,
    labeller: str,
    app_login: str,
    permissions: Mapping[str, str],
    other_labellers: Collection[str] = (),
) -> ReviewVerdict:
    """Decide the human-review check of commit `head_sha` from the pull request's reviews
    (oldest first, as the REST API lists them). `permissions` maps logins to their role
    (`permission_logins` says whose are needed; a login missing from it has none).
    `other_labellers` are excluded like `labeller` (other runs whose commits are in the PR)."""
    excluded = _excluded(labeller, other_labellers)
    short = head_sha[:_SHORT]
    approvers: list[tuple[str, str]] = []
    refused: list[str] = []
    for review, approved_before in _latest(reviews).values():
        who = f"@{review.user}"
        if review.state == "CHANGES_REQUESTED":
            if approved_before:
                refused.append(f"{who} requested changes after approving, which withdraws it")
            continue
        if review.state == "DISMISSED":
            refused.append(f"{who}: their review was dismissed")
            continue
        if review.state != "APPROVED":
            continue
        reason = _screen(review, head_sha=head_sha, excluded=excluded, app_login=app_login)
        if reason is None:
            role = _role(permissions, review.user)
            if role in WRITE_ROLES:
                approvers.append((review.user, role))
                continue
            reason = f"has {role} access; write, maintain or admin is needed"
        refused.append(f"{who} {reason}")

    labellers = [labeller, *other_labellers]
    not_counted = ""
    if refused:
        not_counted = "\n\nApprovals that did not count:\n" + "\n".join(
            f"- {line}" for line in refused
        )
    if approvers:
        login, role = approvers[0]
        others = "".join(f", @{name} ({level})" for name, level in approvers[1:])
        return ReviewVerdict(
            conclusion="success",
            title=f"Approved by @{login}",
            summary=(
                f"@{login} ({role}){others} approved {short}, the current head, independently "
                f"of {_mentions(labellers)} who started the FrogNano run.{not_counted}"
            ),
            approver=login,
        )
    return ReviewVerdict(
        conclusion="action_required",
        title=f"Waiting for an independent approval of {short}",
        summary=(
            f"This pull request needs an approving review of {short} from someone with write "
            f"access other than {_mentions(labellers)}. Bots and this app do not count, and a "
            "new push needs a new approval: only an approval of the current head counts."
            f"{not_counted}"
        ),
        approver=None,
    )


def unverified(head_sha: str, reason: str) -> ReviewVerdict:
    """The verdict for a pull request that no verifiable FrogNano run opened: no approval
    can turn it green, because the gate cannot tell who must not approve."""
    return ReviewVerdict(
        conclusion="action_required",
        title="Not a FrogNano run the gate can verify",
        summary=(
            f"The pull request was not opened by a FrogNano run it can verify: {reason}. "
            f"Without the app's own `{VERIFICATION_CHECK}` check run recording who started "
            f"the run, no approval of {head_sha[:_SHORT]} can pass this check. Label the "
            "issue again to start a new run, or have an administrator decide."
        ),
        approver=None,
    )


# -- the job ------------------------------------------------------------------------------------


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
        log.warning("cannot list the pull request's commits", pull=number)
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


async def review_gate(ctx: dict[str, Any], *, request: ReviewJobData) -> str:
    """arq job `review_gate` (queue.REVIEW_JOB): re-read the pull request, its head and its
    reviews from GitHub (the delivery may be stale or out of order), decide, and complete
    the human-review check on the CURRENT head. Returns the conclusion.

    `request` is what jobs.to_job wrote for a ReviewGateCheck; `ctx["github_app"]` is the
    GitHubApp (`ctx` stays a dict: arq's job protocol wants one). When deciding fails after
    the head is known, the check is completed as `action_required` (best effort) and the
    error raised.
    """
    app: GitHubApp = ctx["github_app"]
    check = from_job(ReviewGateCheck, request)
    repo, number = check.repo, check.pull_number
    client = await app.repo_client(check.installation_id, repo, check.repo_id, REVIEW_GATE)
    bound = log.bind(repo=repo, pull=number, delivery_id=check.delivery_id)
    async with client:
        pull = await client.pull(number)
        head = pull.head_sha
        if head != check.head_sha:
            bound.info("the head moved since the delivery", delivered=check.head_sha)
        try:
            verdict = await _decide(client, number, head, pull.author)
        except Exception as exc:
            failed = ReviewVerdict(
                conclusion="action_required",
                title="The review gate could not decide",
                summary=(
                    f"The review gate failed while reading {head[:_SHORT]}'s reviews: "
                    f"{type(exc).__name__}: {exc}. It is blocked until an event retries it."
                ),
                approver=None,
            )
            try:
                await complete_review_check(client, head, failed)
            except GitHubError as publish_error:
                bound.warning("could not record the failure", error=str(publish_error))
            raise
        await complete_review_check(client, head, verdict)
    bound.info(
        "review gate decided", head=head, conclusion=verdict.conclusion, approver=verdict.approver
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
