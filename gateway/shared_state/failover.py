"""``FailoverState``: Redis while it answers, this process's memory while it does not.

What the gateway uses when Redis is configured. Every call goes to the ``RedisState``; when one
fails (connection refused or reset, a timeout, any ``REDIS_ERRORS``), the state logs one warning,
marks itself degraded (``degraded``, ``status()`` for readiness), serves that call and every later
one from the ``MemoryState``, and a background task pings Redis every ``retry_after_s`` (1 s) until
it answers; then calls go to Redis again and one more line is logged. No Redis error reaches the
caller, and no call waits on a Redis that is known to be down.

What this means for the users of the state: while degraded, counters, windows and cooldowns are
this process's own (limits hold per process, not across them), and what was written to memory
stays behind when Redis comes back (a cooldown set during the outage is forgotten; an in-flight
``+1`` written to Redis before the outage and its ``-1`` written to memory during it leave Redis one
too high until the key's ttl, which is why in-flight counts take one). Each user decides its own
policy on ``degraded`` (fail open or closed); this class only keeps the calls answering.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from gateway.shared_state.base import Backend, SharedState
from gateway.shared_state.budget import BudgetView
from gateway.shared_state.memory import MemoryState
from gateway.shared_state.redis_state import REDIS_ERRORS, RedisState

log = logging.getLogger("gateway.shared_state")

RETRY_AFTER_S = 1.0

T = TypeVar("T")


class FailoverState(SharedState):
    """``redis_state`` first, ``memory_state`` while Redis is unreachable. See the module docstring."""

    def __init__(self, redis_state: RedisState, memory_state: MemoryState, *,
                 retry_after_s: float = RETRY_AFTER_S) -> None:
        self.redis = redis_state
        self.memory = memory_state
        self._retry_after_s = retry_after_s
        self._degraded = False
        self._degraded_at = 0.0
        self._error: str | None = None
        self._probe: asyncio.Task[None] | None = None
        self._closed = False

    # ---- health ---------------------------------------------------------------------------------

    @property
    def backend(self) -> Backend:
        return "redis"

    @property
    def degraded(self) -> bool:
        return self._degraded

    def status(self) -> dict[str, Any]:
        status = {**self.redis.status(), "degraded": self._degraded,
                  "serving": "memory" if self._degraded else "redis"}
        if self._degraded:
            status["error"] = self._error
            status["degraded_for_s"] = round(time.monotonic() - self._degraded_at, 1)
        return status

    async def check(self) -> bool:
        """Ping Redis now (at start-up, say); False, and degraded, when it does not answer."""
        if not self._degraded:
            try:
                await self.redis.ping()
            except REDIS_ERRORS as exc:
                self._fail(exc)
        return not self._degraded

    # ---- failing over and back ------------------------------------------------------------------

    def _fail(self, exc: BaseException) -> None:
        self._error = f"{type(exc).__name__}: {exc}"
        if self._degraded or self._closed:
            return
        self._degraded = True
        self._degraded_at = time.monotonic()
        log.warning("shared state: Redis at %s failed (%s); serving from this process's memory, "
                    "trying Redis again every %.1f s", self.redis.url, self._error,
                    self._retry_after_s)
        if self._probe is None or self._probe.done():
            self._probe = asyncio.get_running_loop().create_task(self._reconnect(),
                                                                 name="shared-state-reconnect")

    async def _reconnect(self) -> None:
        try:
            await self.redis.drop_idle_connections()
        except REDIS_ERRORS:
            pass
        while self._degraded and not self._closed:
            await asyncio.sleep(self._retry_after_s)
            try:
                await self.redis.ping()
            except REDIS_ERRORS as exc:
                self._error = f"{type(exc).__name__}: {exc}"
                continue
            self._degraded = False
            log.warning("shared state: Redis at %s answers again after %.1f s; serving from Redis",
                        self.redis.url, time.monotonic() - self._degraded_at)

    async def _call(self, op: Callable[[SharedState], Awaitable[T]]) -> T:
        if not self._degraded:
            try:
                return await op(self.redis)
            except REDIS_ERRORS as exc:
                self._fail(exc)
        return await op(self.memory)

    # ---- the interface, each call through _call --------------------------------------------------

    async def incr(self, key: str, delta: int = 1, ttl_s: float | None = None) -> int:
        return await self._call(lambda s: s.incr(key, delta, ttl_s))

    async def get_int(self, key: str) -> int:
        return await self._call(lambda s: s.get_int(key))

    async def get_ints(self, keys: Sequence[str]) -> list[int]:
        return await self._call(lambda s: s.get_ints(keys))

    async def window_add(self, key: str, amount: int, window_s: float,
                         limit: int | None = None) -> tuple[bool, int]:
        return await self._call(lambda s: s.window_add(key, amount, window_s, limit))

    async def window_get(self, key: str, window_s: float) -> int:
        return await self._call(lambda s: s.window_get(key, window_s))

    async def window_get_many(self, keys: Sequence[str], window_s: float) -> list[int]:
        return await self._call(lambda s: s.window_get_many(keys, window_s))

    async def budget_reserve(self, key: str, window_s: float, budget: int, worst: int | None, seed: int,
                             token: str, turn_ttl_s: float) -> BudgetView:
        return await self._call(lambda s: s.budget_reserve(key, window_s, budget, worst, seed, token, turn_ttl_s))

    async def budget_settle(self, key: str, window_s: float, held: int, cost: int,
                            token: str | None) -> tuple[int, int]:
        return await self._call(lambda s: s.budget_settle(key, window_s, held, cost, token))

    async def spend_add(self, key: str, window_s: float, amount: int, seed: int) -> int:
        return await self._call(lambda s: s.spend_add(key, window_s, amount, seed))

    async def budget_get(self, key: str, window_s: float) -> tuple[int, int]:
        return await self._call(lambda s: s.budget_get(key, window_s))

    async def set_until(self, key: str, value: str, ttl_s: float) -> None:
        await self._call(lambda s: s.set_until(key, value, ttl_s))

    async def get(self, key: str) -> str | None:
        return await self._call(lambda s: s.get(key))

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        return await self._call(lambda s: s.get_many(keys))

    async def ttl(self, key: str) -> float | None:
        return await self._call(lambda s: s.ttl(key))

    async def delete(self, key: str) -> None:
        await self._call(lambda s: s.delete(key))

    async def record_latency(self, key: str, ms: float, ttl_s: float) -> None:
        await self._call(lambda s: s.record_latency(key, ms, ttl_s))

    async def latency(self, keys: Sequence[str]) -> list[float | None]:
        return await self._call(lambda s: s.latency(keys))

    async def bytes_get(self, key: str) -> bytes | None:
        return await self._call(lambda s: s.bytes_get(key))

    async def bytes_set(self, key: str, value: bytes, ttl_s: float) -> None:
        await self._call(lambda s: s.bytes_set(key, value, ttl_s))

    async def bytes_get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return await self._call(lambda s: s.bytes_get_many(keys))

    async def bytes_set_many(self, items: Sequence[tuple[str, bytes, float]]) -> None:
        await self._call(lambda s: s.bytes_set_many(items))

    async def close(self) -> None:
        self._closed = True
        if self._probe is not None:
            self._probe.cancel()
            try:
                await self._probe
            except asyncio.CancelledError:
                pass
        try:
            await self.redis.close()
        except REDIS_ERRORS:
            pass
        await self.memory.close()
