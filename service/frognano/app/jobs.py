"""What the intake queue stores and returns: job arguments as JSON, submissions, waiting events."""

# A job's `request` argument is the trigger decision it was queued for (RunRequest,
# CommandRequest, FollowUpRequest, ReviewGateCheck, DropTokens: frozen dataclasses). Each one's
# JSON form is derived from the dataclass itself (jobschema.Schema: its fields, their order,
# types and defaults); `to_job` writes it and `from_job` reads one back, validated, so nothing
# else reads a job argument by string key.
#
# The JSON form is a contract with what is already queued: jobs that a running deployment
# queued must still decode after an upgrade, and the bytes a value is written as do not change
# (tests/app/data/job_payloads.txt records them). Fields are only ever added with a default
# (runs queued before `labeller_id`, `retry` or `base` existed lack them), and keys `from_job`
# does not know are ignored, so an older worker still runs what a newer receiver queued during
# a rolling update.

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Required, TypedDict, TypeVar

from frognano.app.events.decisions import (
    CancelRequest,
    CommandRequest,
    DropTokens,
    ReviewGateCheck,
    RunRequest,
)
from frognano.app.events.followups import FollowUpRequest
from frognano.app.jobschema import MalformedJob, Schema

__all__ = [
    "JobData",
    "JobPayload",
    "MalformedJob",
    "ReplyBody",
    "Status",
    "Submission",
    "Submittable",
    "Waiting",
    "deserialize",
    "from_job",
    "serialize",
    "submission_reply",
    "text",
    "to_job",
    "waiting_events",
]

Status = Literal["queued", "duplicate", "already_running", "cancelled", "nothing_to_cancel"]
Submittable = (
    RunRequest | CancelRequest | CommandRequest | FollowUpRequest | ReviewGateCheck | DropTokens
)
JobPayload = RunRequest | CommandRequest | FollowUpRequest | ReviewGateCheck | DropTokens
"""What a job's `request` argument holds, once `from_job` has read it."""
JobData = dict[str, Any]
"""A job's `request` argument as stored: the JSON object `to_job` writes."""
P = TypeVar("P", bound=JobPayload)

_SCHEMAS: dict[type[Any], Schema[Any]] = {
    RunRequest: Schema(RunRequest, "the run job's request"),
    CommandRequest: Schema(CommandRequest, "the command job's request"),
    FollowUpRequest: Schema(FollowUpRequest, "the follow-up job's request"),
    ReviewGateCheck: Schema(ReviewGateCheck, "the review gate job's request"),
    DropTokens: Schema(DropTokens, "the drop-tokens job's request"),
}


def serialize(data: Any) -> bytes:
    """arq `job_serializer`: compact JSON. Values JSON cannot hold (an exception in a failed
    job's result) are stored as their repr."""
    return json.dumps(data, separators=(",", ":"), default=repr).encode()


def deserialize(data: bytes) -> Any:
    """arq `job_deserializer`."""
    return json.loads(data)


def _schema(kind: type[Any]) -> Schema[Any]:
    schema = _SCHEMAS.get(kind)
    if schema is None:
        raise TypeError(f"{kind.__name__} is not a job payload")
    return schema


def to_job(payload: JobPayload) -> JobData:
    """The JSON-able form of a job's `request` argument, as stored in Redis: the payload's
    fields in their order (a nested dataclass an object, a tuple a list)."""
    return _schema(type(payload)).write(payload)


def from_job(kind: type[P], data: object) -> P:
    """Read back what `to_job` wrote for a `kind` payload (JSON from Redis: untrusted in
    shape). Raises MalformedJob naming the first field that is missing or of the wrong type."""
    result: P = _schema(kind).read(data)
    return result


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
