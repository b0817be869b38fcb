"""Job arguments: the JSON each job's `request` is stored as, and reading it back."""

from __future__ import annotations

import dataclasses
import json

import pytest

from frognano.app.events.decisions import (
    CommandRequest,
    DropTokens,
    IssueRef,
    ReviewGateCheck,
    RunRequest,
)
from frognano.app.events.followups import FollowUpRequest
from frognano.app.jobs import MalformedJob, deserialize, from_job, serialize, to_job

RUN = RunRequest(IssueRef(100, "acme/calc", 42, 7), "d-1", "alice", "frognano", "T", "B", 5)
REVIEW = ReviewGateCheck(100, "acme/calc", 42, 12, "b" * 40, "r-1")
DROP = DropTokens(100, "i-1")
FOLLOW = FollowUpRequest(100, "acme/calc", 42, 12, "f-1", "alice", 5, 901, "/frognano again")
COMMAND = CommandRequest(
    IssueRef(100, "acme/calc", 42, 7),
    "c-1",
    "alice",
    5,
    900,
    ("retry", "now"),
    "frognano",
    "T",
    "B",
)


@pytest.mark.parametrize(
    "payload", [RUN, REVIEW, DROP, FOLLOW], ids=lambda payload: type(payload).__name__
)
def test_the_stored_form_is_the_dataclass_and_reads_back(
    payload: RunRequest | ReviewGateCheck | DropTokens | FollowUpRequest,
) -> None:
    stored = to_job(payload)
    # The wire form queued jobs already have: the trigger's fields, in their order.
    assert list(json.loads(serialize(stored))) == list(dataclasses.asdict(payload))
    assert stored == dataclasses.asdict(payload)
    assert from_job(type(payload), deserialize(serialize(stored))) == payload


def test_a_run_queued_before_labeller_id_existed_still_reads() -> None:
    stored = dict(to_job(RUN))
    del stored["labeller_id"], stored["retry"], stored["base"]
    assert from_job(RunRequest, stored) == dataclasses.replace(RUN, labeller_id=None)


def test_a_retry_run_and_a_command_read_back() -> None:
    retry = dataclasses.replace(RUN, retry=True, base="release/1.2")
    assert from_job(RunRequest, deserialize(serialize(to_job(retry)))) == retry
    stored = to_job(COMMAND)
    assert stored == {**dataclasses.asdict(COMMAND), "words": ["retry", "now"]}
    assert from_job(CommandRequest, deserialize(serialize(stored))) == COMMAND
    with pytest.raises(MalformedJob, match="'words' must be a list of strings, not list"):
        from_job(CommandRequest, {**stored, "words": ["stop", 3]})
    with pytest.raises(MalformedJob, match="'retry' must be a boolean, not int"):
        from_job(RunRequest, {**to_job(RUN), "retry": 1})


def test_a_review_follow_up_reads_back_and_one_queued_before_kind_is_a_comment() -> None:
    review = dataclasses.replace(FOLLOW, kind="review")
    assert from_job(FollowUpRequest, deserialize(serialize(to_job(review)))) == review
    old = dict(to_job(review))
    del old["kind"]
    assert from_job(FollowUpRequest, old) == FOLLOW


def test_a_push_check_names_its_pusher_and_one_queued_before_it_reads_as_none() -> None:
    pushed = dataclasses.replace(REVIEW, pusher="mallory")
    assert from_job(ReviewGateCheck, deserialize(serialize(to_job(pushed)))) == pushed
    old = dict(to_job(pushed))
    del old["pusher"]
    assert from_job(ReviewGateCheck, old) == REVIEW
    with pytest.raises(MalformedJob, match="'pusher' must be a string, not int"):
        from_job(ReviewGateCheck, {**to_job(pushed), "pusher": 3})


def test_keys_it_does_not_know_are_ignored() -> None:
    # What a newer receiver may queue during a rolling update.
    assert from_job(DropTokens, {**to_job(DROP), "reason": "suspended"}) == DROP


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], "the run job's request is not a JSON object but list"),
        ({**to_job(RUN), "issue": None}, r"request.issue is not a JSON object but NoneType"),
        ({**to_job(RUN), "title": 3}, "'title' must be a string, not int"),
        (
            {**to_job(RUN), "issue": {**to_job(RUN)["issue"], "number": "7"}},
            r"request.issue: 'number' must be an integer, not str",
        ),
        ({**to_job(RUN), "labeller_id": True}, "'labeller_id' must be an integer, not bool"),
        ({k: v for k, v in to_job(RUN).items() if k != "body"}, "request has no 'body'"),
    ],
)
def test_a_malformed_run_job_names_the_field(data: object, message: str) -> None:
    with pytest.raises(MalformedJob, match=message):
        from_job(RunRequest, data)


def test_a_malformed_review_job_is_refused() -> None:
    with pytest.raises(MalformedJob, match="the review gate job's request has no 'head_sha'"):
        from_job(ReviewGateCheck, {k: v for k, v in to_job(REVIEW).items() if k != "head_sha"})
    with pytest.raises(ValueError, match="'installation_id' must be an integer"):
        from_job(DropTokens, {"installation_id": 1.5, "delivery_id": "i-1"})
