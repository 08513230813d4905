"""MemoryState's own promises: bounded memory (sweep, LRU cache), its clock."""

from __future__ import annotations

from gateway.shared_state import MemoryState


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_expired_keys_are_swept_by_later_writes_without_being_read():
    clock = FakeClock()
    state = MemoryState(clock=clock)
    for i in range(2000):
        await state.set_until(f"cooldown:{i}", "x", 5)
        await state.incr(f"inflight:{i}", 1, ttl_s=5)
    assert state.status()["keys"] == 4000
    clock.now += 10
    for _ in range(40):  # each write sweeps a bounded batch of what has expired
        await state.incr("live")
    assert state.status()["keys"] == 1
    assert len(state._heap) == 0


async def test_refreshing_a_ttl_does_not_grow_the_sweep_heap():
    clock = FakeClock()
    state = MemoryState(clock=clock)
    for _ in range(10_000):
        clock.now += 0.001
        await state.incr("inflight", 1, ttl_s=60)
        await state.incr("inflight", -1, ttl_s=60)
    assert len(state._heap) == 1
    clock.now += 61
    await state.incr("other")
    assert await state.get_int("inflight") == 0 and state.status()["keys"] == 1


async def test_windows_follow_the_given_clock_and_are_swept():
    clock = FakeClock()
    state = MemoryState(clock=clock)
    assert await state.window_add("rpm", 3, 60, limit=3) == (True, 3)
    clock.now = 1019.999  # still floor(now / 60) == 16
    assert await state.window_add("rpm", 1, 60, limit=3) == (False, 3)
    clock.now = 1020.0
    assert await state.window_add("rpm", 1, 60, limit=3) == (True, 1)
    clock.now += 3600
    await state.incr("other")
    assert state.status()["keys"] == 1


async def test_cache_is_lru_bounded_by_entries():
    state = MemoryState(cache_max_entries=3)
    for key in "abc":
        await state.bytes_set(key, key.encode(), 60)
    assert await state.bytes_get("a") == b"a"  # a is now the most recently used
    await state.bytes_set("d", b"d", 60)
    assert [await state.bytes_get(k) for k in "abcd"] == [b"a", None, b"c", b"d"]
    assert state.status()["cache_entries"] == 3


async def test_cache_is_lru_bounded_by_bytes():
    state = MemoryState(cache_max_bytes=10)
    await state.bytes_set("a", b"1234", 60)
    await state.bytes_set("b", b"1234", 60)
    await state.bytes_set("c", b"1234", 60)
    assert await state.bytes_get("a") is None and await state.bytes_get("c") == b"1234"
    assert state.status()["cache_bytes"] == 8
    await state.bytes_set("huge", b"x" * 11, 60)  # larger than the whole cache: not kept
    assert await state.bytes_get("huge") is None
    await state.bytes_set("b", b"123456", 60)  # replacing counts the new size only
    assert state.status()["cache_bytes"] == 10


async def test_cache_entries_expire_on_the_clock():
    clock = FakeClock()
    state = MemoryState(clock=clock)
    await state.bytes_set("q", b"answer", 30)
    assert await state.ttl("q") == 30
    clock.now += 30
    assert await state.bytes_get("q") is None
    assert state.status()["cache_bytes"] == 0
