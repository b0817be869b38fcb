"""GitHub webhook deliveries: checking the signature and parsing the request. No I/O."""

# The web layer calls, in this order and on the raw request body:
#
# 1. `verify_signature` (or `verify_request_signature` with all the headers): the HMAC-SHA256
#    of the body keyed with the webhook secret, compared in constant time, before anything
#    looks inside the body. Failure raises `SignatureError` (answer 401).
# 2. `parse_delivery`: the event name and delivery id from the headers, the JSON object from
#    the body. Failure raises `MalformedDelivery` (answer 400) with the reason.
#
# Only `X-Hub-Signature-256` is accepted; the legacy SHA-1 `X-Hub-Signature` never is.
# Capping the body size (GitHub sends at most 25 MB) is the web layer's job, before step 1.

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from frognano.errors import ConfigError, FrogNanoError

SIGNATURE_HEADER = "X-Hub-Signature-256"
LEGACY_SIGNATURE_HEADER = "X-Hub-Signature"
EVENT_HEADER = "X-GitHub-Event"
DELIVERY_HEADER = "X-GitHub-Delivery"

_SIGNATURE = re.compile(r"sha256=([0-9a-fA-F]{64})")
# GitHub's event names are lower-case words joined by underscores (`pull_request_review`).
_EVENT = re.compile(r"[a-z][a-z0-9_]{0,63}")
# A GUID on GitHub.com and GHES; kept to characters that are safe in logs and Redis keys.
_DELIVERY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


class SignatureError(FrogNanoError):
    """The delivery's signature is missing, malformed or wrong: the web layer answers 401.

    The message says which, and never contains the digest that was expected.
    """


class MalformedDelivery(FrogNanoError):
    """The request is not a webhook delivery we can read: the web layer answers 400."""


@dataclass(frozen=True)
class Delivery:
    """One webhook delivery, parsed but not yet interpreted (see `frognano.app.events.triggers`)."""

    id: str
    """`X-GitHub-Delivery`: the same on a redelivery, so the key for acting at most once."""
    event: str
    """`X-GitHub-Event`, e.g. `issues`."""
    action: str | None
    """The payload's `action`, e.g. `labeled`; None for events without one (`ping`)."""
    payload: dict[str, Any] = field(repr=False)
    """The whole JSON body. Untrusted data beyond what the signature proves (that GitHub sent
    it): issue text in particular is written by anyone who can open an issue."""
    installation_id: int | None
    """`installation.id`: present on deliveries to a GitHub App, absent on repository hooks."""


def verify_signature(secret: bytes, body: bytes, header: str | None) -> None:
    """Check `header` (the value of `X-Hub-Signature-256`) against the HMAC-SHA256 of `body`.

    `body` must be the raw request body, exactly as received. Raises `SignatureError` when
    the header is missing, malformed or wrong; returns None when it matches. An empty
    `secret` is a configuration error (`ConfigError`): anyone could sign with it.
    """
    if not secret:
        raise ConfigError(
            "the webhook secret is empty; set FROGNANO_WEBHOOK_SECRET to the App's webhook secret"
        )
    if header is None:
        raise SignatureError(
            f"missing {SIGNATURE_HEADER} header; the legacy SHA-1 {LEGACY_SIGNATURE_HEADER}"
            " is not accepted"
        )
    value = header.strip()
    if value.lower().startswith("sha1="):
        raise SignatureError(
            f"{SIGNATURE_HEADER} carries a SHA-1 signature; only sha256=<hex> is accepted"
        )
    match = _SIGNATURE.fullmatch(value)
    if match is None:
        raise SignatureError(
            f"malformed {SIGNATURE_HEADER} header: expected sha256= and 64 hex digits"
        )
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest().encode("ascii")
    given = match.group(1).lower().encode("ascii")
    if not hmac.compare_digest(expected, given):
        raise SignatureError(
            f"{SIGNATURE_HEADER} does not match the body: wrong webhook secret, or the body"
            " was changed on the way"
        )


def verify_request_signature(secret: bytes, headers: Mapping[str, str], body: bytes) -> None:
    """`verify_signature` with the signature taken from `headers` (any case); a request that
    carries only the legacy SHA-1 `X-Hub-Signature` gets a message that says so."""
    lowered = _lowered(headers, error=SignatureError)
    header = lowered.get(SIGNATURE_HEADER.lower())
    if header is None and LEGACY_SIGNATURE_HEADER.lower() in lowered:
        raise SignatureError(
            f"only the legacy SHA-1 {LEGACY_SIGNATURE_HEADER} header was sent; SHA-1 signatures"
            f" are not accepted, {SIGNATURE_HEADER} is required"
        )
    verify_signature(secret, body, header)


def parse_delivery(headers: Mapping[str, str], body: bytes) -> Delivery:
    """The delivery in a request whose signature was already verified.

    Header names are matched in any case. Raises `MalformedDelivery` with the reason when
    `X-GitHub-Event` or `X-GitHub-Delivery` is missing or not plausible, when the body is
    not a JSON object, or when `action` or `installation` have the wrong type.
    """
    lowered = _lowered(headers, error=MalformedDelivery)
    event = _header(lowered, EVENT_HEADER, _EVENT)
    delivery_id = _header(lowered, DELIVERY_HEADER, _DELIVERY_ID)
    payload = _json_object(body, lowered.get("content-type"))
    action = payload.get("action")
    if action is not None and not isinstance(action, str):
        _malformed(f"the payload's action must be a string, got {_kind(action)}")
    return Delivery(
        id=delivery_id,
        event=event,
        action=action,
        payload=payload,
        installation_id=_installation_id(payload),
    )


def _lowered(headers: Mapping[str, str], *, error: type[FrogNanoError]) -> dict[str, str]:
    lowered: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        if key in lowered and lowered[key] != value:
            raise error(f"the {name} header is given twice with different values")
        lowered[key] = value
    return lowered


def _header(lowered: Mapping[str, str], name: str, pattern: re.Pattern[str]) -> str:
    value = lowered.get(name.lower())
    if value is None:
        _malformed(f"missing {name} header: not a GitHub webhook delivery")
    value = value.strip()
    if not pattern.fullmatch(value):
        _malformed(f"the {name} header {value[:80]!r} is not a valid value")
    return value


def _json_object(body: bytes, content_type: str | None) -> dict[str, Any]:
    if content_type is not None and "x-www-form-urlencoded" in content_type.lower():
        _malformed("the body is form-encoded; set the webhook's content type to application/json")
    if not body.strip():
        _malformed("the body is empty; expected a JSON object")
    try:
        payload = json.loads(body, parse_constant=_reject_constant)
    except UnicodeDecodeError:
        _malformed("the body is not UTF-8 text")
    except json.JSONDecodeError as exc:
        _malformed(f"the body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
    except ValueError as exc:  # a NaN or Infinity constant, refused below
        _malformed(f"the body is not valid JSON: {exc}")
    except RecursionError:
        _malformed("the body is not valid JSON: nested too deeply")
    if not isinstance(payload, dict):
        _malformed(f"the body must be a JSON object, got {_kind(payload)}")
    return payload


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _installation_id(payload: Mapping[str, Any]) -> int | None:
    if "installation" not in payload or payload["installation"] is None:
        return None
    installation = payload["installation"]
    if not isinstance(installation, dict):
        _malformed(f"the payload's installation must be an object, got {_kind(installation)}")
    if "id" not in installation:
        return None
    value = installation["id"]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        _malformed("the payload's installation.id must be a positive integer")
    return value


def _kind(value: object) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _malformed(reason: str) -> NoReturn:
    raise MalformedDelivery(reason)
