"""One behavioural suite for every shared state implementation (memory and Redis, parametrised)."""

from __future__ import annotations

import asyncio
import math
import random

from gateway.shared_state import LATENCY_SAMPLES, SharedState
from tests.shared_state.conftest import wait_until

# A window this long has no boundary during a test: the concurrency checks see one window.
ONE_WINDOW_S = 10**9


async def test_counters_start_at_zero_and_add(state: SharedState, prefix: str):
    a, b = prefix + "a", prefix + "b"
    assert await state.get_int(a) == 0
    assert await state.incr(a) == 1
    assert await state.incr(a, 5) == 6
    assert await state.incr(a, -7) == -1
    assert await state.incr(b, 3) == 3
    assert await state.get_int(a) == -1
    assert await state.get_ints([a, prefix + "missing", b]) == [-1, 0, 3]
    assert await state.get_ints([]) == []
    assert await state.get(b) == "3"


async def test_in_flight_count_with_a_ttl_expires_and_every_incr_refreshes_it(state: SharedState, prefix: str):
    key = prefix + "inflight"
    assert await state.incr(key, 1, ttl_s=30) == 1
    assert 0 < await state.ttl(key) <= 30
    assert await state.incr(key, 1, ttl_s=0.3) == 2
    assert await state.ttl(key) <= 0.3
    await wait_until(lambda: _is(state.get_int(key), 0), 5, "the counter expires after its ttl")
    assert await state.ttl(key) is None


async def test_incr_without_a_ttl_keeps_the_one_it_had(state: SharedState, prefix: str):
    key = prefix + "kept"
    await state.incr(key, 1, ttl_s=30)
    await state.incr(key, 1)
    assert 0 < await state.ttl(key) <= 30
    plain = prefix + "plain"
    await state.incr(plain)
    assert await state.ttl(plain) == math.inf


async def test_window_adds_up_and_reads_many(state: SharedState, prefix: str):
    a, b = prefix + "tpm:a", prefix + "tpm:b"
    assert await state.window_add(a, 100, ONE_WINDOW_S) == (True, 100)
    assert await state.window_add(a, 50, ONE_WINDOW_S) == (True, 150)
    assert await state.window_add(b, 7, ONE_WINDOW_S) == (True, 7)
    assert await state.window_get(a, ONE_WINDOW_S) == 150
    assert await state.window_get_many([a, prefix + "none", b], ONE_WINDOW_S) == [150, 0, 7]
    assert await state.window_get_many([], ONE_WINDOW_S) == []
    # A window counter lives under its own name: the plain key of the same name is untouched.
    assert await state.get_int(a) == 0


async def test_window_limit_refuses_without_adding_and_give_backs_stop_at_zero(state: SharedState, prefix: str):
    key = prefix + "rpm"
    assert await state.window_add(key, 8, ONE_WINDOW_S, limit=10) == (True, 8)
    assert await state.window_add(key, 3, ONE_WINDOW_S, limit=10) == (False, 8)
    assert await state.window_add(key, 2, ONE_WINDOW_S, limit=10) == (True, 10)
    assert await state.window_add(key, 1, ONE_WINDOW_S, limit=10) == (False, 10)
    assert await state.window_add(key, -4, ONE_WINDOW_S, limit=10) == (True, 6)
    assert await state.window_add(key, -100, ONE_WINDOW_S) == (True, 0)
    assert await state.window_add(prefix + "big", 11, ONE_WINDOW_S, limit=10) == (False, 0)


async def test_200_concurrent_window_adds_never_pass_the_limit(state: SharedState, prefix: str):
    key, limit = prefix + "burst", 120
    amounts = [random.randint(1, 5) for _ in range(200)]
    results = await asyncio.gather(*(state.window_add(key, n, ONE_WINDOW_S, limit=limit) for n in amounts))
    allowed = sum(n for n, (ok, _) in zip(amounts, results) if ok)
    assert all(total <= limit for _, total in results)
    assert await state.window_get(key, ONE_WINDOW_S) == allowed <= limit
    assert allowed > limit - 5  # only adds that no longer fit were refused
    ones = await asyncio.gather(*(state.window_add(prefix + "ones", 1, ONE_WINDOW_S, limit=50)
                                  for _ in range(200)))
    assert sum(ok for ok, _ in ones) == 50
    assert sorted(total for ok, total in ones if ok) == list(range(1, 51))


async def test_a_fixed_window_starts_afresh_at_its_boundary(state: SharedState, prefix: str):
    key = prefix + "short"
    await state.window_add(key, 5, 0.25)
    await wait_until(lambda: _is(state.window_get(key, 0.25), 0), 5, "the next window starts at 0")
    assert await state.window_add(key, 1, 0.25, limit=1) == (True, 1)


async def test_fail_counter_counts_failures_in_the_window(state: SharedState, prefix: str):
    key = prefix + "fails"
    assert [await state.fail_counter(key, ONE_WINDOW_S) for _ in range(3)] == [1, 2, 3]
    assert await state.window_get(key, ONE_WINDOW_S) == 3


async def test_cooldown_lives_for_its_ttl_and_its_ttl_says_when_it_lifts(state: SharedState, prefix: str):
    key = prefix + "cooldown:dep-1"
    assert await state.get(key) is None and await state.ttl(key) is None
    await state.set_until(key, "429", 0.4)
    assert await state.get(key) == "429"
    assert 0 < await state.ttl(key) <= 0.4
    assert await state.get_many([key, prefix + "cooldown:dep-2"]) == ["429", None]
    assert await state.get_many([]) == []
    await wait_until(lambda: _is(state.get(key), None), 5, "the cooldown lifts")
    assert await state.ttl(key) is None


async def test_set_until_replaces_value_and_ttl_and_delete_removes(state: SharedState, prefix: str):
    key = prefix + "k"
    await state.set_until(key, "a", 30)
    await state.set_until(key, "b", 60)
    assert await state.get(key) == "b"
    assert 30 < await state.ttl(key) <= 60
    await state.delete(key)
    await state.delete(key)
    assert await state.get(key) is None
    await state.set_until(key, "gone", 0)
    assert await state.get(key) is None
    await state.set_until(key, "ünïcode ✓", 30)
    assert await state.get(key) == "ünïcode ✓"


async def test_latency_is_the_mean_of_the_recent_samples(state: SharedState, prefix: str):
    a, b = prefix + "lat:a", prefix + "lat:b"
    assert await state.latency([a]) == [None]
    await state.record_latency(a, 10, 30)
    await state.record_latency(a, 20.5, 30)
    assert await state.latency([a, b]) == [15.25, None]
    for ms in range(100, 100 + LATENCY_SAMPLES + 5):
        await state.record_latency(b, ms, 30)
    recent = range(100 + 5, 100 + LATENCY_SAMPLES + 5)
    assert (await state.latency([b]))[0] == sum(recent) / LATENCY_SAMPLES
    assert await state.latency([]) == []


async def test_latency_series_expires_after_its_latest_sample(state: SharedState, prefix: str):
    key = prefix + "lat"
    await state.record_latency(key, 5, 0.3)
    await wait_until(lambda: _is(state.latency([key]), [None]), 5, "the latency series expires")


async def test_bytes_round_trip_and_expire(state: SharedState, prefix: str):
    key = prefix + "cache:q1"
    value = bytes(range(256)) * 4
    assert await state.bytes_get(key) is None
    await state.bytes_set(key, value, 30)
    assert await state.bytes_get(key) == value
    assert 0 < await state.ttl(key) <= 30
    await state.bytes_set(key, b"short", 0.3)
    assert await state.bytes_get(key) == b"short"
    await wait_until(lambda: _is(state.bytes_get(key), None), 5, "the cache entry expires")
    await state.bytes_set(key, b"x", 30)
    await state.delete(key)
    assert await state.bytes_get(key) is None


async def test_health(state: SharedState):
    status = state.status()
    assert status["backend"] == state.backend in ("memory", "redis")
    assert status["degraded"] is state.degraded is False


async def _is(awaitable, expected) -> bool:
    return await awaitable == expected
