"""``MemoryState``: the shared state interface for one process.

asyncio-safe because no method awaits anything: each read-modify-write runs to its end before any
other task runs. Times come from a monotonic clock (``time.monotonic`` unless one is given), so a
wall-clock jump moves no window and expires no cooldown. Expired keys are dropped when read and by a
sweep that every write runs over a heap of expiry times (cheap: one comparison when nothing is due,
at most ``SWEEP_BATCH`` keys per write), so memory stays bounded by what is alive. Cache bytes live
apart, in an LRU bounded by entries and by bytes.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.shared_state import budget as rule
from gateway.shared_state.base import LATENCY_SAMPLES, Backend, SharedState

SWEEP_BATCH = 256
# A window's counter outlives its window by this much, so a read right at the boundary still finds it.
WINDOW_SLACK_S = 1.0
CACHE_MAX_ENTRIES = 10_000
CACHE_MAX_BYTES = 64 * 1024 * 1024


def window_index(now: float, window_s: float) -> int:
    """The fixed window that ``now`` falls in: ``floor(now / window_s)``."""
    if window_s <= 0:
        raise ValueError(f"window_s must be positive, got {window_s!r}")
    return math.floor(now / window_s)


def window_key(key: str, index: int) -> str:
    """Where the total of ``key`` in window ``index`` lives (the same name in Redis)."""
    return f"{key}:{index}"


@dataclass(slots=True)
class _Entry:
    value: Any  # int (counter, window), str (set_until) or deque[float] (latency series)
    expires_at: float | None = None
    heap_at: float | None = None  # the expiry time this entry has a node for in the heap


class MemoryState(SharedState):
    """Shared state in this process's memory. See the module docstring."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 latency_samples: int = LATENCY_SAMPLES, cache_max_entries: int = CACHE_MAX_ENTRIES,
                 cache_max_bytes: int = CACHE_MAX_BYTES) -> None:
        self._clock = clock
        self._latency_samples = latency_samples
        self._cache_max_entries = cache_max_entries
        self._cache_max_bytes = cache_max_bytes
        self._data: dict[str, _Entry] = {}
        self._heap: list[tuple[float, str]] = []
        self._bytes: OrderedDict[str, tuple[bytes, float]] = OrderedDict()
        self._bytes_total = 0

    # ---- health ---------------------------------------------------------------------------------

    @property
    def backend(self) -> Backend:
        return "memory"

    def status(self) -> dict[str, Any]:
        return {"backend": "memory", "degraded": False, "keys": len(self._data),
                "cache_entries": len(self._bytes), "cache_bytes": self._bytes_total}

    # ---- internals ------------------------------------------------------------------------------

    def _live(self, key: str, now: float) -> _Entry | None:
        entry = self._data.get(key)
        if entry is not None and entry.expires_at is not None and entry.expires_at <= now:
            del self._data[key]
            return None
        return entry

    def _expire_at(self, key: str, entry: _Entry, expires_at: float) -> None:
        entry.expires_at = expires_at
        # A later expiry reuses the node already in the heap (the sweep re-pushes it when it comes
        # due); an earlier one, or a first one, needs its own node.
        if entry.heap_at is None or expires_at < entry.heap_at:
            entry.heap_at = expires_at
            heapq.heappush(self._heap, (expires_at, key))

    def _sweep(self, now: float) -> None:
        heap = self._heap
        for _ in range(SWEEP_BATCH):
            if not heap or heap[0][0] > now:
                return
            at, key = heapq.heappop(heap)
            entry = self._data.get(key)
            if entry is None or entry.heap_at != at:
                continue  # deleted, or another node stands for this entry now
            if entry.expires_at is None:
                entry.heap_at = None
            elif entry.expires_at <= now:
                del self._data[key]
            else:
                entry.heap_at = entry.expires_at
                heapq.heappush(heap, (entry.expires_at, key))

    def _write(self) -> float:
        now = self._clock()
        self._sweep(now)
        return now

    def _int_at(self, key: str, now: float) -> int:
        entry = self._live(key, now)
        if entry is None:
            return 0
        if not isinstance(entry.value, int):
            raise TypeError(f"shared state key {key!r} does not hold a counter")
        return entry.value

    # ---- counters -------------------------------------------------------------------------------

    async def incr(self, key: str, delta: int = 1, ttl_s: float | None = None) -> int:
        now = self._write()
        entry = self._live(key, now)
        if entry is None:
            entry = self._data[key] = _Entry(0)
        elif not isinstance(entry.value, int):
            raise TypeError(f"shared state key {key!r} does not hold a counter")
        entry.value += delta
        if ttl_s is not None:
            self._expire_at(key, entry, now + ttl_s)
        return entry.value

    async def get_int(self, key: str) -> int:
        return self._int_at(key, self._clock())

    async def get_ints(self, keys: Sequence[str]) -> list[int]:
        now = self._clock()
        return [self._int_at(key, now) for key in keys]

    # ---- fixed windows --------------------------------------------------------------------------

    async def window_add(self, key: str, amount: int, window_s: float,
                         limit: int | None = None) -> tuple[bool, int]:
        now = self._write()
        index = window_index(now, window_s)
        name = window_key(key, index)
        entry = self._live(name, now)
        current = entry.value if entry is not None else 0
        if limit is not None and amount > 0 and current + amount > limit:
            return False, current
        total = max(0, current + amount)
        if entry is None:
            entry = self._data[name] = _Entry(total)
            self._expire_at(name, entry, (index + 1) * window_s + WINDOW_SLACK_S)
        else:
            entry.value = total
        return True, total

    async def window_get(self, key: str, window_s: float) -> int:
        return (await self.window_get_many([key], window_s))[0]

    async def window_get_many(self, keys: Sequence[str], window_s: float) -> list[int]:
        now = self._clock()
        index = window_index(now, window_s)
        return [self._int_at(window_key(key, index), now) for key in keys]

    # ---- budget reservations --------------------------------------------------------------------

    def _set_window_int(self, name: str, value: int, index: int, window_s: float, now: float) -> None:
        entry = self._live(name, now)
        if entry is None:
            entry = self._data[name] = _Entry(value)
            self._expire_at(name, entry, (index + 1) * window_s + WINDOW_SLACK_S)
        else:
            entry.value = value

    def _held(self, held_key: str, turn: _Entry | None, now: float) -> int:
        """What requests in flight hold: the held counter and what the turn holds."""
        return self._int_at(held_key, now) + rule.turn_amount(None if turn is None else turn.value)

    async def budget_reserve(self, key: str, window_s: float, budget: int, worst: int | None, seed: int,
                             token: str, turn_ttl_s: float) -> rule.BudgetView:
        now = self._write()
        index = window_index(now, window_s)
        spent_key, held_key, turn_key = rule.names(key, index)
        if self._live(spent_key, now) is None:
            self._set_window_int(spent_key, max(0, seed), index, window_s, now)
        turn = self._live(turn_key, now)
        spent, held = self._int_at(spent_key, now), self._held(held_key, turn, now)
        verdict, amount = rule.decide(budget, worst, spent, held, turn is None)
        if verdict == rule.TURN:
            entry = self._data[turn_key] = _Entry(rule.turn_value(amount, token))
            self._expire_at(turn_key, entry, now + turn_ttl_s)
        elif amount > 0:
            self._set_window_int(held_key, self._int_at(held_key, now) + amount, index, window_s, now)
        return rule.BudgetView(verdict, amount, spent, held)

    async def budget_settle(self, key: str, window_s: float, held: int, cost: int,
                            token: str | None) -> tuple[int, int]:
        now = self._write()
        index = window_index(now, window_s)
        spent_key, held_key, turn_key = rule.names(key, index)
        turn = self._live(turn_key, now)
        if token is None:
            self._set_window_int(held_key, max(0, self._int_at(held_key, now) - held), index, window_s, now)
        elif turn is not None and rule.turn_token(turn.value) == token:
            del self._data[turn_key]
            turn = None
        spent = self._int_at(spent_key, now)
        if cost and self._live(spent_key, now) is not None:
            spent = max(0, spent + cost)
            self._set_window_int(spent_key, spent, index, window_s, now)
        return spent, self._held(held_key, turn, now)

    async def spend_add(self, key: str, window_s: float, amount: int, seed: int) -> int:
        now = self._write()
        index = window_index(now, window_s)
        spent_key = rule.names(key, index)[0]
        spent = self._int_at(spent_key, now) if self._live(spent_key, now) is not None else max(0, seed)
        self._set_window_int(spent_key, max(0, spent + amount), index, window_s, now)
        return max(0, spent + amount)

    async def budget_get(self, key: str, window_s: float) -> tuple[int, int]:
        now = self._clock()
        spent_key, held_key, turn_key = rule.names(key, window_index(now, window_s))
        turn = self._live(turn_key, now)
        return self._int_at(spent_key, now), self._held(held_key, turn, now)

    # ---- strings with a ttl ---------------------------------------------------------------------

    async def set_until(self, key: str, value: str, ttl_s: float) -> None:
        now = self._write()
        self._bytes_pop(key)
        if ttl_s <= 0:
            self._data.pop(key, None)
            return
        entry = self._data[key] = _Entry(value)
        self._expire_at(key, entry, now + ttl_s)

    def _str_at(self, key: str, now: float) -> str | None:
        entry = self._live(key, now)
        if entry is None:
            return None
        if isinstance(entry.value, (str, int)):
            return str(entry.value)
        raise TypeError(f"shared state key {key!r} does not hold a string")

    async def get(self, key: str) -> str | None:
        return self._str_at(key, self._clock())

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        now = self._clock()
        return [self._str_at(key, now) for key in keys]

    async def ttl(self, key: str) -> float | None:
        now = self._clock()
        entry = self._live(key, now)
        if entry is not None:
            return math.inf if entry.expires_at is None else entry.expires_at - now
        cached = self._bytes_live(key, now)
        return None if cached is None else cached[1] - now

    async def delete(self, key: str) -> None:
        self._data.pop(key, None)
        self._bytes_pop(key)

    # ---- latency --------------------------------------------------------------------------------

    async def record_latency(self, key: str, ms: float, ttl_s: float) -> None:
        now = self._write()
        entry = self._live(key, now)
        if entry is None:
            entry = self._data[key] = _Entry(deque(maxlen=self._latency_samples))
        elif not isinstance(entry.value, deque):
            raise TypeError(f"shared state key {key!r} does not hold a latency series")
        entry.value.append(float(ms))
        self._expire_at(key, entry, now + ttl_s)

    async def latency(self, keys: Sequence[str]) -> list[float | None]:
        now = self._clock()
        means: list[float | None] = []
        for key in keys:
            entry = self._live(key, now)
            samples = entry.value if entry is not None and isinstance(entry.value, deque) else None
            means.append(sum(samples) / len(samples) if samples else None)
        return means

    # ---- cache bytes (LRU) ----------------------------------------------------------------------

    def _bytes_pop(self, key: str) -> None:
        old = self._bytes.pop(key, None)
        if old is not None:
            self._bytes_total -= len(old[0])

    def _bytes_live(self, key: str, now: float) -> tuple[bytes, float] | None:
        item = self._bytes.get(key)
        if item is not None and item[1] <= now:
            self._bytes_pop(key)
            return None
        return item

    async def bytes_get(self, key: str) -> bytes | None:
        item = self._bytes_live(key, self._clock())
        if item is None:
            return None
        self._bytes.move_to_end(key)
        return item[0]

    async def bytes_get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        now = self._clock()
        out: list[bytes | None] = []
        for key in keys:
            item = self._bytes_live(key, now)
            if item is None:
                out.append(None)
            else:
                self._bytes.move_to_end(key)
                out.append(item[0])
        return out

    async def bytes_set_many(self, items: Sequence[tuple[str, bytes, float]]) -> None:
        for key, value, ttl_s in items:
            await self.bytes_set(key, value, ttl_s)  # a ttl of 0 or less drops the key

    async def bytes_set(self, key: str, value: bytes, ttl_s: float) -> None:
        now = self._write()
        self._bytes_pop(key)
        self._data.pop(key, None)
        if ttl_s <= 0 or len(value) > self._cache_max_bytes or self._cache_max_entries <= 0:
            return
        self._bytes[key] = (bytes(value), now + ttl_s)
        self._bytes_total += len(value)
        while len(self._bytes) > self._cache_max_entries or self._bytes_total > self._cache_max_bytes:
            _, (old, _) = self._bytes.popitem(last=False)
            self._bytes_total -= len(old)

    # ---- lifecycle ------------------------------------------------------------------------------

    async def close(self) -> None:
        self._data.clear()
        self._heap.clear()
        self._bytes.clear()
        self._bytes_total = 0
