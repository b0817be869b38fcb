"""Retry timing shared by the HTTP clients: a server's Retry-After, capped backoff with jitter."""

# Each client keeps its own policy (attempts, delays, budget) and decides what is worth a
# retry; only the reading of a server's wait and the backoff arithmetic are common.

from __future__ import annotations

import email.utils
import math
import random
from datetime import UTC

__all__ = ["delay", "retry_after", "retry_after_ms"]

_MAX_DOUBLINGS = 64
"""Past this many doublings every delay is at its cap anyway; it keeps 2.0 ** n finite."""


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a `Retry-After` value: delay-seconds, or an HTTP date counted from
    `now` (epoch seconds); never negative. None when absent or unreadable (a value that is
    not a finite number or a date)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": UTC with the sender's zone unknown (RFC 5322)
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


def retry_after_ms(value: str | None) -> float | None:
    """Seconds to wait from a `retry-after-ms` value (OpenAI's, in milliseconds); never
    negative. None when absent or not a finite number."""
    if not value:
        return None
    try:
        millis = float(value)
    except ValueError:
        return None
    return max(0.0, millis / 1000.0) if math.isfinite(millis) else None


def delay(attempt: int, *, initial: float, cap: float) -> float:
    """The wait after failed attempt number `attempt` (1 for the first): `initial` doubled
    for each attempt after the first, at most `cap`, then jittered to between half of it and
    all of it, so that clients that failed together do not all retry together."""
    base = min(cap, initial * 2.0 ** min(max(attempt - 1, 0), _MAX_DOUBLINGS))
    return base / 2 + random.uniform(0, base / 2)  # noqa: S311 - jitter, not security
