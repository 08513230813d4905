"""RedisState's own promises: processes that share one Redis agree; scripts survive a flush."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis

from gateway.shared_state import RedisState
from gateway.shared_state.redis_state import REDIS_ERRORS, SOCKET_TIMEOUT_S, redact_url
from tests.shared_state.conftest import REDIS_URL, delete_prefix, make_redis_state

ONE_WINDOW_S = 10**9


async def test_two_instances_share_counters_windows_cooldowns_and_latency(prefix: str):
    one, two = make_redis_state(), make_redis_state()  # as two gateway processes would
    try:
        await one.incr(prefix + "inflight", 1, ttl_s=30)
        assert await two.incr(prefix + "inflight", 1, ttl_s=30) == 2
        await one.set_until(prefix + "cooldown", "timeout", 30)
        assert await two.get(prefix + "cooldown") == "timeout"
        assert 0 < await two.ttl(prefix + "cooldown") <= 30
        await one.record_latency(prefix + "lat", 10, 30)
        await two.record_latency(prefix + "lat", 30, 30)
        assert await one.latency([prefix + "lat"]) == [20.0]
        await two.bytes_set(prefix + "cache", b"\x00answer", 30)
        assert await one.bytes_get(prefix + "cache") == b"\x00answer"

        key, limit = prefix + "rpm", 100
        results = await asyncio.gather(*(state.window_add(key, 1, ONE_WINDOW_S, limit=limit)
                                         for _ in range(150) for state in (one, two)))
        assert sum(ok for ok, _ in results) == limit
        assert await one.window_get(key, ONE_WINDOW_S) == await two.window_get(key, ONE_WINDOW_S) == limit
    finally:
        await one.close()
        await two.close()
        await delete_prefix(prefix)


async def test_scripts_are_reloaded_when_redis_has_lost_them(redis_state: RedisState, prefix: str):
    assert await redis_state.window_add(prefix + "w", 2, ONE_WINDOW_S, limit=5) == (True, 2)
    admin = aioredis.Redis.from_url(REDIS_URL)
    try:
        await admin.script_flush()  # what a restarted Redis looks like to the scripts
    finally:
        await admin.aclose()
    assert await redis_state.window_add(prefix + "w", 2, ONE_WINDOW_S, limit=5) == (True, 4)
    assert await redis_state.incr(prefix + "n", 1, ttl_s=30) == 1


async def test_window_keys_expire_soon_after_their_window(redis_state: RedisState, prefix: str):
    await redis_state.window_add(prefix + "rpm", 1, 60)
    admin = aioredis.Redis.from_url(REDIS_URL)
    try:
        [name] = [key async for key in admin.scan_iter(match=f"{prefix}rpm:*")]
        assert 0 < await admin.pttl(name) <= 61_000
    finally:
        await admin.aclose()


def test_status_names_redis_without_the_password():
    assert redact_url("redis://:s3cret@cache:6379/0") == "redis://:***@cache:6379/0"
    assert redact_url("redis://user:s3cret@cache:6379") == "redis://user:***@cache:6379"
    assert redact_url("redis://cache:6379") == "redis://cache:6379"
    state = RedisState("redis://:s3cret@cache:6379/0")  # connects to nothing until used
    assert state.status() == {"backend": "redis", "degraded": False, "url": "redis://:***@cache:6379/0"}
    assert "s3cret" not in state.url


async def test_a_stall_of_this_process_is_not_taken_for_a_slow_redis(prefix: str):
    """The event loop held past the call's deadline (here by a blocking sleep in another task; in a
    gateway, CPU work or another thread holding the GIL) while Redis has answered: the call succeeds."""
    state = RedisState(REDIS_URL)  # the short default timeouts: a stall outlasts them
    try:
        await state.incr(prefix + "n")
        for _ in range(20):
            async def stall() -> None:
                await asyncio.sleep(0)
                time.sleep(SOCKET_TIMEOUT_S * 1.5)

            stalling = asyncio.create_task(stall())
            await state.incr(prefix + "n")
            await stalling
        assert await state.get_int(prefix + "n") == 21
    finally:
        await state.close()
        await delete_prefix(prefix)


async def test_the_commands_of_one_turn_share_one_pipeline_and_keep_their_own_answers(prefix: str):
    state = make_redis_state()
    try:
        await state.ping()
        results = await asyncio.gather(*(state.window_add(prefix + "b", 1, ONE_WINDOW_S, limit=30) for _ in range(50)),
                                       state.incr(prefix + "n", 5), state.get(prefix + "missing"))
        assert sorted(total for ok, total in results[:50] if ok) == list(range(1, 31))
        assert sum(not ok for ok, _ in results[:50]) == 20
        assert results[50:] == [5, None]
        pool = state._pool  # 52 commands at once went out on one connection, in one round trip
        assert len(pool._available_connections) + len(pool._in_use_connections) == 1
        await state._cmd("RPUSH", prefix + "list", "x")
        wrong, right = await asyncio.gather(state.get(prefix + "list"), state.get_int(prefix + "n"),
                                            return_exceptions=True)
        assert isinstance(wrong, aioredis.ResponseError) and right == 5  # one command's error is its own
    finally:
        await state.close()
        await delete_prefix(prefix)


async def test_a_lost_connection_fails_every_command_of_its_batch():
    state = RedisState("redis://127.0.0.1:1/0")  # nothing listens there
    try:
        outcomes = await asyncio.gather(state.incr("k"), state.get("k"), state.window_add("w", 1, 60, limit=1),
                                        return_exceptions=True)
        assert all(isinstance(o, REDIS_ERRORS) for o in outcomes), outcomes
    finally:
        await state.close()
