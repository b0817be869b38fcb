"""The retry policy on its own: which failures are retried, how long it waits, when it stops.

The HTTP behaviour against the fake server is in test_client.py; these feed `call` failures
shaped exactly as PyGithub raises them, with a recording sleep and a virtual clock.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import requests
from github.GithubException import GithubException

from frognano.github.errors import (
    GitHubAuthError,
    GitHubForbidden,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubRequestError,
    GitHubUnavailable,
)
from frognano.github.retry import RetryPolicy, Transport, call

NOW = 1_800_000_000.0


class Clock:
    """Virtual time: `sleep` records each wait and advances `now`."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def transport(self, **policy: float) -> Transport:
        return Transport(
            retry=RetryPolicy(**policy),  # type: ignore[arg-type]
            sleep=self.sleep,
            clock=lambda: self.now,
            wall_clock=lambda: NOW + self.now,
        )


def failing(*errors: Exception, result: str = "ok") -> tuple[Callable[[], str], list[int]]:
    calls: list[int] = []
    queue = list(errors)

    def fn() -> str:
        calls.append(1)
        if queue:
            raise queue.pop(0)
        return result

    return fn, calls


def gh(status: int, message: str = "boom", **headers: str) -> GithubException:
    return GithubException(status, {"message": message}, headers, message)


async def test_5xx_and_connection_errors_back_off_then_succeed() -> None:
    clock = Clock()
    fn, calls = failing(gh(502), requests.ConnectionError("reset"), gh(503))
    assert await call(fn, what="x", transport=clock.transport(initial_delay=1.0)) == "ok"
    assert len(calls) == 4
    assert len(clock.waits) == 3
    # jittered exponential backoff: half fixed, half random
    for wait, base in zip(clock.waits, (1.0, 2.0, 4.0), strict=True):
        assert base / 2 <= wait <= base


async def test_retry_after_and_rate_limit_reset_are_honoured() -> None:
    clock = Clock()
    fn, _ = failing(
        gh(403, "You have exceeded a secondary rate limit", **{"Retry-After": "7"}),
        gh(429, "slow down", **{"retry-after": "3"}),
        gh(
            403,
            "API rate limit exceeded",
            **{"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW + 10 + 20))},
        ),
        gh(403, "You have exceeded a secondary rate limit. Please wait."),
    )
    assert await call(fn, what="x", transport=clock.transport(secondary_wait=60.0)) == "ok"
    assert clock.waits[:2] == [7.0, 3.0]
    assert clock.waits[2] == pytest.approx(21.0)  # until reset (t=30, now t=10) plus a second
    assert clock.waits[3] == 60.0


async def test_budget_exhausted_raises_unavailable_or_rate_limited() -> None:
    clock = Clock()
    fn, calls = failing(*[gh(502)] * 10)
    with pytest.raises(GitHubUnavailable, match=r"HTTP 502 after 3 attempt") as info:
        await call(fn, what="create the tree", transport=clock.transport(attempts=3))
    assert info.value.status == 502
    assert len(calls) == 3

    clock = Clock()
    fn, calls = failing(gh(429, "slow", **{"retry-after": "5000"}))
    with pytest.raises(GitHubRateLimited, match="gave up instead of waiting 5000s"):
        await call(fn, what="x", transport=clock.transport(budget_seconds=600.0))
    assert clock.waits == []  # a wait that cannot fit is not slept
    assert len(calls) == 1


@pytest.mark.parametrize(
    ("error", "cls", "text"),
    [
        (gh(401, "Bad credentials"), GitHubAuthError, "FROGNANO_GITHUB_APP_ID"),
        (gh(403, "Resource not accessible by integration"), GitHubForbidden, "permissions"),
        (gh(404, "Not Found"), GitHubNotFound, "installed"),
        (
            GithubException(
                422,
                {"message": "Validation Failed", "errors": [{"message": "body is too long"}]},
                {},
                "Validation Failed",
            ),
            GitHubRequestError,
            "Validation Failed: body is too long",
        ),
    ],
)
async def test_other_errors_are_not_retried_and_say_what_to_check(
    error: GithubException, cls: type[Exception], text: str
) -> None:
    clock = Clock()
    fn, calls = failing(error)
    with pytest.raises(cls, match=text) as info:
        await call(fn, what="open the pull request", transport=clock.transport())
    assert str(info.value).startswith(f"open the pull request failed: HTTP {error.status}")
    assert len(calls) == 1
    assert clock.waits == []


async def test_recover_finds_what_a_failed_create_did() -> None:
    clock = Clock()
    fn, calls = failing(gh(502), result="second")
    looked: list[int] = []

    async def recover() -> str | None:
        looked.append(1)
        return "found"

    assert await call(fn, what="x", transport=clock.transport(), recover=recover) == "found"
    assert len(calls) == 1
    assert looked == [1]
