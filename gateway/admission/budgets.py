"""Budgets: amounts in micro-dollars, and periods (which period of a ``budget_duration`` holds a
moment, and its counter's window).

A period runs from the previous reset to ``budget_reset_at`` (calendar months for ``mo`` and
``30d``, weeks for ``7d``/``w``, fixed seconds otherwise); a budget without a duration has one
lifetime period. Pure: the admission (gateway/admission/admission.py) names its counters after them.

Budget accounting. The spend of the current budget period lives in the shared state as integer
micro-dollars under ``<prefix>spend:<key|team|user>:<id>:<period start>`` (``:spent:<window>``, and the
reservations in flight under ``:held:<window>``); the period runs from the
identity's ``budget_reset_at`` minus its ``budget_duration`` (calendar months for ``mo`` and
``30d``, as ``gateway.auth.durations`` resets them) to ``budget_reset_at``; ``life`` stands for the
start when there is no ``budget_duration`` (the spend of the key's lifetime). When
``budget_reset_at`` has passed and no reset job has moved it yet, the period is the one of the same
reset chain that holds now (what the job will write, for calendar-aligned durations). The counters
are a fixed window of length ``end`` (epoch seconds): window 0 runs from 1970 to the period's end,
so they live exactly as long as their period and then expire on their own.

The database spend (``Limits.spend``, read by auth: the key's, the team's, the user's ``users.spend``
that the spend drain adds to) is the authority across restarts: the spent
counter is seeded with it when it is missing, in the same atomic step that reserves ("first writer
wins": a later process, whose database spend already holds what the gateway counted, finds the
counter and never adds it a second time; a counter Redis lost is seeded again at once). Settled
costs reach the database through the spend outbox, so a lost and re-seeded counter misses only what
the outbox had not drained yet. An admin change to ``spend`` within a period is not seen by the
counter before the next period (for a lifetime budget: not at all).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from gateway.auth.durations import Duration, DurationError, add_months, next_reset, parse_duration
from gateway.utc import utc

if TYPE_CHECKING:
    from gateway.auth.records import Limits

MICRO = 1_000_000  # budgets are counted in integer micro-dollars
MAX_MICRO = 2**62
LIFETIME_WINDOW_S = float(2**32)  # window 0 until 2106: a lifetime budget's counter never rolls over


@dataclass(frozen=True, slots=True)
class Period:
    """A budget period: its label in the counter's name, its end (wall clock) and the counter's window."""

    label: str  # the start in epoch seconds, or "life"
    start: datetime | None
    end: datetime | None
    window_s: float


LIFETIME = Period("life", None, None, LIFETIME_WINDOW_S)


def _previous(reset: datetime, duration: Duration) -> datetime:
    months = duration.calendar_months
    if months is not None:
        return add_months(reset, -months)
    if duration.unit == "w" or (duration.unit == "d" and duration.amount == 7):
        return reset - timedelta(weeks=duration.amount if duration.unit == "w" else 1)
    return reset - timedelta(seconds=duration.seconds or 0)


def budget_period(duration_text: str, reset_at: datetime, now: datetime) -> Period:
    """The budget period that holds ``now`` for a ``budget_duration`` and its ``budget_reset_at``.

    Its counter's window is ``[0, end)``: ``window_add`` with ``window_s = end`` (epoch seconds) has
    window ``floor(now / end) = 0`` until the period ends, then expires; the period's start in the
    key keeps one period's counter apart from the next.
    """
    try:
        duration = parse_duration(duration_text)
    except DurationError:
        return LIFETIME
    end = utc(reset_at)
    start = _previous(end, duration)
    if end <= now:  # the reset job has not moved budget_reset_at yet: follow its chain to now
        start, end = end, next_reset(duration, end)
        if end <= now and duration.calendar_months is None:
            step = next_reset(duration, end) - end  # from a boundary on, the chain is regular
            skip = (now - end) // step
            start, end = end + skip * step, end + (skip + 1) * step
        while end <= now:
            start, end = end, next_reset(duration, end)
    return Period(str(math.floor(start.timestamp())), start, end, end.timestamp())


def micro(usd: float) -> int:
    """USD -> integer micro-dollars, rounded (spend, limits, true costs)."""
    return min(MAX_MICRO, max(0, round(usd * MICRO)))


def worst_micro(usd: float) -> int:
    """A worst case -> micro-dollars, rounded up (a reservation never undercounts)."""
    return min(MAX_MICRO, max(0, math.ceil(round(usd * MICRO, 6))))


def usd(amount: int) -> str:
    return f"${amount / MICRO:.6f}".rstrip("0").rstrip(".") if amount else "$0"


def budget_message(name: str, period: Period, budget: int, spent: int, held: int, worst: int | None) -> str:
    """Why a request was refused: what was spent, what requests in flight hold, and this request's
    estimate (its worst case), each by name, so a refusal that reservations cause says so."""
    resets = f"it resets at {period.end.isoformat()}" if period.end is not None else \
        "it has no budget_duration and never resets"
    estimate = f"this request is estimated at up to {usd(worst)}" if worst is not None else \
        "this request's cost cannot be bounded beforehand"
    in_flight = f", {usd(held)} reserved by requests in flight" if held else ""
    return (f"Budget exceeded for {name}: max_budget {usd(budget)}, spent {usd(spent)}{in_flight}; {estimate}; "
            f"{resets}.")


MEMO_MAX = 100_000


class PeriodMemo:
    """The period of each (duration, reset) an identity carries, worked out once while it lasts: the
    admission asks for it on every budgeted request."""

    def __init__(self) -> None:
        self._periods: dict[tuple[str, datetime], Period] = {}

    def of(self, limits: Limits, now: datetime) -> Period:
        if limits.budget_duration is None or limits.budget_reset_at is None:
            return LIFETIME
        cache_key = (limits.budget_duration, limits.budget_reset_at)
        cached = self._periods.get(cache_key)
        if cached is not None and cached.end is not None and cached.end > now:
            return cached
        period = budget_period(limits.budget_duration, limits.budget_reset_at, now)
        if len(self._periods) >= MEMO_MAX:
            self._periods.clear()
        self._periods[cache_key] = period
        return period
