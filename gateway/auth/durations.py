"""LiteLLM's durations (``30s``, ``5m``, ``1h``, ``1d``, ``7d``, ``30d``, ``2w``, ``1mo``): parsing, a
key's expiry, and a budget's next reset.

Units: ``s`` seconds, ``m`` minutes (LiteLLM's meaning, not months), ``h`` hours, ``d`` days, ``w``
weeks, ``mo`` calendar months. The amount is a whole number from 1 up; the whole string must match
(``1hr`` or ``1.5h`` are refused, not read as ``1h``).

Budget resets fall on calendar boundaries in UTC, as LiteLLM's do since it made them predictable:
``1d`` at the next midnight, ``7d`` / ``1w`` on the next Monday at midnight, ``30d`` / ``1mo`` on
the first of the next month; other day, week and month counts start from the next such boundary
(``3d``: midnight three days on; ``2w``: the Monday after next; ``3mo``: the first of the month
three months on). Seconds, minutes and hours that divide a day fall on that grid from midnight
(``1h`` on the hour, ``15m`` at :00, :15, :30, :45); others are simply ``now + duration``.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from gateway.utc import utc

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
MAX_SECONDS = 10 * 366 * 86400  # ten years: past this a duration is a typo
MAX_MONTHS = 120
_DURATION = re.compile(r"([1-9][0-9]{0,8})(mo|[smhdw])")
DAY_S = 86400


class DurationError(ValueError):
    """Not a duration; the message shows the accepted forms."""


@dataclass(frozen=True, slots=True)
class Duration:
    amount: int
    unit: str  # s, m, h, d, w, mo

    def __str__(self) -> str:
        return f"{self.amount}{self.unit}"

    @property
    def calendar_months(self) -> int | None:
        """Calendar months per period: ``Nmo``, and ``30d`` as one month (resets on the 1st); else None."""
        if self.unit == "mo":
            return self.amount
        return 1 if self.unit == "d" and self.amount == 30 else None

    @property
    def seconds(self) -> int | None:
        """The length in seconds; None for months, whose length depends on the date."""
        return None if self.unit == "mo" else self.amount * UNITS[self.unit]


def parse_duration(text: str) -> Duration:
    """``"30d"`` -> ``Duration(30, "d")``; ``DurationError`` for anything else."""
    match = _DURATION.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise DurationError("is not a duration; write a whole number and a unit: 30s, 5m, 1h, 1d, 7d, 30d, "
                            "2w, 1mo")
    duration = Duration(int(match.group(1)), match.group(2))
    seconds = duration.seconds
    if (seconds is not None and seconds > MAX_SECONDS) or (seconds is None and duration.amount > MAX_MONTHS):
        raise DurationError("is longer than ten years")
    return duration


def add_months(when: datetime, months: int) -> datetime:
    """``when`` plus calendar months, the day clamped to the target month's last day."""
    index = when.month - 1 + months
    year, month = when.year + index // 12, index % 12 + 1
    return when.replace(year=year, month=month, day=min(when.day, calendar.monthrange(year, month)[1]))


def expires_at(duration: Duration | str, now: datetime | None = None) -> datetime:
    """When a key made ``now`` with ``duration`` (LiteLLM's ``duration`` field) stops working."""
    duration = parse_duration(duration) if isinstance(duration, str) else duration
    now = _utc(now)
    if duration.seconds is None:
        return add_months(now, duration.amount)
    return now + timedelta(seconds=duration.seconds)


def next_reset(duration: Duration | str, now: datetime | None = None) -> datetime:
    """The first budget reset after ``now`` for ``budget_duration`` (see the module docstring)."""
    duration = parse_duration(duration) if isinstance(duration, str) else duration
    now = _utc(now)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    n, unit = duration.amount, duration.unit
    months = duration.calendar_months
    if months is not None:
        return add_months(add_months(midnight.replace(day=1), 1), months - 1)
    if unit == "w" or (unit == "d" and n == 7):
        monday = midnight + timedelta(days=7 - now.weekday())
        return monday + timedelta(weeks=(n if unit == "w" else 1) - 1)
    if unit == "d":
        return midnight + timedelta(days=n)
    step = n * UNITS[unit]
    if DAY_S % step:
        return now + timedelta(seconds=step)
    since_midnight = (now - midnight).total_seconds()
    return midnight + timedelta(seconds=(int(since_midnight // step) + 1) * step)


def _utc(now: datetime | None) -> datetime:
    return datetime.now(UTC) if now is None else utc(now)
