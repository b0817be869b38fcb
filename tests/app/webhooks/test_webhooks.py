"""Signature checks and delivery parsing (frognano.app.events.webhooks)."""

from __future__ import annotations

import ast
import functools
import hmac
import importlib.util
import inspect
import json
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import FrozenInstanceError
from types import FrameType
from typing import Any

import jsonschema
import pytest
from starlette.datastructures import Headers

from frognano.app.events.webhooks import (
    Delivery,
    MalformedDelivery,
    SignatureError,
    parse_delivery,
    verify_request_signature,
    verify_signature,
)
from frognano.errors import ConfigError, FrogNanoError

from . import payloads

VECTOR_SECRET = b"It's a Secret to Everybody"
VECTOR_BODY = b"Hello, World!"
VECTOR_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
VECTOR_DIGEST = VECTOR_SIGNATURE.removeprefix("sha256=")


# --- signatures ----------------------------------------------------------------------------


def test_githubs_documented_test_vector_verifies() -> None:
    verify_signature(VECTOR_SECRET, VECTOR_BODY, VECTOR_SIGNATURE)
    assert payloads.signature(VECTOR_BODY, VECTOR_SECRET) == VECTOR_SIGNATURE


def test_a_real_delivery_verifies() -> None:
    headers, body = payloads.request("issues", payloads.issues_labeled())
    verify_signature(payloads.SECRET, body, headers["X-Hub-Signature-256"])
    verify_request_signature(payloads.SECRET, headers, body)


def test_errors_are_frognano_errors() -> None:
    assert issubclass(SignatureError, FrogNanoError)
    assert issubclass(MalformedDelivery, FrogNanoError)


@pytest.mark.parametrize("position", [0, 1, 31, 62, 63])
def test_a_digest_wrong_in_any_one_place_is_rejected(position: int) -> None:
    flipped = "0" if VECTOR_DIGEST[position] != "0" else "1"
    digest = VECTOR_DIGEST[:position] + flipped + VECTOR_DIGEST[position + 1 :]
    with pytest.raises(SignatureError, match="does not match") as caught:
        verify_signature(VECTOR_SECRET, VECTOR_BODY, f"sha256={digest}")
    assert VECTOR_DIGEST not in str(caught.value)


def test_the_wrong_secret_is_rejected_without_revealing_the_expected_digest() -> None:
    wrong = payloads.signature(VECTOR_BODY, b"another secret")
    with pytest.raises(SignatureError) as caught:
        verify_signature(VECTOR_SECRET, VECTOR_BODY, wrong)
    assert VECTOR_DIGEST not in str(caught.value)
    assert VECTOR_DIGEST not in repr(caught.value.args)


def test_the_signature_covers_the_raw_body_byte_for_byte() -> None:
    headers, body = payloads.request("issues", payloads.issues_labeled())
    reencoded = json.dumps(json.loads(body)).encode()  # same JSON, other spacing
    assert reencoded != body
    with pytest.raises(SignatureError):
        verify_signature(payloads.SECRET, reencoded, headers["X-Hub-Signature-256"])
    with pytest.raises(SignatureError):
        verify_signature(payloads.SECRET, body + b"\n", headers["X-Hub-Signature-256"])


def test_a_missing_signature_is_rejected_and_sha1_is_not_a_fallback() -> None:
    with pytest.raises(SignatureError, match=r"missing X-Hub-Signature-256.*SHA-1"):
        verify_signature(VECTOR_SECRET, VECTOR_BODY, None)


def test_a_sha1_signature_is_rejected_even_when_correct() -> None:
    sha1 = payloads.headers("ping", VECTOR_BODY, secret=VECTOR_SECRET)["X-Hub-Signature"]
    with pytest.raises(SignatureError, match="SHA-1"):
        verify_signature(VECTOR_SECRET, VECTOR_BODY, sha1)


def test_a_request_with_only_the_sha1_header_is_rejected_saying_so() -> None:
    headers, body = payloads.request("ping", payloads.ping())
    del headers["X-Hub-Signature-256"]
    assert "X-Hub-Signature" in headers  # correct, for this body and secret
    with pytest.raises(SignatureError, match=r"only the legacy SHA-1 X-Hub-Signature"):
        verify_request_signature(payloads.SECRET, headers, body)


def test_a_request_without_any_signature_is_rejected() -> None:
    headers, body = payloads.request("ping", payloads.ping())
    del headers["X-Hub-Signature-256"], headers["X-Hub-Signature"]
    with pytest.raises(SignatureError, match="missing X-Hub-Signature-256"):
        verify_request_signature(payloads.SECRET, headers, body)


@pytest.mark.parametrize(
    "header",
    [
        "",
        "sha256=",
        "sha256",
        VECTOR_DIGEST,
        "SHA256=" + VECTOR_DIGEST,
        "sha512=" + VECTOR_DIGEST,
        "sha256=" + VECTOR_DIGEST[:-1],
        "sha256=" + VECTOR_DIGEST + "0",
        "sha256=" + VECTOR_DIGEST[:-1] + "g",
        "sha256=" + VECTOR_DIGEST + ",sha256=" + VECTOR_DIGEST,
        "sha256= " + VECTOR_DIGEST,
        "sha256=" + VECTOR_DIGEST[:-1] + "\N{FULLWIDTH DIGIT SEVEN}",
    ],
)
def test_a_malformed_signature_is_rejected(header: str) -> None:
    with pytest.raises(SignatureError, match="malformed"):
        verify_signature(VECTOR_SECRET, VECTOR_BODY, header)


def test_surrounding_whitespace_and_upper_case_hex_are_tolerated() -> None:
    verify_signature(VECTOR_SECRET, VECTOR_BODY, f"  sha256={VECTOR_DIGEST.upper()} ")


def test_an_empty_secret_is_a_configuration_error_not_a_signature() -> None:
    forged = payloads.signature(VECTOR_BODY, b"")
    with pytest.raises(ConfigError, match="FROGNANO_WEBHOOK_SECRET"):
        verify_signature(b"", VECTOR_BODY, forged)


def test_signature_header_names_are_matched_in_any_case() -> None:
    headers, body = payloads.request("ping", payloads.ping())
    for spell in (str.lower, str.upper):
        verify_request_signature(payloads.SECRET, {spell(k): v for k, v in headers.items()}, body)
    verify_request_signature(payloads.SECRET, Headers(headers), body)


@contextmanager
def _builtin_calls() -> Iterator[list[Any]]:
    """Every C function called while the block runs, as the profiler reports them."""
    calls: list[Any] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call":
            calls.append(arg)

    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(None)


@pytest.mark.parametrize("digest", [VECTOR_DIGEST, "0" * 64, VECTOR_DIGEST[:-1] + "0"])
def test_the_digests_are_compared_with_hmac_compare_digest(digest: str) -> None:
    """Observed, not mocked: the profiler sees the constant-time compare run exactly once
    for every well-formed header, right or wrong."""
    with _builtin_calls() as calls, suppress(SignatureError):
        verify_signature(VECTOR_SECRET, VECTOR_BODY, f"sha256={digest}")
    assert [call for call in calls if call is hmac.compare_digest] == [hmac.compare_digest]


def test_verify_signature_decides_nothing_with_an_equality_operator() -> None:
    """With the compare above, no `==` or `!=` in the function can leak digest timing."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(verify_signature)))
    operators = [
        type(op).__name__
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        for op in node.ops
    ]
    assert not {"Eq", "NotEq"} & set(operators), operators


# --- parsing -------------------------------------------------------------------------------


def test_a_delivery_is_parsed_from_githubs_headers_and_body() -> None:
    payload = payloads.issues_labeled()
    headers, body = payloads.request("issues", payload, delivery_id="d1b2-33")
    delivery = parse_delivery(headers, body)
    assert delivery == Delivery(
        id="d1b2-33",
        event="issues",
        action="labeled",
        payload=payload,
        installation_id=payloads.INSTALLATION_ID,
    )


@pytest.mark.parametrize("spell", [str.lower, str.upper, str.title, str.swapcase])
def test_header_names_are_case_insensitive(spell: Any) -> None:
    headers, body = payloads.request("issues", payloads.issues_labeled())
    delivery = parse_delivery({spell(name): value for name, value in headers.items()}, body)
    assert (delivery.event, delivery.action) == ("issues", "labeled")


def test_starlette_headers_work_as_given_by_the_web_layer() -> None:
    headers, body = payloads.request("ping", payloads.ping())
    delivery = parse_delivery(Headers(headers), body)
    assert (delivery.event, delivery.action, delivery.installation_id) == ("ping", None, None)


def test_a_header_given_twice_with_different_values_is_malformed() -> None:
    headers, body = payloads.request("ping", payloads.ping())
    headers["x-github-event"] = "issues"
    with pytest.raises(MalformedDelivery, match="given twice"):
        parse_delivery(headers, body)


@pytest.mark.parametrize("name", ["X-GitHub-Event", "X-GitHub-Delivery"])
def test_a_missing_event_or_delivery_header_is_malformed(name: str) -> None:
    headers, body = payloads.request("ping", payloads.ping())
    del headers[name]
    with pytest.raises(MalformedDelivery, match=f"missing {name} header"):
        parse_delivery(headers, body)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("X-GitHub-Event", ""),
        ("X-GitHub-Event", "Issues"),
        ("X-GitHub-Event", "issues labeled"),
        ("X-GitHub-Event", "issues\nX-Injected: 1"),
        ("X-GitHub-Delivery", ""),
        ("X-GitHub-Delivery", "id with spaces"),
        ("X-GitHub-Delivery", "a" * 129),
        ("X-GitHub-Delivery", "72d3162e\r\nforged log line"),
    ],
)
def test_implausible_event_or_delivery_values_are_malformed(name: str, value: str) -> None:
    headers, body = payloads.request("ping", payloads.ping())
    headers[name] = value
    with pytest.raises(MalformedDelivery, match=f"the {name} header"):
        parse_delivery(headers, body)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "empty"),
        (b"  \n", "empty"),
        (b"{", "not valid JSON: Expecting property name"),
        (b'{"action": "labeled",}', "not valid JSON"),
        (b"\xff\xfe\xfa", "not UTF-8"),
        (b'{"a": NaN}', "NaN is not a JSON number"),
        (b'{"a": -Infinity}', "-Infinity is not a JSON number"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"[]", "must be a JSON object, got an array"),
        (b'"issues"', "got a string"),
        (b"42", "got a number"),
        (b"null", "got null"),
        (b"true", "got a boolean"),
        (b'{"action": 3}', "action must be a string, got a number"),
        (b'{"installation": 12}', "installation must be an object"),
        (b'{"installation": {"id": "12"}}', "installation.id must be a positive integer"),
        (b'{"installation": {"id": true}}', "installation.id must be a positive integer"),
        (b'{"installation": {"id": 0}}', "installation.id must be a positive integer"),
    ],
)
def test_a_body_that_is_not_a_usable_json_object_is_malformed(body: bytes, reason: str) -> None:
    headers = payloads.headers("issues", body)
    with pytest.raises(MalformedDelivery, match=reason.replace("(", r"\(")):
        parse_delivery(headers, body)


def test_a_form_encoded_delivery_says_how_to_fix_the_hook() -> None:
    body = b"payload=%7B%22zen%22%3A%22hi%22%7D"
    headers = payloads.headers("ping", body)
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    with pytest.raises(MalformedDelivery, match="content type to application/json"):
        parse_delivery(headers, body)


def test_a_delivery_without_an_installation_has_none() -> None:
    """A repository webhook: the same events, no `installation`."""
    payload = payloads.issues_labeled()
    del payload["installation"]
    delivery = parse_delivery(*payloads.request("issues", payload))
    assert delivery.installation_id is None
    payload["installation"] = None
    assert (
        parse_delivery(*payloads.request("issues", payload, validated=False)).installation_id
        is None
    )


def test_non_ascii_bodies_are_read_as_utf8() -> None:
    the_issue = payloads.issue(title="Überlauf in 表示", body="emoji 🐸 and \u2028 separators")
    payload = payloads.issues_labeled(the_issue=the_issue)
    delivery = parse_delivery(*payloads.request("issues", payload))
    assert delivery.payload["issue"]["title"] == "Überlauf in 表示"
    assert delivery.payload["issue"]["body"] == "emoji 🐸 and \u2028 separators"


def test_a_delivery_is_frozen_and_its_repr_leaves_out_the_payload() -> None:
    secret_text = "issue body that must not end up in every log line"
    the_issue = payloads.issue(body=secret_text)
    delivery = parse_delivery(
        *payloads.request("issues", payloads.issues_labeled(the_issue=the_issue))
    )
    assert secret_text not in repr(delivery)
    assert "issues" in repr(delivery)
    with pytest.raises(FrozenInstanceError):
        delivery.event = "ping"  # type: ignore[misc]


def test_the_builders_send_every_header_the_spec_requires() -> None:
    sent = {name.lower() for name in payloads.headers("ping", b"{}")}
    assert {name.lower() for name in payloads.schema_headers()} <= sent


# --- the payload builders against GitHub's schemas -----------------------------------------

BUILDERS: dict[str, tuple[str, Callable[[], dict[str, Any]]]] = {
    "ping": ("ping", payloads.ping),
    "issues.labeled": ("issues", payloads.issues_labeled),
    "issues.labeled on a PR": (
        "issues",
        lambda: payloads.issues_labeled(the_issue=payloads.issue(pull_request=True)),
    ),
    "issues.unlabeled": ("issues", payloads.issues_unlabeled),
    "issues.closed": ("issues", payloads.issues_closed),
    "review submitted": ("pull_request_review", payloads.pull_request_review),
    "review dismissed": ("pull_request_review", lambda: payloads.pull_request_review("dismissed")),
    "review on a fork's PR": (
        "pull_request_review",
        lambda: payloads.pull_request_review(pull=payloads.pull_request(fork=True)),
    ),
    **{
        f"pull_request.{action}": (
            "pull_request",
            functools.partial(payloads.pull_request_event, action),
        )
        for action in ("synchronize", "reopened", "opened")
    },
    **{
        f"installation.{action}": (
            "installation",
            functools.partial(payloads.installation_event, action),
        )
        for action in ("created", "deleted", "suspend", "unsuspend", "new_permissions_accepted")
    },
    **{
        f"installation_repositories.{action}": (
            "installation_repositories",
            functools.partial(payloads.installation_repositories, action),
        )
        for action in ("added", "removed")
    },
    "watch.started": ("watch", payloads.watch_started),
    "issue_comment.created": ("issue_comment", payloads.issue_comment),
    "pull_request_review_comment.created": (
        "pull_request_review_comment",
        payloads.pull_request_review_comment,
    ),
}


@pytest.mark.parametrize(("event", "build"), BUILDERS.values(), ids=BUILDERS.keys())
def test_every_builder_matches_githubs_schema(event: str, build: Any) -> None:
    payloads.validate(event, build())


def test_every_event_in_the_schema_subset_has_a_builder() -> None:
    built = {
        event if (action := build().get("action")) is None else f"{event}.{action}"
        for event, build in BUILDERS.values()
    }
    assert built == set(payloads.schema_events())


DRIFTS = {
    "review without commit_id": (
        "pull_request_review",
        lambda p: p["review"].pop("commit_id"),
        "'commit_id' is a required property",
    ),
    "repository id as text": (
        "issues",
        lambda p: p["repository"].update(id="700100200"),
        "is not of type 'integer'",
    ),
    "head without sha": (
        "pull_request",
        lambda p: p["pull_request"]["head"].pop("sha"),
        "'sha' is a required property",
    ),
    "date without time": (
        "issues",
        lambda p: p["issue"].update(created_at="2026-03-02"),
        "is not a 'date-time'",
    ),
    "relative url": (
        "issues",
        lambda p: p["label"].update(url="/repos/acme/widgets/labels/frognano"),
        "is not a 'uri'",
    ),
    "wrong action": ("issues", lambda p: p.update(action="labelled"), "no schema"),
}


@pytest.mark.parametrize(("event", "damage", "message"), DRIFTS.values(), ids=DRIFTS.keys())
def test_the_schemas_catch_a_builder_that_drifts(event: str, damage: Any, message: str) -> None:
    builders: dict[str, Callable[[], dict[str, Any]]] = {
        "issues": payloads.issues_labeled,
        "pull_request": payloads.pull_request_event,
        "pull_request_review": payloads.pull_request_review,
    }
    build = builders[event]
    payload = build()
    damage(payload)
    with pytest.raises((jsonschema.ValidationError, KeyError), match=message):
        payloads.validate(event, payload)


def test_the_schema_subset_is_self_contained_and_says_where_it_came_from() -> None:
    document = json.loads(payloads.SCHEMAS.read_text(encoding="utf-8"))
    schemas = document["components"]["schemas"]
    refs = set(re.findall(r'"\$ref": ?"#/components/schemas/([^"]+)"', json.dumps(schemas)))
    assert refs <= set(schemas)
    assert set(document["events"].values()) <= set(schemas)
    assert document["source"]["package"] == "@octokit/openapi-webhooks"
    assert re.fullmatch(r"[0-9a-f]{64}", document["source"]["tarball_sha256"])
    assert payloads.SCHEMAS.stat().st_size < 400_000, "keep the committed subset small"


def _generator() -> Any:
    path = payloads.SCHEMAS.with_name("generate.py")
    spec = importlib.util.spec_from_file_location("generate_webhook_schemas", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generator_keeps_every_constraint_and_reachable_schema_only() -> None:
    generate = _generator()
    header = {"name": "X-GitHub-Delivery", "in": "header", "required": True}
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ev"}}}}
    spec = {
        "webhooks": {
            "issues-labeled": {"post": {"parameters": [header], "requestBody": body}},
        },
        "components": {
            "schemas": {
                "ev": {
                    "type": "object",
                    "title": "dropped",
                    "required": ["action", "description"],
                    "properties": {
                        "action": {"type": "string", "enum": ["labeled"], "example": "x"},
                        "description": {"$ref": "#/components/schemas/text"},
                        "title": {"anyOf": [{"type": "null"}, {"type": "string"}]},
                    },
                },
                "text": {"type": ["string", "null"], "description": "dropped", "maxLength": 9},
                "unreachable": {"type": "integer"},
            }
        },
    }
    generate.EVENTS = [("issues", "labeled")]
    events, headers, schemas = generate.subset(spec)
    assert events == {"issues.labeled": "ev"}
    assert headers == ["X-GitHub-Delivery"]
    assert schemas == {
        "ev": {
            "type": "object",
            "required": ["action", "description"],
            "properties": {
                "action": {"type": "string", "enum": ["labeled"]},
                "description": {"$ref": "#/components/schemas/text"},
                "title": {"anyOf": [{"type": "null"}, {"type": "string"}]},
            },
        },
        "text": {"type": ["string", "null"], "maxLength": 9},
    }
