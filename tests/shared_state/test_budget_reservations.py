"""Budget reservations (gateway/shared_state/budget.py), alike in memory and in Redis: the worst case
held when it fits, the turn when it does not, waiting while others hold it, refused when spent;
atomic under concurrency; settle gives back, spends and frees the turn; the spend seeded once."""

from __future__ import annotations

import asyncio

from gateway.shared_state import SharedState
from gateway.shared_state.budget import RESERVED, SPENT, TURN, WAIT, BudgetView
from tests.shared_state.conftest import wait_until

WINDOW_S = 10**9  # one window for the whole test
TTL_S = 30.0


async def reserve(state: SharedState, key: str, worst: int | None, token: str, budget: int = 100,
                  seed: int = 0) -> BudgetView:
    return await state.budget_reserve(key, WINDOW_S, budget, worst, seed, token, TTL_S)


async def test_the_worst_case_is_held_while_it_fits_then_one_request_takes_the_turn(state: SharedState, prefix: str):
    key = prefix + "budget"
    assert await reserve(state, key, 30, "a", seed=10) == BudgetView(RESERVED, 30, 10, 0)
    assert await reserve(state, key, 30, "b", seed=99) == BudgetView(RESERVED, 30, 10, 30)  # seeded once
    assert await reserve(state, key, 40, "c") == BudgetView(TURN, 30, 10, 60)  # all that is left
    assert await reserve(state, key, 1, "d") == BudgetView(WAIT, 0, 10, 90)
    assert await state.budget_settle(key, WINDOW_S, 30, 5, None) == (15, 60)  # "a" cost 5
    assert await reserve(state, key, None, "e") == BudgetView(WAIT, 0, 15, 60)  # "c" has the turn
    assert await reserve(state, key, 25, "f") == BudgetView(RESERVED, 25, 15, 60)  # a bounded one fits
    assert await state.budget_settle(key, WINDOW_S, 30, 70, "c") == (85, 55)  # "c": past what it held
    assert await state.budget_settle(key, WINDOW_S, 30, 0, None) == (85, 25)  # "b" failed: nothing spent
    assert await reserve(state, key, None, "g") == BudgetView(WAIT, 0, 85, 25)  # nothing left; "f" in flight
    assert await state.budget_settle(key, WINDOW_S, 25, 20, None) == (105, 0)
    assert await reserve(state, key, 0, "h") == BudgetView(SPENT, 0, 105, 0)
    assert await state.budget_get(key, WINDOW_S) == (105, 0)


async def test_the_turn_is_freed_only_by_its_holder_or_its_ttl(state: SharedState, prefix: str):
    key = prefix + "turn"
    assert (await reserve(state, key, None, "mine")).verdict == TURN
    assert await state.budget_settle(key, WINDOW_S, 0, 0, "someone-else") == (0, 100)
    assert (await reserve(state, key, None, "other")).verdict == WAIT
    await state.budget_settle(key, WINDOW_S, 100, 0, "mine")
    assert (await reserve(state, key, None, "other")).verdict == TURN
    short = prefix + "short"
    await state.budget_reserve(short, WINDOW_S, 100, None, 0, "dies", 0.05)  # its process dies mid-request
    assert (await reserve(state, short, None, "next")).verdict == WAIT
    taken: list[BudgetView] = []

    async def next_takes_it() -> bool:
        taken.append(await reserve(state, short, None, "next"))
        return taken[-1].verdict == TURN

    await wait_until(next_takes_it, 5, "the dead holder's turn to expire")
    assert taken[-1] == BudgetView(TURN, 100, 0, 0)  # what it held went with it


async def test_concurrent_reservations_never_hold_past_the_budget(state: SharedState, prefix: str):
    key = prefix + "many"
    views = await asyncio.gather(*(reserve(state, key, 7, f"t{i}") for i in range(50)))
    verdicts = [v.verdict for v in views]
    assert verdicts.count(RESERVED) == 14 and verdicts.count(TURN) == 1 and verdicts.count(WAIT) == 35
    assert sum(v.amount for v in views) == 100
    assert await state.budget_get(key, WINDOW_S) == (0, 100)


async def test_a_missing_spend_is_not_created_by_settle(state: SharedState, prefix: str):
    key = prefix + "unseeded"
    assert await state.budget_settle(key, WINDOW_S, 0, 40, None) == (0, 0)
    assert (await reserve(state, key, 10, "a", seed=50)).spent == 50  # the next reserve seeds it


async def test_spend_without_a_budget_is_seeded_once_and_added(state: SharedState, prefix: str):
    key = prefix + "spend"
    assert await state.spend_add(key, WINDOW_S, 5, 40) == 45
    assert await state.spend_add(key, WINDOW_S, 5, 99) == 50  # seeded once
    assert (await reserve(state, key, 10, "a", seed=0)).spent == 50  # the budget's counter, the same
