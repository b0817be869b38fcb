"""What the intake queue stores and returns: job arguments as JSON, submissions, waiting events."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from frognano.app.triggers import CancelRequest, DropTokens, ReviewGateCheck, RunRequest

Status = Literal["queued", "duplicate", "already_running", "cancelled", "nothing_to_cancel"]
Submittable = RunRequest | CancelRequest | ReviewGateCheck | DropTokens


def serialize(data: Any) -> bytes:
    """arq `job_serializer`: compact JSON. Values JSON cannot hold (an exception in a failed
    job's result) are stored as their repr."""
    return json.dumps(data, separators=(",", ":"), default=repr).encode()


def deserialize(data: bytes) -> Any:
    """arq `job_deserializer`."""
    return json.loads(data)


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
    request: dict[str, Any] | None = None
    """The run job's `request` argument for this event (see above), to queue it later."""


def run_request(request: RunRequest) -> dict[str, Any]:
    # By hand: dataclasses.asdict deep-copies, a tenth of a delivery's time.
    issue = request.issue
    return {
        "issue": {
            "installation_id": issue.installation_id,
            "repo": issue.repo,
            "repo_id": issue.repo_id,
            "number": issue.number,
        },
        "delivery_id": request.delivery_id,
        "labeller": request.labeller,
        "label": request.label,
        "title": request.title,
        "body": request.body,
        "labeller_id": request.labeller_id,
    }


class ReviewJob(TypedDict):
    """The review gate job's `request` argument."""

    installation_id: int
    repo: str
    repo_id: int
    pull_number: int
    head_sha: str
    """The pull request's head as the delivery saw it."""
    delivery_id: str


def review_request(check: ReviewGateCheck) -> ReviewJob:
    return {
        "installation_id": check.installation_id,
        "repo": check.repo,
        "repo_id": check.repo_id,
        "pull_number": check.pull_number,
        "head_sha": check.head_sha,
        "delivery_id": check.delivery_id,
    }


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def waiting_events(entries: list[bytes | str]) -> list[Waiting]:
    found = []
    for entry in entries:
        data = json.loads(entry)
        found.append(
            Waiting(
                data["delivery_id"],
                data["labeller"],
                data["label"],
                data["at"],
                data.get("request"),
            )
        )
    return found
