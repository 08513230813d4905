"""The key cache: a short ttl, LRU-bounded, one load per key at a time, and a change announced through the
shared state clears every process's cache (here: several caches on one state) at its next check."""

from __future__ import annotations

import asyncio

import pytest

from gateway.auth.cache import VERSION_KEY, KeyCache
from gateway.shared_state import MemoryState


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Loads:
    def __init__(self, value: object = "row") -> None:
        self.calls = 0
        self.value = value

    async def __call__(self) -> object:
        self.calls += 1
        await asyncio.sleep(0)
        return self.value


async def test_entries_live_for_the_ttl():
    clock, loads = Clock(), Loads()
    cache: KeyCache[object] = KeyCache(MemoryState(), ttl_s=1.0, clock=clock)
    assert await cache.get_or_load("k", loads) == "row"
    clock.now += 0.9
    assert await cache.get_or_load("k", loads) == "row"
    assert loads.calls == 1
    clock.now += 0.2
    await cache.get_or_load("k", loads)
    assert loads.calls == 2


async def test_unknown_keys_are_cached_too_and_the_cache_is_bounded():
    clock = Clock()
    cache: KeyCache[object] = KeyCache(None, max_entries=3, clock=clock)
    missing = Loads(None)
    for _ in range(5):
        assert await cache.get_or_load("nope", missing) is None
    assert missing.calls == 1
    for i in range(10):
        await cache.get_or_load(f"k{i}", Loads())
    assert len(cache) == 3


async def test_concurrent_lookups_of_one_key_share_one_load():
    cache: KeyCache[object] = KeyCache(None)
    loads = Loads()
    results = await asyncio.gather(*(cache.get_or_load("k", loads) for _ in range(20)))
    assert results == ["row"] * 20 and loads.calls == 1


async def test_a_failed_load_is_not_cached_and_reaches_every_waiter():
    cache: KeyCache[object] = KeyCache(None)

    async def broken() -> object:
        await asyncio.sleep(0)
        raise RuntimeError("db away")

    results = await asyncio.gather(*(cache.get_or_load("k", broken) for _ in range(3)), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    assert await cache.get_or_load("k", Loads()) == "row"


async def test_a_change_elsewhere_clears_this_cache_at_its_next_check():
    shared, clock = MemoryState(), Clock()
    here: KeyCache[object] = KeyCache(shared, ttl_s=60, check_s=0.25, clock=clock)
    there: KeyCache[object] = KeyCache(shared, ttl_s=60, check_s=0.25, clock=clock)
    old, new = Loads("old"), Loads("new")
    assert await here.get_or_load("k", old) == "old"
    await there.changed()  # another process blocked the key
    assert await shared.get_int(VERSION_KEY) == 1
    assert await here.get_or_load("k", new) == "old"  # checked under 250 ms ago
    clock.now += 0.25
    assert await here.get_or_load("k", new) == "new"
    assert old.calls == 1 and new.calls == 1


async def test_a_load_begun_before_a_change_is_not_cached_after_it():
    cache: KeyCache[object] = KeyCache(MemoryState())
    gate = asyncio.Event()

    async def slow_stale() -> object:
        await gate.wait()
        return "stale"

    pending = asyncio.ensure_future(cache.get_or_load("k", slow_stale))
    await asyncio.sleep(0)
    await cache.changed()
    gate.set()
    assert await pending == "stale"  # that request saw the old row...
    assert await cache.get_or_load("k", Loads("fresh")) == "fresh"  # ...but it was not kept


class BrokenState(MemoryState):
    async def get_int(self, key: str) -> int:
        raise ConnectionError("redis away")

    async def incr(self, key: str, delta: int = 1, ttl_s: float | None = None) -> int:
        raise ConnectionError("redis away")


async def test_an_unreachable_shared_state_means_nothing_cached_is_trusted(caplog: pytest.LogCaptureFixture):
    clock = Clock()
    cache: KeyCache[object] = KeyCache(BrokenState(), clock=clock)
    loads = Loads()
    await cache.get_or_load("k", loads)
    clock.now += 0.3
    await cache.get_or_load("k", loads)
    assert loads.calls == 2
    await cache.changed()  # logged, not raised
    assert "could not announce" in caplog.text
