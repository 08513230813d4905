"""LiteLLM's durations: parsing (s, m, h, d, w, mo), a key's expiry, a budget's next reset."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.auth.durations import Duration, DurationError, expires_at, next_reset, parse_duration

NOW = datetime(2026, 1, 31, 13, 47, 12, 500, tzinfo=UTC)  # a Saturday


@pytest.mark.parametrize(("text", "amount", "unit", "seconds"), [
    ("30s", 30, "s", 30), ("5m", 5, "m", 300), ("1h", 1, "h", 3600), ("1d", 1, "d", 86400),
    ("7d", 7, "d", 7 * 86400), ("30d", 30, "d", 30 * 86400), ("2w", 2, "w", 14 * 86400), ("1mo", 1, "mo", None),
    (" 12h ", 12, "h", 12 * 3600),
])
def test_parse(text: str, amount: int, unit: str, seconds: int | None):
    duration = parse_duration(text)
    assert duration == Duration(amount, unit) and duration.seconds == seconds


@pytest.mark.parametrize("text", ["", "1", "h", "0d", "1hr", "1.5h", "-1d", "1 d", "1D", "1y", "01d",
                                  "99999999999d", "4000d", "121mo", "1d; DROP TABLE teams"])
def test_refused(text: str):
    with pytest.raises(DurationError) as err:
        parse_duration(text)
    assert "30s" in str(err.value) or "ten years" in str(err.value)


def test_expires_is_now_plus_the_duration_months_by_calendar():
    assert expires_at("30d", NOW) == NOW + timedelta(days=30)
    assert expires_at("90s", NOW) == NOW + timedelta(seconds=90)
    assert expires_at("1mo", NOW) == datetime(2026, 2, 28, 13, 47, 12, 500, tzinfo=UTC)  # day clamped
    assert expires_at("13mo", NOW) == datetime(2027, 2, 28, 13, 47, 12, 500, tzinfo=UTC)


@pytest.mark.parametrize(("text", "expected"), [
    ("30s", datetime(2026, 1, 31, 13, 47, 30, tzinfo=UTC)),
    ("15m", datetime(2026, 1, 31, 14, 0, tzinfo=UTC)),
    ("1h", datetime(2026, 1, 31, 14, 0, tzinfo=UTC)),
    ("6h", datetime(2026, 1, 31, 18, 0, tzinfo=UTC)),
    ("1d", datetime(2026, 2, 1, tzinfo=UTC)),
    ("3d", datetime(2026, 2, 3, tzinfo=UTC)),
    ("7d", datetime(2026, 2, 2, tzinfo=UTC)),  # the next Monday
    ("1w", datetime(2026, 2, 2, tzinfo=UTC)),
    ("2w", datetime(2026, 2, 9, tzinfo=UTC)),
    ("30d", datetime(2026, 2, 1, tzinfo=UTC)),  # the first of the next month
    ("1mo", datetime(2026, 2, 1, tzinfo=UTC)),
    ("3mo", datetime(2026, 4, 1, tzinfo=UTC)),
    ("7m", NOW + timedelta(minutes=7)),  # does not divide a day: plain now + duration
])
def test_next_reset(text: str, expected: datetime):
    assert next_reset(text, NOW) == expected
    assert next_reset(text, NOW) > NOW


def test_next_reset_rolls_over_midnight_and_december():
    late = datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert next_reset("1h", late) == datetime(2027, 1, 1, tzinfo=UTC)
    assert next_reset("1mo", late) == datetime(2027, 1, 1, tzinfo=UTC)
    monday = datetime(2026, 2, 2, 0, 0, tzinfo=UTC)
    assert next_reset("7d", monday) == datetime(2026, 2, 9, tzinfo=UTC)
    on_the_hour = datetime(2026, 2, 2, 5, 0, tzinfo=UTC)
    assert next_reset("1h", on_the_hour) == datetime(2026, 2, 2, 6, 0, tzinfo=UTC)


def test_naive_and_other_zones_are_read_as_utc_instants():
    naive = NOW.replace(tzinfo=None)
    assert next_reset("1d", naive) == datetime(2026, 2, 1, tzinfo=UTC)
