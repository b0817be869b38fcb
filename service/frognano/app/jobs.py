"""What the intake queue stores and returns: job arguments as JSON, submissions, waiting events."""

# A job's `request` argument is the trigger decision it was queued for (RunRequest,
# ReviewGateCheck, DropTokens: frozen dataclasses). `to_job` writes its JSON form and
# `from_job` reads one back, validated, so nothing else reads a job argument by string key.
#
# The JSON form is a contract with what is already queued: jobs that a running deployment
# queued must still decode after an upgrade. Fields are only ever added with a default (runs
# queued before `labeller_id`, `retry` or `base` existed lack them), and keys `from_job` does
# not know are ignored, so an older worker still runs what a newer receiver queued during a
# rolling update.

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, Required, TypedDict, overload

from frognano.app.decisions import (
    CancelRequest,
    CommandRequest,
    DropTokens,
    IssueRef,
    ReviewGateCheck,
    RunRequest,
)
from frognano.app.followups import FollowUpRequest, Kind, kind_of
from frognano.app.jobfields import Fields

Status = Literal["queued", "duplicate", "already_running", "cancelled", "nothing_to_cancel"]
Submittable = (
    RunRequest | CancelRequest | CommandRequest | FollowUpRequest | ReviewGateCheck | DropTokens
)
JobPayload = RunRequest | CommandRequest | FollowUpRequest | ReviewGateCheck | DropTokens
"""What a job's `request` argument holds, once `from_job` has read it."""


class IssueData(TypedDict):
    installation_id: int
    repo: str
    repo_id: int
    number: int


class RunJobData(TypedDict):
    """The run job's `request` argument, as stored (a RunRequest)."""

    issue: IssueData
    delivery_id: str
    labeller: str
    label: str
    title: str
    body: str
    labeller_id: NotRequired[int | None]
    """Absent from runs queued before it existed."""
    retry: NotRequired[bool]
    """Absent from runs queued before it existed."""
    base: NotRequired[str | None]
    """Absent from runs queued before it existed."""


class CommandJobData(TypedDict):
    """The command job's `request` argument, as stored (a CommandRequest)."""

    issue: IssueData
    delivery_id: str
    commenter: str
    commenter_id: int | None
    comment_id: int
    words: list[str]
    label: str
    title: str
    body: str


class FollowUpJobData(TypedDict):
    """The follow-up job's `request` argument, as stored (a FollowUpRequest)."""

    installation_id: int
    repo: str
    repo_id: int
    pull_number: int
    delivery_id: str
    commenter: str
    commenter_id: int | None
    comment_id: int
    body: str
    kind: NotRequired[Kind]  # absent: a comment (queued before it existed)


class ReviewJobData(TypedDict):
    """The review gate job's `request` argument, as stored (a ReviewGateCheck)."""

    installation_id: int
    repo: str
    repo_id: int
    pull_number: int
    head_sha: str
    delivery_id: str
    pusher: NotRequired[str | None]
    """Absent from checks queued before it existed, and from events other than a push."""


class DropTokensJobData(TypedDict):
    """The drop-tokens job's `request` argument, as stored (a DropTokens)."""

    installation_id: int
    delivery_id: str


def serialize(data: Any) -> bytes:
    """arq `job_serializer`: compact JSON. Values JSON cannot hold (an exception in a failed
    job's result) are stored as their repr."""
    return json.dumps(data, separators=(",", ":"), default=repr).encode()


def deserialize(data: bytes) -> Any:
    """arq `job_deserializer`."""
    return json.loads(data)


@overload
def to_job(payload: RunRequest) -> RunJobData: ...
@overload
def to_job(payload: CommandRequest) -> CommandJobData: ...
@overload
def to_job(payload: FollowUpRequest) -> FollowUpJobData: ...
@overload
def to_job(payload: ReviewGateCheck) -> ReviewJobData: ...
@overload
def to_job(payload: DropTokens) -> DropTokensJobData: ...
def to_job(
    payload: JobPayload,
) -> RunJobData | CommandJobData | FollowUpJobData | ReviewJobData | DropTokensJobData:
    """The JSON-able form of a job's `request` argument, as stored in Redis."""
    # By hand: dataclasses.asdict deep-copies, a tenth of a delivery's time.
    if isinstance(payload, RunRequest):
        return {
            "issue": _issue_data(payload.issue),
            "delivery_id": payload.delivery_id,
            "labeller": payload.labeller,
            "label": payload.label,
            "title": payload.title,
            "body": payload.body,
            "labeller_id": payload.labeller_id,
            "retry": payload.retry,
            "base": payload.base,
        }
    if isinstance(payload, CommandRequest):
        return {
            "issue": _issue_data(payload.issue),
            "delivery_id": payload.delivery_id,
            "commenter": payload.commenter,
            "commenter_id": payload.commenter_id,
            "comment_id": payload.comment_id,
            "words": list(payload.words),
            "label": payload.label,
            "title": payload.title,
            "body": payload.body,
        }
    if isinstance(payload, FollowUpRequest):
        return {
            "installation_id": payload.installation_id,
            "repo": payload.repo,
            "repo_id": payload.repo_id,
            "pull_number": payload.pull_number,
            "delivery_id": payload.delivery_id,
            "commenter": payload.commenter,
            "commenter_id": payload.commenter_id,
            "comment_id": payload.comment_id,
            "body": payload.body,
            "kind": payload.kind,
        }
    if isinstance(payload, ReviewGateCheck):
        return {
            "installation_id": payload.installation_id,
            "repo": payload.repo,
            "repo_id": payload.repo_id,
            "pull_number": payload.pull_number,
            "head_sha": payload.head_sha,
            "delivery_id": payload.delivery_id,
            "pusher": payload.pusher,
        }
    return {"installation_id": payload.installation_id, "delivery_id": payload.delivery_id}


def _issue_data(issue: IssueRef) -> IssueData:
    return {
        "installation_id": issue.installation_id,
        "repo": issue.repo,
        "repo_id": issue.repo_id,
        "number": issue.number,
    }


def _issue_ref(issue: Fields) -> IssueRef:
    return IssueRef(
        installation_id=issue.integer("installation_id"),
        repo=issue.string("repo"),
        repo_id=issue.integer("repo_id"),
        number=issue.integer("number"),
    )


@overload
def from_job(kind: type[RunRequest], data: object) -> RunRequest: ...
@overload
def from_job(kind: type[CommandRequest], data: object) -> CommandRequest: ...
@overload
def from_job(kind: type[FollowUpRequest], data: object) -> FollowUpRequest: ...
@overload
def from_job(kind: type[ReviewGateCheck], data: object) -> ReviewGateCheck: ...
@overload
def from_job(kind: type[DropTokens], data: object) -> DropTokens: ...
def from_job(kind: type[JobPayload], data: object) -> JobPayload:
    """Read back what `to_job` wrote for a `kind` payload (JSON from Redis: untrusted in
    shape). Raises MalformedJob naming the first field that is missing or of the wrong type."""
    if kind is RunRequest:
        run = Fields(data, "the run job's request")
        return RunRequest(
            _issue_ref(run.nested("issue")),
            delivery_id=run.string("delivery_id"),
            labeller=run.string("labeller"),
            label=run.string("label"),
            title=run.string("title"),
            body=run.string("body"),
            labeller_id=run.optional_integer("labeller_id"),
            retry=run.flag("retry"),
            base=run.optional_string("base"),
        )
    if kind is CommandRequest:
        command = Fields(data, "the command job's request")
        return CommandRequest(
            _issue_ref(command.nested("issue")),
            delivery_id=command.string("delivery_id"),
            commenter=command.string("commenter"),
            commenter_id=command.optional_integer("commenter_id"),
            comment_id=command.integer("comment_id"),
            words=command.strings("words"),
            label=command.string("label"),
            title=command.string("title"),
            body=command.string("body"),
        )
    if kind is FollowUpRequest:
        follow = Fields(data, "the follow-up job's request")
        return FollowUpRequest(
            installation_id=follow.integer("installation_id"),
            repo=follow.string("repo"),
            repo_id=follow.integer("repo_id"),
            pull_number=follow.integer("pull_number"),
            delivery_id=follow.string("delivery_id"),
            commenter=follow.string("commenter"),
            commenter_id=follow.optional_integer("commenter_id"),
            comment_id=follow.integer("comment_id"),
            body=follow.string("body"),
            kind=kind_of(follow.optional_string("kind")),
        )
    if kind is ReviewGateCheck:
        review = Fields(data, "the review gate job's request")
        return ReviewGateCheck(
            installation_id=review.integer("installation_id"),
            repo=review.string("repo"),
            repo_id=review.integer("repo_id"),
            pull_number=review.integer("pull_number"),
            head_sha=review.string("head_sha"),
            delivery_id=review.string("delivery_id"),
            pusher=review.optional_string("pusher"),
        )
    if kind is DropTokens:
        drop = Fields(data, "the drop-tokens job's request")
        return DropTokens(
            installation_id=drop.integer("installation_id"), delivery_id=drop.string("delivery_id")
        )
    raise TypeError(f"{kind.__name__} is not a job payload")


@dataclass(frozen=True)
class Submission:
    """What the queue did with one decision."""

    status: Status
    job_id: str | None = None
    """The arq job started, or the one already running / cancelled; None otherwise."""
    run_id: str | None = None
    """For runs and cancels: the issue's run."""
    previous: str | None = None
    """For duplicates: what the first delivery with this id got (e.g. `queued:run:...`)."""


@dataclass(frozen=True)
class Waiting:
    """A label event that arrived while the issue's run was on."""

    delivery_id: str
    labeller: str
    label: str
    at: float
    """Unix time it arrived."""
    request: RunRequest | None = None
    """The run this event asks for, to queue it later (None: the entry carries none)."""


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def waiting_events(entries: list[bytes | str]) -> list[Waiting]:
    found = []
    for entry in entries:
        data = json.loads(entry)
        request = data.get("request")
        found.append(
            Waiting(
                data["delivery_id"],
                data["labeller"],
                data["label"],
                data["at"],
                None if request is None else from_job(RunRequest, request),
            )
        )
    return found


class ReplyBody(TypedDict, total=False):
    """The JSON the receiver answers a delivery with: `status` always, the rest when known."""

    status: Required[str]
    reason: str
    delivery: str
    job_id: str
    run_id: str
    previous: str


def submission_reply(delivery_id: str, submission: Submission) -> ReplyBody:
    """What the receiver answers a delivery it queued (or found a duplicate of)."""
    body: ReplyBody = {"status": submission.status, "delivery": delivery_id}
    if submission.job_id is not None:
        body["job_id"] = submission.job_id
    if submission.run_id is not None:
        body["run_id"] = submission.run_id
    if submission.previous is not None:
        body["previous"] = submission.previous
    return body
