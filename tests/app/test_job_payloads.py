"""Job payloads as queued: recorded JSON decodes and re-encodes byte for byte; what is refused."""

# data/job_payloads.txt holds, one per line, `case<TAB>payload kind<TAB>JSON`: the JSON that
# `serialize(to_job(value))` wrote for each value below at fac2afe (before the payload schema),
# and the forms queued before later fields existed (the same JSON less those keys). The JSON is
# what sits in Redis (in `arq:job:` and the waiting list), so a new encoding must write the same
# bytes, and every recorded form must still decode.
#
# The table after it pins what `from_job` accepted and refused at fac2afe, message for message.

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Literal

import pytest

from frognano.app.events.decisions import (
    CancelRequest,
    CommandRequest,
    DropTokens,
    IssueRef,
    ReviewGateCheck,
    RunRequest,
)
from frognano.app.events.followups import FollowUpRequest
from frognano.app.jobs import JobPayload, deserialize, from_job, serialize, to_job
from frognano.app.jobschema import Schema
from frognano.errors import FrogNanoError

RECORDED = Path(__file__).parent / "data" / "job_payloads.txt"
KINDS: dict[str, type[JobPayload]] = {
    kind.__name__: kind
    for kind in (RunRequest, CommandRequest, FollowUpRequest, ReviewGateCheck, DropTokens)
}

ISSUE = IssueRef(100, "acme/calc", 42, 7)
ODD = 'Division ÷ by zero ✓ 🐸 "quoted" back\\slash\ttab\nnew line \x00 \u2028 \ud800 lone'
RUN = RunRequest(ISSUE, "d-1", "alice", "frognano", "T", "B", 5, True, "release/1.2")
COMMAND = CommandRequest(ISSUE, "c-1", "alice", 5, 900, ("retry", "base=dev"), "frognano", "T", "B")
FOLLOW = FollowUpRequest(100, "acme/calc", 42, 12, "f-1", "alice", 5, 901, "/frognano again")
FOLLOW_REVIEW = dataclasses.replace(FOLLOW, kind="review", commenter_id=None, body=ODD)
REVIEW = ReviewGateCheck(100, "acme/calc", 42, 12, "b" * 40, "r-1", "mallory")
DROP = DropTokens(100, "i-1")

# Values today's `to_job` writes: every field set, then the defaults and edge values.
WRITTEN: dict[str, JobPayload] = {
    "run": RUN,
    "run-defaults": RunRequest(ISSUE, "d-2", "bob", "frognano:dev", "", ""),
    "run-odd-text": RunRequest(
        IssueRef(2**63 + 1, "Acme/Ünïcode", 0, 2**31), "d-3", "ü", "🐸", ODD, ODD, 2**40
    ),
    "command": COMMAND,
    "command-no-words": dataclasses.replace(COMMAND, commenter_id=None, words=(), body=ODD),
    "follow-up": FOLLOW,
    "follow-up-review": FOLLOW_REVIEW,
    "follow-up-review-comment": dataclasses.replace(FOLLOW, kind="review_comment"),
    "review": REVIEW,
    "review-no-pusher": dataclasses.replace(REVIEW, pusher=None),
    "drop-tokens": DROP,
}
# Forms queued before a field existed (the recorded JSON lacks it): what they read as.
OLD: dict[str, JobPayload] = {
    "run-before-labeller-id": dataclasses.replace(RUN, labeller_id=None, retry=False, base=None),
    "run-before-retry": dataclasses.replace(RUN, retry=False, base=None),
    "run-before-base": dataclasses.replace(RUN, base=None),
    "follow-up-before-kind": dataclasses.replace(FOLLOW_REVIEW, kind="comment"),
    "review-before-pusher": dataclasses.replace(REVIEW, pusher=None),
}
OLD_LACKS = {
    "run-before-labeller-id": ("run", ("labeller_id", "retry", "base")),
    "run-before-retry": ("run", ("retry", "base")),
    "run-before-base": ("run", ("base",)),
    "follow-up-before-kind": ("follow-up-review", ("kind",)),
    "review-before-pusher": ("review", ("pusher",)),
}


def _recorded() -> dict[str, tuple[type[JobPayload], bytes]]:
    found = {}
    for line in RECORDED.read_text(encoding="ascii").splitlines():
        if line and not line.startswith("#"):
            case, kind, job = line.split("\t")
            found[case] = (KINDS[kind], job.encode())
    return found


def test_every_case_is_recorded() -> None:
    assert list(_recorded()) == [*WRITTEN, *OLD]


@pytest.mark.parametrize("case", list(WRITTEN))
def test_new_values_encode_byte_for_byte_as_recorded(case: str) -> None:
    kind, job = _recorded()[case]
    value = WRITTEN[case]
    assert type(value) is kind
    assert serialize(to_job(value)) == job
    # The waiting list's entry embeds the same object with json.dumps' default separators.
    assert json.dumps(to_job(value)) == json.dumps(json.loads(job))


@pytest.mark.parametrize("case", [*WRITTEN, *OLD])
def test_recorded_payloads_decode(case: str) -> None:
    kind, job = _recorded()[case]
    expected = WRITTEN.get(case) or OLD[case]
    decoded = from_job(kind, deserialize(job))
    assert decoded == expected
    assert type(decoded) is kind


# What from_job accepts and refuses --------------------------------------------------------------

ABSENT = object()
BASES: dict[str, JobPayload] = {
    "run": RUN,
    "command": COMMAND,
    "follow-up": FOLLOW,
    "review": REVIEW,
    "drop": DROP,
}
WHERE = {
    "run": "the run job's request",
    "command": "the command job's request",
    "follow-up": "the follow-up job's request",
    "review": "the review gate job's request",
    "drop": "the drop-tokens job's request",
}


def _wrong(field: str, expected: str, value: object) -> str:
    where, _, key = field.rpartition(".")
    return f"{{where}}{'.' + where if where else ''}: {key!r} must be {expected}, not " + (
        type(value).__name__
    )


def _ok(value: object) -> tuple[object, object]:
    return value, ("ok", value)


def _integers(field: str, optional: bool = False) -> list[tuple[str, object, object]]:
    cases: list[tuple[str, object, object]] = [(field, *_ok(v)) for v in (0, -3, 2**64)]
    refused: list[object] = [True, False, 7.0, "7", [7], {}]
    if optional:
        cases += [(field, None, ("ok", None)), (field, ABSENT, ("ok", None))]
    else:
        refused.append(None)
        where, _, key = field.rpartition(".")
        cases.append((field, ABSENT, f"{{where}}{'.' + where if where else ''} has no {key!r}"))
    return cases + [(field, v, _wrong(field, "an integer", v)) for v in refused]


def _strings(field: str, optional: bool = False) -> list[tuple[str, object, object]]:
    cases: list[tuple[str, object, object]] = [(field, *_ok(v)) for v in ("", "é", ODD)]
    refused: list[object] = [3, True, 1.5, ["T"], {"a": "b"}]
    if optional:
        cases += [(field, None, ("ok", None)), (field, ABSENT, ("ok", None))]
    else:
        refused.append(None)
        where, _, key = field.rpartition(".")
        cases.append((field, ABSENT, f"{{where}}{'.' + where if where else ''} has no {key!r}"))
    return cases + [(field, v, _wrong(field, "a string", v)) for v in refused]


NOT_STRINGS: tuple[object, ...] = (3, True, ["review"])
NOT_FLAGS: tuple[object, ...] = (None, 1, 0, "true", [])
TABLE: dict[str, list[tuple[str, object, object]]] = {
    "run": [
        *_integers("issue.installation_id"),
        *_integers("issue.repo_id"),
        *_integers("issue.number"),
        *_strings("issue.repo"),
        *_strings("delivery_id"),
        *_strings("labeller"),
        *_strings("label"),
        *_strings("title"),
        *_strings("body"),
        *_integers("labeller_id", optional=True),
        *_strings("base", optional=True),
        ("retry", ABSENT, ("ok", False)),
        ("retry", True, ("ok", True)),
        ("retry", False, ("ok", False)),
        *[("retry", v, _wrong("retry", "a boolean", v)) for v in NOT_FLAGS],
        ("issue", None, "{where}.issue is not a JSON object but NoneType"),
        ("issue", [], "{where}.issue is not a JSON object but list"),
        ("issue", "acme/calc#7", "{where}.issue is not a JSON object but str"),
        ("issue", ABSENT, "{where} has no 'issue'"),
        ("issue.extra", "a newer receiver's", ("ok", ISSUE)),
        ("extra", {"nested": True}, ("ok", RUN)),
    ],
    "command": [
        *_integers("comment_id"),
        *_integers("commenter_id", optional=True),
        *_strings("commenter"),
        ("words", [], ("ok", ())),
        ("words", ["stop"], ("ok", ("stop",))),
        ("words", ["a", "b", ""], ("ok", ("a", "b", ""))),
        *[
            ("words", v, _wrong("words", "a list of strings", v))
            for v in (["stop", 3], [["a"]], [None], "stop", None, {"a": 1}, ("stop",))
        ],
        ("words", ABSENT, "{where} has no 'words'"),
        ("extra", 1, ("ok", COMMAND)),
    ],
    "follow-up": [
        *_integers("installation_id"),
        *_integers("pull_number"),
        *_integers("commenter_id", optional=True),
        *_strings("body"),
        ("kind", ABSENT, ("ok", "comment")),
        ("kind", None, ("ok", "comment")),
        *[("kind", v, ("ok", v)) for v in ("comment", "review", "review_comment")],
        *[("kind", v, ("ok", "comment")) for v in ("bogus", "", "REVIEW", "review-comment")],
        *[("kind", v, _wrong("kind", "a string", v)) for v in NOT_STRINGS],
        ("extra", 1, ("ok", FOLLOW)),
    ],
    "review": [
        *_integers("repo_id"),
        *_strings("head_sha"),
        *_strings("pusher", optional=True),
        ("extra", 1, ("ok", REVIEW)),
    ],
    "drop": [
        *_integers("installation_id"),
        *_strings("delivery_id"),
        ("reason", "suspended", ("ok", DROP)),
    ],
}
ROWS = [(base, *row) for base, rows in TABLE.items() for row in rows]


def _set(data: dict[str, Any], field: str, value: object) -> dict[str, Any]:
    head, _, rest = field.partition(".")
    if rest:
        return {**data, head: _set(data[head], rest, value)}
    if value is ABSENT:
        return {key: item for key, item in data.items() if key != head}
    return {**data, head: value}


def _replace(payload: Any, field: str, value: object) -> Any:
    head, _, rest = field.partition(".")
    if head not in {field.name for field in dataclasses.fields(payload)}:
        return payload  # an unknown key: ignored
    if rest:
        return dataclasses.replace(payload, **{head: _replace(getattr(payload, head), rest, value)})
    return dataclasses.replace(payload, **{head: value})


@pytest.mark.parametrize(
    ("base", "field", "value", "expected"),
    ROWS,
    ids=[
        f"{base}-{field}-{'absent' if v is ABSENT else repr(v)[:20]}" for base, field, v, _ in ROWS
    ],
)
def test_what_from_job_accepts_and_refuses(
    base: str, field: str, value: object, expected: object
) -> None:
    payload = BASES[base]
    data = _set(json.loads(serialize(to_job(payload))), field, value)
    if isinstance(expected, tuple):
        got = from_job(type(payload), data)
        assert got == _replace(payload, field, expected[1])
        assert type(got) is type(payload)
    else:
        with pytest.raises(FrogNanoError) as refused:
            from_job(type(payload), data)
        assert isinstance(refused.value, ValueError)
        assert type(refused.value).__name__ == "MalformedJob"
        assert str(refused.value) == str(expected).format(where=WHERE[base])


@pytest.mark.parametrize("base", list(BASES))
@pytest.mark.parametrize("data", [[1, 2], None, "{}", 3, True])
def test_a_request_that_is_not_an_object_is_refused(base: str, data: object) -> None:
    with pytest.raises(FrogNanoError) as refused:
        from_job(type(BASES[base]), data)
    assert str(refused.value) == f"{WHERE[base]} is not a JSON object but {type(data).__name__}"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"title": 3, "body": 4}, "{where}: 'title' must be a string, not int"),
        ({"body": 4, "title": 3}, "{where}: 'title' must be a string, not int"),
        ({"issue": None, "delivery_id": 3}, "{where}.issue is not a JSON object but NoneType"),
        ({"retry": None, "labeller_id": "5"}, "{where}: 'labeller_id' must be an integer, not str"),
        ({"base": 1, "retry": 1}, "{where}: 'retry' must be a boolean, not int"),
        (
            {"issue": {"number": "7", "repo": 3}, "delivery_id": None},
            "{where}.issue has no 'installation_id'",
        ),
        (
            {"issue": {**to_job(RUN)["issue"], "number": "7", "repo": 3}, "title": 3},
            "{where}.issue: 'repo' must be a string, not int",
        ),
    ],
)
def test_the_first_wrong_field_is_named(changes: dict[str, object], message: str) -> None:
    with pytest.raises(FrogNanoError) as refused:
        from_job(RunRequest, {**to_job(RUN), **changes})
    assert str(refused.value) == message.format(where=WHERE["run"])


def test_only_job_payloads_are_read() -> None:
    kind: Any = CancelRequest
    with pytest.raises(TypeError, match="CancelRequest is not a job payload"):
        from_job(kind, {})


@dataclasses.dataclass(frozen=True)
class _Measured:
    seconds: float


@dataclasses.dataclass(frozen=True)
class _Chosen:
    kind: Literal["a", "b"]


def test_a_field_without_a_json_form_is_refused_when_the_schema_is_made() -> None:
    with pytest.raises(TypeError, match="no JSON form for <class 'float'>"):
        Schema(_Measured, "a test")
    with pytest.raises(TypeError, match="no JSON form for Literal"):
        Schema(_Chosen, "a test")  # no default to read an unknown kind as
