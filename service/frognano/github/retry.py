"""One retry policy for every GitHub request, and the translation of failures into GitHubError."""

# Each PyGithub call is blocking, so it runs in a thread (`asyncio.to_thread`). PyGithub's own
# retry is switched off (`retry=None`) wherever a client is built, so this is the only policy:
#
# - transient: 5xx; connection errors and timeouts; 403/429 with `Retry-After` (waited as given);
#   403/429 with `x-ratelimit-remaining: 0` (waited until `x-ratelimit-reset` plus a second);
#   403/429 whose message mentions a secondary rate limit (waited `secondary_wait`, at least a
#   minute by default, as GitHub asks); any other 429 (backoff);
# - backoff: `initial_delay` doubled per attempt, capped at `max_delay`, with jitter (half fixed,
#   half random);
# - bounded: at most `attempts` requests, and no wait that would end past `budget_seconds` since
#   the first request; a wait that cannot fit raises at once (GitHubRateLimited /
#   GitHubUnavailable) instead of sleeping uselessly;
# - everything else raises a GitHubError subclass whose message has the status, GitHub's message
#   and what to check.
#
# A request that creates something (a comment, a pull request, a check run) is not blindly
# re-sent: the caller passes `recover`, a lookup run after each transient failure, so a POST that
# GitHub carried out before the connection failed is found instead of repeated.

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import requests
from github.GithubException import GithubException

from frognano import backoff
from frognano.github.errors import (
    GitHubAuthError,
    GitHubError,
    GitHubForbidden,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubRequestError,
    GitHubUnavailable,
)
from frognano.log import get_logger

__all__ = ["RetryPolicy", "Transport", "call", "describe_failure"]

log = get_logger(__name__)

T = TypeVar("T")

_HINTS = {
    401: "check that FROGNANO_GITHUB_APP_ID and FROGNANO_GITHUB_PRIVATE_KEY belong to the same "
    "App and that this host's clock is right (NTP); installation tokens expire after an hour",
    403: "check the App's permissions on this installation and that the token was minted with "
    "the permission this call needs (the App never has `workflows`)",
    404: "check that it exists and that the App is installed on the repository (tokens are "
    "narrowed to one repository)",
    409: "the repository may be empty, or the object changed while this ran",
    422: "GitHub refused the request's content",
}
_CLASSES: dict[int, type[GitHubError]] = {
    401: GitHubAuthError,
    403: GitHubForbidden,
    404: GitHubNotFound,
}
_TEXT_LIMIT = 500


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying when GitHub fails transiently or rate-limits."""

    attempts: int = 6
    """Requests in all, the first included."""
    initial_delay: float = 1.0
    """Backoff before the second attempt; doubled for each further one, with jitter."""
    max_delay: float = 60.0
    """Cap on one backoff wait (Retry-After and rate-limit resets are honoured as given)."""
    secondary_wait: float = 60.0
    """Wait after a secondary rate limit that names no Retry-After."""
    budget_seconds: float = 900.0
    """No wait may end later than this many seconds after the first request."""


def _default_sleep(seconds: float) -> Awaitable[None]:
    return asyncio.sleep(seconds)


@dataclass(frozen=True)
class Transport:
    """How requests reach GitHub; shared by the App client and every RepoClient.

    `sleep`, `clock` (monotonic, for the budget) and `wall_clock` (epoch seconds, for
    `x-ratelimit-reset`) are injectable for tests. PyGithub's throttles
    (`seconds_between_requests`, `seconds_between_writes`) follow GitHub's advice to pause
    between writes; tests set them to 0.
    """

    base_url: str = "https://api.github.com"
    timeout: int = 30
    seconds_between_requests: float | None = 0.25
    seconds_between_writes: float | None = 1.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    sleep: Callable[[float], Awaitable[None]] = _default_sleep
    clock: Callable[[], float] = time.monotonic
    wall_clock: Callable[[], float] = time.time
    user_agent: str = "frognano"


@dataclass(frozen=True)
class _Failure:
    status: int | None
    headers: Mapping[str, str]
    message: str


@dataclass(frozen=True)
class _Transient:
    reason: str
    wait: float | None  # None: exponential backoff
    rate_limited: bool = False


def _failure(exc: BaseException) -> _Failure | None:
    if isinstance(exc, GithubException):
        headers = {k.lower(): str(v) for k, v in (exc.headers or {}).items()}
        return _Failure(exc.status, headers, _github_text(exc.data, exc.message))
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        response = exc.response
        headers = {k.lower(): v for k, v in response.headers.items()}
        try:
            data: Any = response.json()
        except ValueError:
            data = response.text[:_TEXT_LIMIT]
        return _Failure(response.status_code, headers, _github_text(data, None))
    return None


def _github_text(data: Any, fallback: str | None) -> str:
    """GitHub's message plus the messages of its `errors` list (where 422s explain themselves)."""
    if not isinstance(data, dict):
        text = data if isinstance(data, str) else ""
        return (fallback or text)[:_TEXT_LIMIT]
    parts = [str(data.get("message") or fallback or "")]
    for item in data.get("errors") or ():
        if isinstance(item, dict):
            detail = item.get("message") or " ".join(
                str(item[key]) for key in ("resource", "field", "code") if item.get(key)
            )
            parts.append(str(detail))
        else:
            parts.append(str(item))
    return ": ".join(part for part in parts if part)[:_TEXT_LIMIT]


def _classify(exc: BaseException, policy: RetryPolicy, now: float) -> _Transient | None:
    if isinstance(exc, requests.ConnectionError | requests.Timeout):
        return _Transient(f"connection failed ({type(exc).__name__})", None)
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return _Transient("the response was cut off", None)
    failure = _failure(exc)
    if failure is None or failure.status is None:
        return None
    retry_after = backoff.retry_after(failure.headers.get("retry-after"), now)
    if failure.status >= 500:
        return _Transient(f"HTTP {failure.status}", retry_after)
    if failure.status in (403, 429):
        return _rate_limit(failure, retry_after, policy, now)
    return None


def _rate_limit(
    failure: _Failure, retry_after: float | None, policy: RetryPolicy, now: float
) -> _Transient | None:
    """A 403 or 429 that is a rate limit, with its wait; None for a plain 403."""
    headers = failure.headers
    wait: float | None = None
    if retry_after is not None:
        reason, wait = f"rate limited (HTTP {failure.status}, Retry-After)", retry_after
    elif headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in headers:
        try:
            reset = float(headers["x-ratelimit-reset"])
        except ValueError:
            reset = now + policy.secondary_wait
        reason, wait = "primary rate limit exhausted", max(0.0, reset - now) + 1.0
    elif "secondary rate limit" in failure.message.lower():
        reason, wait = "secondary rate limit", policy.secondary_wait
    elif failure.status == 429:
        reason = "HTTP 429"
    else:
        return None
    return _Transient(reason, wait, rate_limited=True)


def describe_failure(exc: BaseException, what: str) -> GitHubError:
    """The GitHubError for a non-transient failure of `what` (e.g. "create the pull request")."""
    failure = _failure(exc)
    if failure is None or failure.status is None:
        return GitHubError(f"{what} failed: {type(exc).__name__}: {exc}")
    status = failure.status
    cls = _CLASSES.get(status, GitHubRequestError if 400 <= status < 500 else GitHubError)
    hint = _HINTS.get(status, "")
    text = f"{what} failed: HTTP {status}"
    if failure.message:
        text += f": {failure.message}"
    if hint:
        text += f" ({hint})"
    return cls(text, status=status, github_message=failure.message)


async def call(
    fn: Callable[[], T],
    *,
    what: str,
    transport: Transport,
    recover: Callable[[], Awaitable[T | None]] | None = None,
) -> T:
    """Run the blocking `fn` in a thread under the retry policy; see the module docstring.

    `recover`, if given, is awaited after each transient failure and before the retry (it
    should look the result up through this same policy); a non-None result is returned
    instead of retrying `fn`.
    """
    policy = transport.retry
    start = transport.clock()
    waited = 0.0
    attempt = 0
    while True:
        attempt += 1
        try:
            return await asyncio.to_thread(fn)
        except GitHubError:
            raise
        except Exception as exc:
            transient = _classify(exc, policy, transport.wall_clock())
            if transient is None:
                if _failure(exc) is None and not isinstance(exc, requests.RequestException):
                    raise
                raise describe_failure(exc, what) from exc
            delay = transient.wait
            if delay is None:
                delay = backoff.delay(attempt, initial=policy.initial_delay, cap=policy.max_delay)
            spent = max(transport.clock() - start, waited)
            if attempt >= policy.attempts or spent + delay > policy.budget_seconds:
                cls = GitHubRateLimited if transient.rate_limited else GitHubUnavailable
                failure = _failure(exc)
                raise cls(
                    f"{what} failed: {transient.reason} after {attempt} attempt(s) over "
                    f"{spent:.0f}s; gave up instead of waiting {delay:.0f}s more (retry "
                    f"budget: {policy.attempts} attempts / {policy.budget_seconds:.0f}s; check "
                    "GitHub's status page and this App's rate limits)",
                    status=failure.status if failure else None,
                    github_message=failure.message if failure else None,
                ) from exc
            log.warning(
                "github.retrying",
                what=what,
                reason=transient.reason,
                attempt=attempt,
                wait_seconds=round(delay, 2),
            )
            await transport.sleep(delay)
            waited += delay
        if recover is not None:
            found = await recover()
            if found is not None:
                log.info("github.recovered_earlier_success", what=what)
                return found
