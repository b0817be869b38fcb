"""The human-review gate's decision (pure) and the marker recording who asked for each round."""

# The check `FrogNano / human review` on a FrogNano pull request's CURRENT head commit is
# `success` only when the latest review of some user is an approval of exactly that commit,
# and that user
#
# 1. is not a bot (`type` Bot, or a login ending in `[bot]`),
# 2. is not this app,
# 3. neither started nor steered what the pull request holds: not the labeller of the run
#    that opened it, not whoever asked for a follow-up round whose commit it holds (or wrote
#    the review comments that round answered), not whoever pushed a commit onto it (GitHub's
#    own rule: the most recent push is approved by someone other than its pusher), and
# 4. has write, maintain or admin access, read through the collaborator-permission API when
#    the gate runs (never trusted from a payload).
#
# Otherwise it is completed as `action_required`, with a summary naming who may not approve
# and why, and each approval that did not count and why. It is never left `in_progress`
# (GitHub turns checks left incomplete for 14 days `stale`). Each user's latest review
# decides: a later CHANGES_REQUESTED or DISMISSED review (GitHub also turns a dismissed
# approval itself into DISMISSED) withdraws an earlier approval. COMMENTED and PENDING
# reviews change nothing, as in GitHub's own review decision. Logins compare
# case-insensitively, as GitHub's do.
#
# Who asked for what must not be forgeable by whoever can write to the pull request, its
# commits or the repository, so it is read from the `external_id` of the app's own
# `FrogNano / verification` check run on each commit FrogNano made: only the App that
# created a check run can write it. The worker sets it with `review_marker`, a compact JSON
# object:
#
#     {"run":"20250101-120000-abc123","labeller":"alice","issue":7,"round":2,
#      "asked":["bob"],"answers":"5001","text":"<sha256 of the issue as labelled>"}
#
# `round` 1 is the run that opened the pull request; a follow-up's commit carries its round,
# who asked for it, and the key of the request it answers (so a re-run finds it done). A
# marker of the older form (`run`, `labeller` and `issue` only) still reads, as a round of
# unknown number and asker. Who pushed the commits FrogNano did not make comes from the
# `pull_request.synchronize` deliveries (ledger.py). `evaluate` decides; review_gate.py
# reads GitHub and writes the check.

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from frognano.app.markdown import mention
from frognano.github.models import Review, is_bot

__all__ = [
    "HUMAN_REVIEW_CHECK",
    "LABELLED",
    "SHORT_SHA",
    "VERIFICATION_CHECK",
    "WRITE_ROLES",
    "Excluded",
    "ReviewOrigin",
    "ReviewVerdict",
    "evaluate",
    "parse_review_marker",
    "permission_logins",
    "review_marker",
    "unrecorded",
    "unverified",
]

HUMAN_REVIEW_CHECK = "FrogNano / human review"
VERIFICATION_CHECK = "FrogNano / verification"

WRITE_ROLES = frozenset({"write", "maintain", "admin"})
"""Roles whose approval can count (GitHub's `role_name`, or the legacy `permission`)."""
_NEUTRAL_STATES = frozenset({"COMMENTED", "PENDING"})
"""Review states that leave a user's earlier review in force."""

_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
"""A GitHub user login (people only: bots never start a run or a round)."""
_DIGEST = re.compile(r"[0-9a-f]{64}")
_KEY = re.compile(r"[A-Za-z0-9_.-]{1,100}")
_MARKER_LIMIT = 1_500
_MAX_ASKED = 20
"""Most logins one round records (the commenter and the authors of what it answered)."""
_OLD_KEYS = frozenset({"run", "labeller", "issue"})
_KEYS = _OLD_KEYS | {"round", "asked", "answers", "text"}
SHORT_SHA = 7
"""How many hex digits of a commit the check's texts show."""
LABELLED = "applied the label that started the FrogNano run"
"""Why the labeller of the run that opened the pull request may not approve it."""


# -- the marker ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReviewOrigin:
    """One round of a FrogNano pull request, as the verification check run of its commit
    records it (only this App can write that record)."""

    run_id: str
    """The run that opened the pull request (its issue text is kept under this id)."""
    labeller: str
    """Login of whoever applied the label that started that run."""
    issue: int
    round: int | None = 1
    """1 for the run that opened the pull request; None in a marker of the older form."""
    asked: tuple[str, ...] = ()
    """Who asked for this round and wrote what it answered (the labeller for round 1)."""
    answers: str | None = None
    """The key of the request this round answers (`FollowUpRequest.reply_key`)."""
    text: str | None = None
    """SHA-256 (hex) of the issue's title and body as labelled (`LabelledIssue.digest`)."""


def review_marker(
    run_id: str,
    labeller: str,
    issue: int,
    *,
    round: int = 1,
    asked: Sequence[str] = (),
    answers: str | None = None,
    text: str | None = None,
) -> str:
    """The `external_id` the worker gives the `FrogNano / verification` check run of a
    commit it made: round 1 (`asked` defaults to the labeller) or a follow-up's round."""
    if not run_id or not run_id.isprintable() or len(run_id) > 100:
        raise ValueError(f"{run_id!r} is not a run id")
    people = list(dict.fromkeys([*(asked or (labeller,))]))
    for login in (labeller, *people):
        if not _LOGIN.fullmatch(login):
            raise ValueError(f"{login!r} is not a GitHub user login")
    if len(people) > _MAX_ASKED:
        raise ValueError(f"a round records at most {_MAX_ASKED} logins")
    for name, value in (("issue", issue), ("round", round)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{value!r} is not a {name} number")
    if answers is not None and not _KEY.fullmatch(answers):
        raise ValueError(f"{answers!r} is not a request key")
    if text is not None and not _DIGEST.fullmatch(text):
        raise ValueError(f"{text!r} is not a SHA-256 digest")
    record = {"run": run_id, "labeller": labeller, "issue": issue, "round": round,
              "asked": people, "answers": answers, "text": text}  # fmt: skip
    return json.dumps(record, separators=(",", ":"), ensure_ascii=True)


def parse_review_marker(text: str | None) -> ReviewOrigin | None:
    """The round recorded by `review_marker` (or its older form), or None for anything
    else (never raises)."""
    if not text or len(text) > _MARKER_LIMIT:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or set(data) not in (_OLD_KEYS, _KEYS):
        return None
    run_id, labeller, issue = data["run"], data["labeller"], data["issue"]
    if (
        not isinstance(run_id, str)
        or not run_id
        or not run_id.isprintable()
        or not isinstance(labeller, str)
        or not _LOGIN.fullmatch(labeller)
        or not _number(issue)
    ):
        return None
    if set(data) == _OLD_KEYS:
        return ReviewOrigin(run_id=run_id, labeller=labeller, issue=issue, round=None)
    return _round(data, run_id, labeller, issue)


def _round(data: dict[str, object], run_id: str, labeller: str, issue: int) -> ReviewOrigin | None:
    """The rest of a marker of the current form, checked; None when any of it is wrong."""
    number, asked, answers, digest = data["round"], data["asked"], data["answers"], data["text"]
    if (
        not isinstance(number, int)
        or not _number(number)
        or not isinstance(asked, list)
        or not 0 < len(asked) <= _MAX_ASKED
        or not all(isinstance(login, str) and _LOGIN.fullmatch(login) for login in asked)
        or not (answers is None or (isinstance(answers, str) and _KEY.fullmatch(answers)))
        or not (digest is None or (isinstance(digest, str) and _DIGEST.fullmatch(digest)))
    ):
        return None
    return ReviewOrigin(run_id, labeller, issue, number, tuple(asked), answers, digest)


def _number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


# -- the decision (pure) ------------------------------------------------------------------------


@dataclass(frozen=True)
class Excluded:
    """Someone whose approval cannot count, and why (`LABELLED`, "asked for round 2", ...)."""

    login: str
    why: str


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


def _reasons(excluded: Sequence[Excluded]) -> dict[str, list[str]]:
    """Each excluded (casefolded) login's reasons, in order, each once."""
    found: dict[str, list[str]] = {}
    for item in excluded:
        whys = found.setdefault(item.login.casefold(), [])
        if item.why not in whys:
            whys.append(item.why)
    return found


def _screen(
    review: Review, *, head_sha: str, reasons: Mapping[str, list[str]], app_login: str
) -> str | None:
    """Why an approval cannot count whatever the approver's permission; None if it may."""
    if review.commit_id != head_sha:
        old = review.commit_id[:SHORT_SHA] if review.commit_id else "an unknown commit"
        return f"approved {old}, not the current head {head_sha[:SHORT_SHA]}"
    if review.user.casefold() == app_login.casefold():
        return "is this app"
    if is_bot(review.user, review.user_type):
        return "is a bot"
    whys = reasons.get(review.user.casefold())
    return " and ".join(whys) if whys else None


def permission_logins(
    reviews: Sequence[Review], *, head_sha: str, excluded: Sequence[Excluded], app_login: str
) -> list[str]:
    """The logins whose permission `evaluate` needs: the current approvers of the head who
    are neither bots, the app nor excluded. Look up nobody else."""
    reasons = _reasons(excluded)
    return [
        review.user
        for review, _ in _latest(reviews).values()
        if review.state == "APPROVED"
        and _screen(review, head_sha=head_sha, reasons=reasons, app_login=app_login) is None
    ]


def _role(permissions: Mapping[str, str], login: str) -> str:
    folded = {key.casefold(): value for key, value in permissions.items()}
    return folded.get(login.casefold(), "none")


def _mentions(logins: Sequence[str]) -> str:
    names = [mention(login) for login in dict.fromkeys(logins)]
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _who_may_not(excluded: Sequence[Excluded]) -> str:
    """The check's paragraph on who may not approve and why."""
    first = {item.login.casefold(): item.login for item in reversed(excluded)}
    lines = [
        f"- {mention(first[login])} {' and '.join(whys)}"
        for login, whys in _reasons(excluded).items()
    ]
    return (
        "\n\nWho may not approve: whoever started or steered what this pull request holds, "
        "since their approval would not be independent (as GitHub requires the most recent "
        "push to be approved by someone other than its pusher):\n" + "\n".join(lines)
    )


def evaluate(
    reviews: Sequence[Review],
    *,
    head_sha: str,
    excluded: Sequence[Excluded],
    app_login: str,
    permissions: Mapping[str, str],
) -> ReviewVerdict:
    """Decide the human-review check of commit `head_sha` from the pull request's reviews
    (oldest first, as the REST API lists them). `excluded`: who started or steered the pull
    request (never empty: the labeller at least). `permissions` maps logins to their role
    (`permission_logins` says whose are needed; a login missing from it has none)."""
    if not excluded:
        raise ValueError("the gate needs at least the labeller to exclude")
    reasons = _reasons(excluded)
    short = head_sha[:SHORT_SHA]
    approvers: list[tuple[str, str]] = []
    refused: list[str] = []
    for review, approved_before in _latest(reviews).values():
        who = mention(review.user)
        if review.state == "CHANGES_REQUESTED":
            if approved_before:
                refused.append(f"{who} requested changes after approving, which withdraws it")
            continue
        if review.state == "DISMISSED":
            refused.append(f"{who}: their review was dismissed")
            continue
        if review.state != "APPROVED":
            continue
        reason = _screen(review, head_sha=head_sha, reasons=reasons, app_login=app_login)
        if reason is None:
            role = _role(permissions, review.user)
            if role in WRITE_ROLES:
                approvers.append((review.user, role))
                continue
            reason = f"has {role} access; write, maintain or admin is needed"
        refused.append(f"{who} {reason}")

    who_not = _mentions([item.login for item in excluded])
    explained = _who_may_not(excluded)
    not_counted = ""
    if refused:
        not_counted = "\n\nApprovals that did not count:\n" + "\n".join(
            f"- {line}" for line in refused
        )
    if approvers:
        login, role = approvers[0]
        others = "".join(f", {mention(name)} ({level})" for name, level in approvers[1:])
        return ReviewVerdict(
            conclusion="success",
            title=f"Approved by {mention(login)}",
            summary=(
                f"{mention(login)} ({role}){others} approved {short}, the current head, "
                f"independently of {who_not}.{explained}{not_counted}"
            ),
            approver=login,
        )
    return ReviewVerdict(
        conclusion="action_required",
        title=f"Waiting for an independent approval of {short}",
        summary=(
            f"This pull request needs an approving review of {short} from someone with write "
            f"access other than {who_not}. Bots and this app do not count, and a new push "
            "needs a new approval: only an approval of the current head counts."
            f"{explained}{not_counted}"
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


def unrecorded(head_sha: str, reason: str) -> ReviewVerdict:
    """The verdict for a FrogNano pull request holding something FrogNano has no record of
    (who pushed a commit, who asked for a round): the gate cannot tell who must not
    approve, so no approval counts."""
    return ReviewVerdict(
        conclusion="action_required",
        title=f"No record of who must not approve {head_sha[:SHORT_SHA]}",
        summary=(
            f"The gate cannot tell who must not approve this pull request: {reason}. "
            f"No approval of {head_sha[:SHORT_SHA]} can pass this check until it can; "
            "ask for a new round with the command, label the issue again for a new run, or "
            "have an administrator decide."
        ),
        approver=None,
    )
