"""FailoverState against Redis servers that fail: no call raises, it degrades, and it comes back."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

import pytest_asyncio
import redis.asyncio as aioredis

from gateway.shared_state import FailoverState, MemoryState, RedisState, SharedState
from tests.shared_state.conftest import RedisServer, free_port, wait_until

RETRY_AFTER_S = 0.1
LOGGER = "gateway.shared_state"


def failover(url: str, **redis_options: float) -> FailoverState:
    return FailoverState(RedisState(url, **redis_options), MemoryState(), retry_after_s=RETRY_AFTER_S)


async def one_of_each(state: SharedState, prefix: str) -> None:
    """Every call of the interface once; the values are checked against the memory semantics."""
    await state.incr(prefix + "inflight", 1, ttl_s=30)
    await state.get_int(prefix + "inflight")
    assert await state.get_ints([prefix + "none"]) == [0]
    ok, total = await state.window_add(prefix + "rpm", 1, 60, limit=10**6)
    assert ok and total >= 1
    await state.window_get(prefix + "rpm", 60)
    await state.window_get_many([prefix + "rpm"], 60)
    await state.fail_counter(prefix + "fails", 60)
    await state.set_until(prefix + "cooldown", "x", 30)
    assert await state.get(prefix + "cooldown") == "x"
    await state.get_many([prefix + "cooldown", prefix + "a", prefix + "b", prefix + "c"])
    await state.ttl(prefix + "cooldown")
    await state.record_latency(prefix + "lat", 12, 30)
    await state.latency([prefix + "lat"])
    await state.bytes_set(prefix + "cache", b"answer", 30)
    await state.bytes_get(prefix + "cache")
    await state.delete(prefix + "cooldown")


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


@pytest_asyncio.fixture(loop_scope="function")
async def closing_server() -> AsyncIterator[str]:
    """A TCP server that accepts every connection and closes it at once."""
    async def close_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(close_at_once, "127.0.0.1", 0)
    yield f"redis://127.0.0.1:{server.sockets[0].getsockname()[1]}/0"
    server.close()
    await server.wait_closed()


@pytest_asyncio.fixture(loop_scope="function")
async def silent_server() -> AsyncIterator[str]:
    """A TCP server that accepts every connection and never answers."""
    writers: list[asyncio.StreamWriter] = []

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        await reader.read()

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    yield f"redis://127.0.0.1:{server.sockets[0].getsockname()[1]}/0"
    for writer in writers:
        writer.close()
    server.close()


async def assert_serves_from_memory_when(url: str, prefix: str, caplog) -> None:
    state = failover(url)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    try:
        started = time.monotonic()
        await asyncio.gather(*(one_of_each(state, f"{prefix}{i}:") for i in range(50)))
        await one_of_each(state, prefix)
        assert time.monotonic() - started < 5, "a failing Redis stalled the calls"
        assert state.degraded
        status = state.status()
        assert status["backend"] == "redis" and status["degraded"] is True and status["serving"] == "memory"
        assert status["error"]
        assert await state.incr(prefix + "n") == 1 and await state.incr(prefix + "n") == 2  # memory's counter
        assert len(warnings(caplog)) == 1, warnings(caplog)
        await asyncio.sleep(RETRY_AFTER_S * 4)  # the reconnect attempts fail quietly
        assert state.degraded and len(warnings(caplog)) == 1
    finally:
        await state.close()


async def test_nothing_listening(prefix: str, caplog):
    await assert_serves_from_memory_when(f"redis://127.0.0.1:{free_port()}/0", prefix, caplog)


async def test_a_server_that_closes_every_connection(closing_server: str, prefix: str, caplog):
    await assert_serves_from_memory_when(closing_server, prefix, caplog)


async def test_a_server_that_never_answers_costs_one_short_timeout(silent_server: str, prefix: str, caplog):
    await assert_serves_from_memory_when(silent_server, prefix, caplog)


async def test_check_degrades_at_start_up_when_redis_is_not_there():
    state = failover(f"redis://127.0.0.1:{free_port()}/0")
    try:
        assert await state.check() is False
        assert state.degraded
    finally:
        await state.close()


async def test_killed_mid_load_then_restarted_it_reconnects(redis_server: RedisServer, prefix: str, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    # Generous timeouts, so a loaded machine cannot fail a call before the kill: the kill itself
    # resets the connections, which fails the calls at once whatever the timeouts.
    state = failover(redis_server.url, connect_timeout_s=2, socket_timeout_s=2, pool_timeout_s=2)
    assert await state.check() is True
    errors: list[BaseException] = []
    calls = 0
    stop = asyncio.Event()

    async def load(i: int) -> None:
        nonlocal calls
        while not stop.is_set():
            try:
                await state.incr(prefix + "inflight", 1, ttl_s=30)
                await state.window_add(prefix + "tpm", 10, 60, limit=10**9)
                await state.get_many([f"{prefix}cooldown:{n}" for n in range(4)])
                await state.incr(prefix + "inflight", -1, ttl_s=30)
            except BaseException as exc:  # noqa: BLE001 - any escape is the failure under test
                errors.append(exc)
            calls += 1
            await asyncio.sleep(0)

    workers = [asyncio.create_task(load(i)) for i in range(20)]
    try:
        await wait_until(lambda: calls > 200, 10, "the load runs against Redis")
        assert not state.degraded
        redis_server.kill()
        await wait_until(lambda: state.degraded, 5, "killing Redis degrades the state")
        served = calls
        await wait_until(lambda: calls > served + 200, 5, "calls keep being answered from memory")
        assert state.status()["serving"] == "memory"
        redis_server.start()
        await wait_until(lambda: not state.degraded, 10, "the state reconnects to the restarted Redis")
        served = calls
        await wait_until(lambda: calls > served + 200, 5, "the load runs against Redis again")
    finally:
        stop.set()
        await asyncio.gather(*workers)
    assert errors == []
    await state.set_until(prefix + "after", "back", 30)
    admin = aioredis.Redis.from_url(redis_server.url)
    try:
        assert await admin.get(prefix + "after") == b"back"  # written to the new Redis, not to memory
    finally:
        await admin.aclose()
        await state.close()
    lines = warnings(caplog)
    assert len(lines) == 2, lines
    assert "failed" in lines[0] and "answers again" in lines[1]


async def test_close_stops_the_reconnect_attempts():
    state = failover(f"redis://127.0.0.1:{free_port()}/0")
    await state.incr("k")
    assert state.degraded
    await state.close()
    assert state._probe is not None and state._probe.done()
