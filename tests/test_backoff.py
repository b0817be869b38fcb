"""The shared retry timing: Retry-After in its forms, retry-after-ms, and capped backoff."""

from __future__ import annotations

import email.utils

import pytest

from frognano import backoff

NOW = 1_800_000_000.0


def http_date(epoch: float) -> str:
    return email.utils.formatdate(epoch, usegmt=True)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("7", 7.0), ("0", 0.0), ("1.5", 1.5), (" 12 ", 12.0), ("-3", 0.0), ("-0.5", 0.0)],
)
def test_delay_seconds_are_read_and_never_negative(value: str, seconds: float) -> None:
    assert backoff.retry_after(value, NOW) == seconds


def test_an_http_date_counts_from_now() -> None:
    assert backoff.retry_after(http_date(NOW + 90), NOW) == pytest.approx(90.0)
    assert backoff.retry_after(http_date(NOW + 90), NOW + 30) == pytest.approx(60.0)


def test_a_date_in_the_past_means_at_once() -> None:
    assert backoff.retry_after(http_date(NOW - 3600), NOW) == 0.0


def test_a_date_without_a_zone_is_utc() -> None:
    """ "-0000" (RFC 5322: UTC, the sender's zone unknown) gives a naive datetime; it is read
    as UTC, whatever this host's zone."""
    date = http_date(NOW + 60).replace("GMT", "-0000")
    assert backoff.retry_after(date, NOW) == pytest.approx(60.0)


@pytest.mark.parametrize(
    "value", [None, "", "soon", "7 seconds", "Mon, 99 Foo 2026", "inf", "-inf", "nan", "1e999"]
)
def test_garbage_is_none(value: str | None) -> None:
    assert backoff.retry_after(value, NOW) is None


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("1500", 1.5), ("0", 0.0), ("250.5", 0.2505), ("-20", 0.0)],
)
def test_milliseconds_are_read_as_seconds(value: str, seconds: float) -> None:
    assert backoff.retry_after_ms(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", [None, "", "soon", "1.5s", "inf", "nan"])
def test_garbage_milliseconds_are_none(value: str | None) -> None:
    assert backoff.retry_after_ms(value) is None


def test_the_delay_doubles_up_to_the_cap_with_jitter() -> None:
    """Between half and all of `initial * 2 ** (attempt - 1)`, at most the cap."""
    for attempt, base in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (5, 5.0)]:
        draws = [backoff.delay(attempt, initial=1.0, cap=5.0) for _ in range(200)]
        assert all(base / 2 <= draw <= base for draw in draws), (attempt, min(draws), max(draws))
        assert len(set(draws)) > 1  # jittered, so clients do not retry in step


def test_the_delay_stays_finite_for_any_attempt() -> None:
    assert 15.0 <= backoff.delay(10_000, initial=1.0, cap=30.0) <= 30.0
    assert 0.5 <= backoff.delay(0, initial=1.0, cap=30.0) <= 1.0  # as the first
    assert backoff.delay(3, initial=0.0, cap=30.0) == 0.0
