"""The product's fixed one-minute windows (rpm limits, the router's rpm caps) seen from a test.

A window is a calendar minute, ``floor(now / 60)`` on this machine's clock (the Redis server's, on
this machine too). A test cannot say in which minute the gateway counted a call, but it can say in
which minutes the call was in flight: ``time.time()`` read before and after it. Unless the call
straddled a boundary that is one minute, and the test knows the outcome exactly; only a call that
straddled one may have been counted in either. So instead of waiting for a fresh minute before it
starts, a test records each call's minutes (``Clock``) and checks its outcomes against the ones the
windows allow for some choice of the straddling calls' minutes: strict wherever the minute is known.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from dataclasses import dataclass


def minute(t: float) -> int:
    return math.floor(t / 60)


@dataclass(frozen=True)
class Span:
    """The minutes a call was in flight in: one, or two when it straddled a boundary."""

    first: int
    last: int

    @property
    def minutes(self) -> range:
        return range(self.first, self.last + 1)

    @property
    def known(self) -> int | None:
        return self.first if self.first == self.last else None


class Clock:
    """``with Clock() as clock:`` around one call; then ``clock.span``, the minutes it was in flight in."""

    def __enter__(self) -> Clock:
        self.started = time.time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.span = Span(minute(self.started), minute(time.time()))


def routed_within_an_rpm_cap(calls: list[tuple[Span, bool]], cap: int) -> bool:
    """Calls made one after another (each one's bookings landed before the next began): ``(span, went
    to the capped deployment)``. True when some choice of minutes, within each span, gives exactly
    these picks: the capped deployment is picked while fewer than ``cap`` of its calls were booked in
    the minute its usage was read, and a call's booking lands in that minute or a later one of its span."""
    choices = []
    for span, capped in calls:
        minutes = span.minutes
        choices.append([(read, booked) for read in minutes for booked in minutes if booked >= read] if capped
                       else [(read, None) for read in minutes])
    for choice in itertools.product(*choices):
        booked: Counter[int] = Counter()
        for (read, booking), (_, capped) in zip(choice, calls):
            if (booked[read] < cap) != capped:
                break
            if booking is not None:
                booked[booking] += 1
        else:
            return True
    return False


def admitted_within_an_rpm_limit(calls: list[tuple[Span, bool]], limit: int, slack: int = 0) -> str | None:
    """Concurrent calls under one rpm limit (an atomic check-and-count, in one minute of each call's
    span): ``(span, admitted)``. None when the outcomes fit the windows; else what does not: a minute
    that certainly admitted more than ``limit + slack``, or one that refused a call while it could
    not have admitted ``limit`` yet."""
    for m in sorted({m for span, _ in calls for m in span.minutes}):
        surely = sum(1 for span, admitted in calls if admitted and span.known == m)
        maybe = sum(1 for span, admitted in calls if admitted and span.known is None and m in span.minutes)
        refused = any(not admitted and span.known == m for span, admitted in calls)
        if surely > limit + slack:
            return f"minute {m}: {surely} calls admitted, over the limit {limit}"
        if refused and surely + maybe < limit:
            return f"minute {m}: a call refused after only {surely + maybe} admitted, under the limit {limit}"
    return None
