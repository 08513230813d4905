"""Budgets: the worst case reserved against what is left, atomically, under concurrency and across
two processes; settle to the true cost, release to nothing, an unknown cost kept at its worst case;
the database spend seeded once per period; periods from budget_reset_at and budget_duration."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gateway.admission.admission import LIFETIME, LIFETIME_WINDOW_S, MICRO, Admission, Scope, Ticket, budget_period
from gateway.admission.errors import BudgetExceeded
from gateway.auth.records import Identity, Limits
from gateway.shared_state import MemoryState
from gateway.shared_state.budget import BudgetView
from tests.admission.conftest import Backend, identity
from tests.shared_state.conftest import wait_until

WORST = 0.01


async def admit_all(admissions: list[Admission], who: Identity, n: int, worst: float | None = WORST
                    ) -> tuple[list[tuple[Admission, Ticket]], list[BudgetExceeded]]:
    async def one(i: int) -> tuple[Admission, Ticket]:
        admission = admissions[i % len(admissions)]
        return admission, await admission.admit(who, estimated_tokens=10, worst_cost_usd=worst)

    results = await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)
    for result in results:
        if not isinstance(result, tuple | BudgetExceeded):
            raise result  # type: ignore[misc]
    return [r for r in results if isinstance(r, tuple)], [r for r in results if isinstance(r, BudgetExceeded)]


async def spend(admission: Admission, who: Identity, scope: str = "key") -> float:
    return (await admission.usage(who))[scope]["spend_usd"]


async def test_concurrent_requests_never_overspend_and_settle_to_the_sum(backend: Backend):
    one, two = backend.make(), backend.make()
    who = identity("budgeted", max_budget=0.25)
    admitted, refused = await admit_all([one, two], who, 100)
    assert len(admitted) * WORST <= 0.25 + WORST
    assert len(admitted) == 25 and len(refused) == 75  # reservations are exact: the budget fills up
    err = refused[0]
    assert err.status == 400 and err.type == "budget_exceeded" and err.code == "budget_exceeded"
    assert "key 'budgeted'" in err.message and "max_budget $0.25" in err.message
    assert "spent $0, $0.25 reserved by requests in flight" in err.message  # what blocks it is named
    assert "estimated at up to $0.01" in err.message
    assert "never resets" in err.message
    rng = random.Random(7)
    costs = [round(rng.uniform(0.001, WORST), 6) for _ in admitted]
    await asyncio.gather(*(admission.settle(ticket, tokens=10, cost_usd=cost)
                           for (admission, ticket), cost in zip(admitted, costs)))
    assert round(await spend(one, who) * MICRO) == round(sum(costs) * MICRO)
    assert await spend(two, who) == await spend(one, who)
    more, _ = await admit_all([one, two], who, 100)  # what the true costs left is reserved again
    fits, rest = divmod(int(0.25 * MICRO) - round(sum(costs) * MICRO), int(WORST * MICRO))
    assert len(more) == fits + (1 if rest else 0)  # and the rest goes to one request, which takes the turn


async def test_a_team_budget_applies_on_top_of_its_keys(backend: Backend):
    admission = backend.make()
    team = Limits(max_budget=0.05)
    rich = identity("rich", team=team, team_alias="lab", max_budget=10.0)
    admitted, refused = await admit_all([admission], rich, 10)
    assert len(admitted) == 5
    assert refused[0].scope == "team" and "team 'lab'" in refused[0].message
    assert await spend(admission, rich) == 0.05  # the key's reservations of the refused were given back


async def test_settle_and_release_give_back_exactly_what_was_reserved(backend: Backend):
    admission = backend.make()
    who = identity(rpm_limit=10, tpm_limit=10_000, max_parallel_requests=4, max_budget=1.0)
    ticket = await admission.admit(who, estimated_tokens=300, worst_cost_usd=0.02)
    assert ticket.tokens == 300 and ticket.cost_usd == 0.02
    assert await admission.usage(who) == {"key": {"rpm": 1, "tpm": 300, "parallel": 1, "spend_usd": 0.02,
                                                  "period_start": None}}
    headers = await admission.settle(ticket, tokens=120, cost_usd=0.0051)
    assert headers == {"x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "9",
                       "x-ratelimit-limit-tokens": "10000", "x-ratelimit-remaining-tokens": "9880"}
    assert await admission.usage(who) == {"key": {"rpm": 1, "tpm": 120, "parallel": 0, "spend_usd": 0.0051,
                                                  "period_start": None}}
    failed = await admission.admit(who, estimated_tokens=300, worst_cost_usd=0.02)
    await admission.release(failed)
    assert await admission.usage(who) == {"key": {"rpm": 1, "tpm": 120, "parallel": 0, "spend_usd": 0.0051,
                                                  "period_start": None}}


async def test_an_unknown_cost_keeps_the_worst_case(backend: Backend):
    admission = backend.make()
    who = identity(tpm_limit=1000, max_budget=1.0)
    ticket = await admission.admit(who, estimated_tokens=400, worst_cost_usd=0.03)
    await admission.settle(ticket, tokens=None, cost_usd=None)
    usage = (await admission.usage(who))["key"]
    assert usage["spend_usd"] == 0.03 and usage["tpm"] == 400  # never a made-up $0 or 0 tokens


async def test_a_request_without_a_worst_case_takes_the_turn_and_holds_what_is_left(backend: Backend):
    admission = backend.make()
    who = identity(max_budget=0.05)
    unpriced = await admission.admit(who, estimated_tokens=10, worst_cost_usd=None)
    assert await spend(admission, who) == 0.05  # all that is left: nothing else gets in while it runs
    with pytest.raises(BudgetExceeded) as waiting:
        await admission.admit(who, estimated_tokens=10, worst_cost_usd=0.001)
    assert "spent $0, $0.05 reserved by requests in flight" in waiting.value.message
    await admission.settle(unpriced, tokens=10, cost_usd=0.02)  # its cost became known: it counts
    assert await spend(admission, who) == 0.02
    small = await admission.admit(who, estimated_tokens=10, worst_cost_usd=0.001)  # fits: held, concurrently
    unknown = await admission.admit(who, estimated_tokens=10, worst_cost_usd=None)  # the turn: the rest
    assert await spend(admission, who) == 0.05
    await admission.settle(small, tokens=10, cost_usd=0.001)
    await admission.settle(unknown, tokens=10, cost_usd=0.04)  # the one request past the budget
    assert await spend(admission, who) == 0.061
    for worst in (None, 0.0, 0.001):
        with pytest.raises(BudgetExceeded) as spent:
            await admission.admit(who, estimated_tokens=10, worst_cost_usd=worst)
        assert "spent $0.061;" in spent.value.message and "reserved" not in spent.value.message


async def test_the_database_spend_is_seeded_once_across_two_processes(backend: Backend):
    one, two = backend.make(), backend.make()
    who = identity("seeded", max_budget=0.25, spend=0.10)
    admitted, refused = await admit_all([one, two], who, 40)  # both seed at once: one lands
    assert len(admitted) == 15 and refused
    assert round(await spend(one, who) * MICRO) == (100_000 + 15 * 10_000)
    for admission, ticket in admitted:
        await admission.settle(ticket, tokens=None, cost_usd=0.0)
    assert await spend(two, who) == 0.10
    # A process that starts later reads a database spend that already holds what was counted: no second seed.
    later = backend.make()
    drained = Identity(key_hash=who.key_hash, key_alias="seeded", key_limits=Limits(max_budget=0.25, spend=0.10))
    await later.settle(await later.admit(drained, estimated_tokens=1, worst_cost_usd=0.01), tokens=1, cost_usd=0.01)
    assert await spend(later, who) == 0.11


async def test_a_lost_counter_is_seeded_again(redis_backend: Backend):
    admission = redis_backend.make()
    who = identity(max_budget=1.0, spend=0.40)
    await admission.admit(who, estimated_tokens=1, worst_cost_usd=0.01)
    assert await spend(admission, who) == 0.41
    await redis_backend.states[0].delete(admission.key_of("spend", scope(who), LIFETIME) + ":spent:0")  # window 0
    assert await spend(admission, who) == 0.01  # Redis lost the spend (a restart, an eviction)
    await admission.admit(who, estimated_tokens=1, worst_cost_usd=0.01)
    assert await spend(admission, who) == 0.42


def scope(who: Identity) -> Scope:
    assert who.key_hash is not None
    return Scope("key", who.key_hash, "key", who.key_limits)


async def test_the_spend_key_names_its_period(backend: Backend):
    admission = backend.make()
    now = datetime.now(UTC)
    reset = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    who = identity("daily", max_budget=0.02, budget_duration="1d", budget_reset_at=reset, spend=0.015)
    await admission.admit(who, estimated_tokens=1, worst_cost_usd=0.005)
    usage = (await admission.usage(who))["key"]
    assert usage["period_start"] == reset - timedelta(days=1) and usage["spend_usd"] == 0.02
    with pytest.raises(BudgetExceeded) as refused:
        await admission.admit(who, estimated_tokens=1, worst_cost_usd=0.005)
    assert f"resets at {reset.isoformat()}" in refused.value.message
    # The reset job has not run yet, but budget_reset_at has passed: the next period, from 0.
    lapsed = identity("lapsed", max_budget=0.02, budget_duration="1d", budget_reset_at=reset - timedelta(days=3),
                      spend=0.02)
    await admission.admit(lapsed, estimated_tokens=1, worst_cost_usd=0.005)
    usage = (await admission.usage(lapsed))["key"]
    assert usage["period_start"] == reset - timedelta(days=1) and usage["spend_usd"] == 0.005


NOW = datetime(2026, 12, 17, 15, 20, 5, tzinfo=UTC)  # a Thursday


@pytest.mark.parametrize(("duration", "reset_at", "start", "end"), [
    ("1d", "2026-12-18T00:00", "2026-12-17T00:00", "2026-12-18T00:00"),
    ("1h", "2026-12-17T16:00", "2026-12-17T15:00", "2026-12-17T16:00"),
    ("15m", "2026-12-17T15:30", "2026-12-17T15:15", "2026-12-17T15:30"),
    ("7d", "2026-12-21T00:00", "2026-12-14T00:00", "2026-12-21T00:00"),
    ("2w", "2026-12-28T00:00", "2026-12-14T00:00", "2026-12-28T00:00"),
    ("30d", "2027-01-01T00:00", "2026-12-01T00:00", "2027-01-01T00:00"),
    ("1mo", "2027-01-01T00:00", "2026-12-01T00:00", "2027-01-01T00:00"),
    ("3mo", "2027-03-01T00:00", "2026-12-01T00:00", "2027-03-01T00:00"),
    # budget_reset_at passed and not moved yet: the period of the same chain that holds now
    ("1d", "2026-12-10T00:00", "2026-12-17T00:00", "2026-12-18T00:00"),
    ("1h", "2026-11-01T05:00", "2026-12-17T15:00", "2026-12-17T16:00"),
    ("7m", "2026-12-17T15:00", "2026-12-17T15:14", "2026-12-17T15:21"),
    ("1mo", "2026-09-01T00:00", "2026-12-01T00:00", "2027-01-01T00:00"),
])
def test_budget_periods(duration: str, reset_at: str, start: str, end: str):
    period = budget_period(duration, datetime.fromisoformat(reset_at).replace(tzinfo=UTC), NOW)
    assert period.start == datetime.fromisoformat(start).replace(tzinfo=UTC)
    assert period.end == datetime.fromisoformat(end).replace(tzinfo=UTC)
    assert period.label == str(int(period.start.timestamp()))
    assert period.window_s == period.end.timestamp()  # window 0 ends with the period


def test_a_lifetime_budget_has_one_window_and_no_end():
    assert LIFETIME.label == "life" and LIFETIME.end is None and LIFETIME.window_s == LIFETIME_WINDOW_S
    assert budget_period("not a duration", NOW, NOW) is LIFETIME


async def test_a_small_budget_lets_in_a_request_whose_true_cost_fits(backend: Backend):
    """A $0.0003 budget, a call estimated at up to $0.00031 that costs $0.000124: it is let in (the
    budget's turn), and so is each next one while anything is left; the spend ends one call above."""
    one, two = backend.make(), backend.make()
    who = identity("small", max_budget=0.0003)
    admitted = 0
    for i in range(10):
        admission = (one, two)[i % 2]
        try:
            ticket = await admission.admit(who, estimated_tokens=10, worst_cost_usd=0.00031)
        except BudgetExceeded as refused:
            assert "spent $0.000372;" in refused.message
            assert "estimated at up to $0.00031" in refused.message
            break
        await admission.settle(ticket, tokens=10, cost_usd=0.000124)
        admitted += 1
    assert admitted == 3  # 0.000124, 0.000248, then 0.000372: one call past the budget, never two
    assert await spend(one, who) == 0.000372


async def test_unbounded_requests_go_one_at_a_time_across_two_processes(backend: Backend):
    """Fifty requests at once whose cost cannot be bounded (a deployment that never answered, an
    unpriced model), each costing $0.30 against a $1 budget over two processes: they go one at a
    time, and the spend ends at most one request above the budget."""
    one, two = backend.make(budget_wait_s=30.0), backend.make(budget_wait_s=30.0)
    who = identity("cold", max_budget=1.0)
    in_flight, most = 0, 0

    async def call(i: int) -> bool:
        nonlocal in_flight, most
        admission = (one, two)[i % 2]
        try:
            ticket = await admission.admit(who, estimated_tokens=10, worst_cost_usd=None)
        except BudgetExceeded:
            return False
        in_flight += 1
        most = max(most, in_flight)
        await admission.usage(who)  # the call itself: the others get to run meanwhile
        in_flight -= 1
        await admission.settle(ticket, tokens=10, cost_usd=0.30)
        return True

    answered = await asyncio.gather(*(call(i) for i in range(50)))
    assert answered.count(True) == 4 and most == 1  # 0.3, 0.6, 0.9, then 1.2: one request past $1
    assert await spend(one, who) == 1.2


async def test_an_admit_cancelled_while_it_waits_for_the_turn_leaves_nothing_held(backend: Backend):
    one = backend.make(budget_wait_s=30.0)
    who = identity("leaving", max_budget=1.0)
    holder = await one.admit(who, estimated_tokens=10, worst_cost_usd=None)  # the turn: all that is left
    waiting = asyncio.ensure_future(one.admit(who, estimated_tokens=10, worst_cost_usd=None))
    await wait_until(lambda: spend_is(one, who, 1.0), 5, "the turn to be held")
    waiting.cancel()  # its client went away while it waited
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await one.release(holder)
    assert await spend(one, who) == 0.0
    ticket = await one.admit(who, estimated_tokens=10, worst_cost_usd=None)
    await one.settle(ticket, tokens=10, cost_usd=0.5)
    assert await spend(one, who) == 0.5


class Gated(MemoryState):
    """A "Redis" (a MemoryState on the wall clock) whose budget reservations are made at once but
    answered only when ``gate`` opens: the answer is on its way when the request is cancelled."""

    def __init__(self) -> None:
        super().__init__(clock=time.time)
        self.gate = asyncio.Event()
        self.reserved = asyncio.Event()

    @property
    def backend(self) -> Any:
        return "redis"

    async def budget_reserve(self, *args: Any) -> BudgetView:
        view = await super().budget_reserve(*args)
        self.reserved.set()
        await self.gate.wait()
        return view


@pytest.mark.parametrize("worst", [None, 0.01])
async def test_an_admit_cancelled_while_its_reservation_is_on_its_way_gives_it_back(worst):
    state = Gated()
    admission = Admission(state, budget_wait_s=0.0)
    who = identity("racing", max_budget=1.0)
    racing = asyncio.ensure_future(admission.admit(who, estimated_tokens=10, worst_cost_usd=worst))
    await state.reserved.wait()
    assert await spend(admission, who) == (worst or 1.0)  # held (the turn, for an unknown worst case)
    racing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await racing
    state.gate.set()  # the answer arrives after its request is gone
    await wait_until(lambda: spend_is(admission, who, 0.0), 5, "what the cancelled request held to come back")
    ticket = await admission.admit(who, estimated_tokens=10, worst_cost_usd=None)  # the turn is free
    await admission.settle(ticket, tokens=10, cost_usd=0.25)
    assert await spend(admission, who) == 0.25
    await admission.close()


async def spend_is(admission: Admission, who: Identity, amount: float) -> bool:
    return await spend(admission, who) == amount
