"""The shared state interface: counters, windows, cooldowns, latency stats and cache bytes.

One small async interface that the router (in-flight counts, cooldowns, latency, failure counts),
the rate limits and budgets (fixed-window usage with an atomic check-and-add) and the answer cache
(bytes with a ttl) all use; none of them talks to Redis directly. Implementations:

- ``MemoryState`` (``gateway/shared_state/memory.py``): one process.
- ``RedisState`` (``gateway/shared_state/redis_state.py``): several processes or machines on one
  Redis; every read-modify-write is one Lua script.
- ``FailoverState`` (``gateway/shared_state/failover.py``): Redis, and memory while Redis is away;
  never raises a Redis error.

Keys are plain strings that callers namespace (``"router:cooldown:<deployment id>"``). One key holds
one kind of value: a counter (``incr``), a string (``set_until``), a latency series
(``record_latency``) or cache bytes (``bytes_set``). Window counters (``window_add``) live under
their own derived names (``<key>:<window index>``), so a window key never collides with a counter
of the same name. Times are seconds (floats are fine); latencies are milliseconds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Literal

from gateway.shared_state.budget import BudgetView

Backend = Literal["memory", "redis"]

# How many recent latency samples ``latency`` averages, unless an implementation is told otherwise.
LATENCY_SAMPLES = 10


class SharedState(ABC):
    """Async state shared by the router, the limits and the cache. See the module docstring."""

    # ---- health -----------------------------------------------------------------------------

    @property
    @abstractmethod
    def backend(self) -> Backend:
        """The configured backend: ``"memory"`` or ``"redis"`` (a ``FailoverState`` says ``"redis"``)."""

    @property
    def degraded(self) -> bool:
        """True while the configured backend is unreachable and a fallback serves instead."""
        return False

    def status(self) -> dict[str, Any]:
        """One small dict for readiness: ``{"backend": ..., "degraded": ..., ...}`` (never does I/O)."""
        return {"backend": self.backend, "degraded": self.degraded}

    # ---- counters (in-flight counts, plain totals) --------------------------------------------

    @abstractmethod
    async def incr(self, key: str, delta: int = 1, ttl_s: float | None = None) -> int:
        """Add ``delta`` (may be negative) to the counter ``key`` (missing = 0); return the new value.

        With ``ttl_s`` the key expires ``ttl_s`` after this call (every call refreshes it): a safety
        net so the in-flight counts of a process that crashed expire. Without it the ttl is left as
        it was. The counter is not clamped: a ``-1`` after the key expired gives ``-1``.
        """

    @abstractmethod
    async def get_int(self, key: str) -> int:
        """The counter ``key``; 0 when missing or expired."""

    @abstractmethod
    async def get_ints(self, keys: Sequence[str]) -> list[int]:
        """The counters ``keys`` in order (0 for a missing one), in one round trip."""

    # ---- fixed windows (usage per minute, rate limits, failure counts) --------------------------

    @abstractmethod
    async def window_add(self, key: str, amount: int, window_s: float,
                         limit: int | None = None) -> tuple[bool, int]:
        """Add ``amount`` to ``key``'s total in the current **fixed** window; return (allowed, total).

        The window is ``floor(now / window_s)``: all callers of one key share the same window, which
        starts afresh at 0 on each boundary (not a sliding window). With ``limit``, the add happens
        only if the total after it stays ``<= limit``; the check and the add are one atomic step
        (one Lua script in Redis), so concurrent callers never push the total past ``limit``. A
        refused add changes nothing and returns ``(False, current total)``. A negative ``amount``
        (giving back an unused reservation) is always allowed; a total never goes below 0.
        In Redis the clock is the Redis server's, so every process agrees on the window.
        """

    @abstractmethod
    async def window_get(self, key: str, window_s: float) -> int:
        """``key``'s total in the current fixed window of ``window_s``; 0 when nothing was added."""

    @abstractmethod
    async def window_get_many(self, keys: Sequence[str], window_s: float) -> list[int]:
        """The current window totals of ``keys`` in order, in one round trip."""

    async def fail_counter(self, key: str, window_s: float) -> int:
        """Count one failure in ``key``'s current fixed window; return the failures in it so far."""
        return (await self.window_add(key, 1, window_s))[1]

    # ---- budget reservations (gateway/shared_state/budget.py) ----------------------------------

    @abstractmethod
    async def budget_reserve(self, key: str, window_s: float, budget: int, worst: int | None, seed: int,
                             token: str, turn_ttl_s: float) -> BudgetView:
        """One request against the budget of ``key``'s period (the fixed window of ``window_s``), by the
        rule of ``budget.decide``, in one atomic step: the spent counter is first seeded with ``seed``
        when missing; the turn, when taken, holds ``token`` for ``turn_ttl_s``."""

    @abstractmethod
    async def budget_settle(self, key: str, window_s: float, held: int, cost: int,
                            token: str | None) -> tuple[int, int]:
        """A request's reservation given back and its ``cost`` added to the spent counter (left
        missing when it is missing: the next reserve seeds it): without ``token``, ``held`` leaves the
        held counter; with the ``token`` of a turn, that turn (and what it holds) is freed if it is
        still this one's. Returns (spent, held) after it, in one atomic step."""

    @abstractmethod
    async def spend_add(self, key: str, window_s: float, amount: int, seed: int) -> int:
        """Add ``amount`` to the spent counter of ``key``'s period (seeded with ``seed`` when missing,
        as ``budget_reserve`` seeds it); return the counter after it, in one atomic step."""

    @abstractmethod
    async def budget_get(self, key: str, window_s: float) -> tuple[int, int]:
        """(spent, held) of ``key``'s period now; 0 for a missing counter."""

    # ---- strings with a ttl (cooldowns) ---------------------------------------------------------

    @abstractmethod
    async def set_until(self, key: str, value: str, ttl_s: float) -> None:
        """Set ``key`` to ``value`` for ``ttl_s`` seconds (replacing any value and ttl)."""

    @abstractmethod
    async def get(self, key: str) -> str | None:
        """The string at ``key``; None when missing or expired. A counter reads as its digits."""

    @abstractmethod
    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        """The strings at ``keys`` in order (None for a missing one), in one round trip."""

    @abstractmethod
    async def ttl(self, key: str) -> float | None:
        """Seconds until ``key`` expires (when a cooldown lifts); None when missing, ``inf`` when it never expires."""

    @abstractmethod
    async def delete(self, key: str) -> None:
        """Remove ``key`` whatever it holds (no error when missing)."""

    # ---- latency stats (latency-based routing) --------------------------------------------------

    @abstractmethod
    async def record_latency(self, key: str, ms: float, ttl_s: float) -> None:
        """Add one latency sample (milliseconds) to ``key``'s series.

        The series keeps the most recent ``latency_samples`` samples (10 unless the implementation
        was given another number) and expires ``ttl_s`` after its latest sample.
        """

    @abstractmethod
    async def latency(self, keys: Sequence[str]) -> list[float | None]:
        """For each key, the mean of its recent samples (ms); None when it has none, in one round trip."""

    # ---- cache bytes ----------------------------------------------------------------------------

    @abstractmethod
    async def bytes_get(self, key: str) -> bytes | None:
        """The bytes at ``key``; None when missing, expired or evicted."""

    @abstractmethod
    async def bytes_set(self, key: str, value: bytes, ttl_s: float) -> None:
        """Store ``value`` at ``key`` for ``ttl_s`` seconds.

        A cache, not a store: ``MemoryState`` bounds entries and bytes (least recently used goes
        first) and Redis evicts by its own ``maxmemory`` policy, so a value may be gone early.
        """

    async def bytes_get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """The bytes at ``keys`` in order (None for a missing one), in one round trip (``MGET``)."""
        return [await self.bytes_get(key) for key in keys]

    async def bytes_set_many(self, items: Sequence[tuple[str, bytes, float]]) -> None:
        """Store each ``(key, value, ttl_s)`` as ``bytes_set`` does, in one round trip; a ttl of 0
        or less deletes the key instead."""
        for key, value, ttl_s in items:
            if ttl_s <= 0:
                await self.delete(key)
            else:
                await self.bytes_set(key, value, ttl_s)

    # ---- lifecycle ------------------------------------------------------------------------------

    @abstractmethod
    async def close(self) -> None:
        """Release connections and background tasks; the state is not used afterwards."""
