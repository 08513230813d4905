"""Budget reservations in the shared state: what one period of one budget holds, and the rule that
admits a request against it (the same rule in memory and in the Redis script).

One budget period keeps three values under a caller's base key: the settled **spent** amount
(``<key>:spent:<window>``, seeded from the database spend when missing), the **held** reservations of
the requests in flight (``<key>:held:<window>``), and the **turn** (``<key>:turn``: ``<amount>:<token>``,
what the one request admitted without a known bound holds, and its token, with a ttl). Amounts are
integers (micro-dollars); the window is the fixed window of ``window_s`` (window 0 until a budget
period's end, as the admission names it), so both counters expire with their period. What a turn
holds lives in the turn itself, so it goes with the turn's ttl when its process died mid-request
(a reservation in the held counter stays to the period's end). What is "held" to a caller is the
counter and the turn's amount together.

The rule, one atomic step (``decide``):

- ``RESERVED``: something is left and the request's worst case fits in it: the worst case is held.
- ``TURN``: something is left but the worst case does not fit (or is unknown) and no other request
  has the turn: this one takes it and holds all that is left, so nothing else is admitted past the
  budget while it runs. It may spend more than what it holds: that is the one request by which the
  spend may end above the budget.
- ``WAIT``: nothing fits now, but requests in flight hold reservations (or the turn) that may come
  back: the caller may ask again.
- ``SPENT``: nothing is left and nothing is in flight: refused.
"""

from __future__ import annotations

from dataclasses import dataclass

SPENT, RESERVED, TURN, WAIT = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class BudgetView:
    """The outcome of one ``budget_reserve``: the verdict, the amount it held for this request, and the
    period's settled spend and reservations in flight as it found them (before this request's)."""

    verdict: int
    amount: int
    spent: int
    held: int


def decide(budget: int, worst: int | None, spent: int, held: int, turn_free: bool) -> tuple[int, int]:
    """(verdict, amount held) for a request whose worst case is ``worst`` (None: unknown)."""
    left = budget - spent - held
    if left > 0 and worst is not None and worst <= left:
        return RESERVED, worst
    if left > 0 and turn_free:
        return TURN, left
    if left > 0 or held > 0:
        return WAIT, 0
    return SPENT, 0


def turn_value(amount: int, token: str) -> str:
    return f"{amount}:{token}"


def turn_amount(value: str | None) -> int:
    """What a turn holds (0 for no turn)."""
    return int(value.partition(":")[0]) if value else 0


def turn_token(value: str) -> str:
    return value.partition(":")[2]


def names(key: str, index: int) -> tuple[str, str, str]:
    """The spent, held and turn keys of ``key`` in window ``index``."""
    return f"{key}:spent:{index}", f"{key}:held:{index}", f"{key}:turn"
