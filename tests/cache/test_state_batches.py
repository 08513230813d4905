"""The shared state's batched cache calls the answer cache makes: ``bytes_get_many`` (one MGET) and
``bytes_set_many`` (one pipelined write; a ttl of 0 deletes), on memory, Redis and failover."""

from __future__ import annotations

import uuid

import pytest_asyncio

from gateway.shared_state import FailoverState, MemoryState, SharedState
from tests.shared_state.conftest import delete_prefix, make_redis_state


@pytest_asyncio.fixture(loop_scope="function", params=["memory", "redis", "failover"])
async def state(request):
    prefix = f"test:cache-batches:{uuid.uuid4().hex}:"
    made: SharedState
    if request.param == "memory":
        made = MemoryState()
    elif request.param == "redis":
        made = make_redis_state()
    else:
        made = FailoverState(make_redis_state(), MemoryState())
    yield made, prefix
    await made.close()
    if request.param != "memory":
        await delete_prefix(prefix)


async def test_many_values_are_written_and_read_in_order(state):
    shared, prefix = state
    keys = [f"{prefix}{i}" for i in range(5)]
    assert await shared.bytes_get_many(keys) == [None] * 5
    assert await shared.bytes_get_many([]) == []
    await shared.bytes_set_many([(keys[0], b"\x00zero", 30), (keys[2], b"two", 30), (keys[4], b"four", 30)])
    assert await shared.bytes_get_many(keys) == [b"\x00zero", None, b"two", None, b"four"]
    await shared.bytes_set_many([(keys[2], b"", 0), (keys[1], b"one", 30)])  # a ttl of 0 deletes
    assert await shared.bytes_get_many(keys[:3]) == [b"\x00zero", b"one", None]
    assert await shared.bytes_get(keys[1]) == b"one"
    ttl = await shared.ttl(keys[1])
    assert ttl is not None and 0 < ttl <= 30
    await shared.bytes_set_many([])


async def test_a_read_keeps_an_entry_recently_used_in_memory():
    memory = MemoryState(cache_max_entries=2)
    await memory.bytes_set_many([("a", b"1", 30), ("b", b"2", 30)])
    assert await memory.bytes_get_many(["a"]) == [b"1"]  # a is now the most recently used
    await memory.bytes_set("c", b"3", 30)
    assert await memory.bytes_get_many(["a", "b", "c"]) == [b"1", None, b"3"]
