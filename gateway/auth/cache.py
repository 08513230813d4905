"""A short in-process cache of key lookups, cleared everywhere when a key or team changes.

Each gateway process keeps what it looked up for ``ttl_s`` (1 s), least recently used first out past
``max_entries``; unknown keys are cached too, so a flood of made-up keys costs one query per key
and second, not one per request. A change (a key made, updated, blocked, regenerated or deleted, a
team changed) bumps the counter ``auth:version`` in the shared state (``SharedState.incr``; memory
for one process, Redis for several). Each process reads that counter at most every ``check_s``
(250 ms) on a lookup and drops its whole cache when it moved, so a blocked key stops working in
every process within ``check_s`` of the change, and within ``ttl_s`` even when the shared state is
unreachable.

A lookup that started before a change is never cached after it (a generation count), so an
in-flight request cannot bring a stale key back (LiteLLM #25553). Concurrent lookups of one key
share one load.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from gateway.shared_state import SharedState

log = logging.getLogger("gateway.auth")

VERSION_KEY = "auth:version"
TTL_S = 1.0
CHECK_S = 0.25
MAX_ENTRIES = 10_000

V = TypeVar("V")


class KeyCache(Generic[V]):
    """``get_or_load(key_hash, load)``: the cached value (None included) or ``await load()``."""

    def __init__(self, shared: SharedState | None, *, ttl_s: float = TTL_S, check_s: float = CHECK_S,
                 max_entries: int = MAX_ENTRIES, clock: Callable[[], float] = time.monotonic):
        self.shared = shared
        self.ttl_s = ttl_s
        self.check_s = check_s
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, V | None]] = OrderedDict()
        self._loading: dict[str, asyncio.Future[V | None]] = {}
        self._generation = 0  # bumped on every clear: loads begun before it are not cached
        self._version: int | None = None
        self._checked_at = float("-inf")

    def __len__(self) -> int:
        return len(self._entries)

    async def get_or_load(self, key_hash: str, load: Callable[[], Awaitable[V | None]]) -> V | None:
        await self._check_version()
        now = self._clock()
        entry = self._entries.get(key_hash)
        if entry is not None and entry[0] > now:
            self._entries.move_to_end(key_hash)
            return entry[1]
        pending = self._loading.get(key_hash)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[V | None] = asyncio.get_running_loop().create_future()
        self._loading[key_hash] = future
        generation = self._generation
        try:
            value = await load()
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody else waited
            raise
        finally:
            del self._loading[key_hash]
        future.set_result(value)
        if generation == self._generation:
            self._put(key_hash, value)
        return value

    def _put(self, key_hash: str, value: V | None) -> None:
        self._entries[key_hash] = (self._clock() + self.ttl_s, value)
        self._entries.move_to_end(key_hash)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry here (this process only); loads under way are not cached."""
        self._entries.clear()
        self._generation += 1

    async def changed(self) -> None:
        """A key or team changed: clear here, and bump ``auth:version`` so every process clears."""
        self.clear()
        if self.shared is None:
            return
        try:
            self._version = await self.shared.incr(VERSION_KEY)
            self._checked_at = self._clock()
        except Exception as exc:  # other processes still expire their entries within ttl_s
            log.warning("could not announce a key change in the shared state (%s); other processes "
                        "see it within %.0f s", type(exc).__name__, self.ttl_s)

    async def _check_version(self) -> None:
        if self.shared is None:
            return
        now = self._clock()
        if now - self._checked_at < self.check_s:
            return
        self._checked_at = now  # concurrent lookups in this instant use what is cached
        try:
            version = await self.shared.get_int(VERSION_KEY)
        except Exception:  # cannot tell whether anything changed: trust nothing cached
            self.clear()
            self._version = None
            return
        if version != self._version:
            if self._version is not None:
                self.clear()
            self._version = version
