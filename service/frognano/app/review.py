"""The human-review gate's decision (pure) and the marker recording who started a run."""

# The check `FrogNano / human review` on a FrogNano pull request's CURRENT head commit is
# `success` only when the latest review of some user is an approval of exactly that commit,
# and that user
#
# 1. is not a bot (`type` Bot, or a login ending in `[bot]`),
# 2. is not this app,
# 3. did not apply the label that started the run (the "labeller"), and
# 4. has write, maintain or admin access, read through the collaborator-permission API when
#    the gate runs (never trusted from a payload).
#
# Otherwise it is completed as `action_required`, with a summary naming what is missing and
# each approval that did not count and why. It is never left `in_progress` (GitHub turns
# checks left incomplete for 14 days `stale`). Each user's latest review decides: a later
# CHANGES_REQUESTED or DISMISSED review (GitHub also turns a dismissed approval itself into
# DISMISSED) withdraws an earlier approval. COMMENTED and PENDING reviews change nothing, as
# in GitHub's own review decision. Logins compare case-insensitively, as GitHub's do.
#
# Who the labeller is must not be forgeable by whoever can edit the pull request's text, so
# it is read from the `external_id` of the app's own `FrogNano / verification` check run:
# only the App that created a check run can write it. The worker sets it when it publishes,
# with `review_marker(run_id, labeller, issue)`, a compact JSON object:
#
#     {"run":"20250101-120000-abc123","labeller":"alice","issue":7}
#
# `evaluate` decides; review_gate.py is the job that reads GitHub and writes the check.

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from frognano.github.models import Review, is_bot

__all__ = [
    "HUMAN_REVIEW_CHECK",
    "SHORT_SHA",
    "VERIFICATION_CHECK",
    "WRITE_ROLES",
    "ReviewOrigin",
    "ReviewVerdict",
    "evaluate",
    "parse_review_marker",
    "permission_logins",
    "review_marker",
    "unverified",
]

HUMAN_REVIEW_CHECK = "FrogNano / human review"
VERIFICATION_CHECK = "FrogNano / verification"

WRITE_ROLES = frozenset({"write", "maintain", "admin"})
"""Roles whose approval can count (GitHub's `role_name`, or the legacy `permission`)."""
_NEUTRAL_STATES = frozenset({"COMMENTED", "PENDING"})
"""Review states that leave a user's earlier review in force."""

_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
"""A GitHub user login (people only: bots never start a run)."""
_MARKER_LIMIT = 200
SHORT_SHA = 7
"""How many hex digits of a commit the check's texts show."""


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
        old = review.commit_id[:SHORT_SHA] if review.commit_id else "an unknown commit"
        return f"approved {old}, not the current head {head_sha[:SHORT_SHA]}"
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
    short = head_sha[:SHORT_SHA]
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
            f"the run, no approval of {head_sha[:SHORT_SHA]} can pass this check. Label the "
            "issue again to start a new run, or have an administrator decide."
        ),
        approver=None,
    )
