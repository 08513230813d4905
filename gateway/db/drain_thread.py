"""The spend outbox's drain on a thread of its own, with its own event loop and database engine.

    drainer = DrainThread(outbox, open_db)   # open_db: a coroutine function opening the database
    drainer.start()                          # drains every ``outbox.interval`` seconds from now on
    ...
    await drainer.close(timeout=5.0)         # from the request loop: last drain, files closed

Draining a batch is Python work: decoding the rows, SQLAlchemy's per-row binds, the roll-ups (about
30 µs a row, ``python -m bench.outbox``). On the request loop each drain held every request that
arrived meanwhile (at 600 requests a second, ~150 rows every 0.25 s: several milliseconds of
stall, the gateway's p95). On this thread the request loop only waits for the GIL, and
``GIL_SWITCH_S`` bounds that wait: the interpreter makes the drain hand the GIL over within half a
millisecond of the request loop asking for it (the default interval is 5 ms). The CPU the drain
costs is the same; it no longer lands on one request's latency.

The thread opens its own engine on its own loop (an async engine's pool belongs to one loop); the
request loop keeps its own for the admin API and key lookups. Appends stay on the request path
(``SpendOutbox.append`` is thread-safe); the outbox is drained and closed on this thread only.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Awaitable, Callable

from gateway.db.engine import Database
from gateway.db.outbox import SpendOutbox

log = logging.getLogger("gateway.db.outbox")

GIL_SWITCH_S = 0.0005
RECONNECT_S = 5.0


class DrainThread:
    """See the module docstring."""

    def __init__(self, outbox: SpendOutbox, open_db: Callable[[], Awaitable[Database]]) -> None:
        self.outbox = outbox
        self._open_db = open_db
        self._thread = threading.Thread(target=self._main, name="spend-outbox-drain", daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._close_timeout = 5.0

    def start(self) -> None:
        if sys.getswitchinterval() > GIL_SWITCH_S:
            sys.setswitchinterval(GIL_SWITCH_S)
        self._thread.start()
        self._ready.wait(5.0)

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        self._ready.set()
        db: Database | None = None
        while db is None and not self._stop.is_set():
            try:
                db = await self._open_db()
            except Exception as exc:  # noqa: BLE001 - the database's fault: the rows wait in the outbox
                log.warning("spend outbox: the drain cannot open the database (%s: %s); retrying in %.0f s",
                            type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "", RECONNECT_S)
                try:
                    await asyncio.wait_for(self._stop.wait(), RECONNECT_S)
                except TimeoutError:
                    pass
        drain = asyncio.ensure_future(self.outbox.drain_forever(db)) if db is not None else None
        await self._stop.wait()
        try:
            await self.outbox.close(db, timeout=self._close_timeout)  # the last drain; rows left stay on disk
        finally:
            if drain is not None:
                drain.cancel()
                await asyncio.gather(drain, return_exceptions=True)
            if db is not None:
                await db.close()

    async def close(self, timeout: float = 5.0) -> None:
        """Stop draining after one last drain (within ``timeout``) and close the outbox; from the request loop."""
        if not self._thread.is_alive() or self._loop is None or self._stop is None:
            return
        self._close_timeout = timeout
        self._loop.call_soon_threadsafe(self._stop.set)
        await asyncio.to_thread(self._thread.join, timeout + 5.0)
        if self._thread.is_alive():
            log.warning("spend outbox: the drain did not stop within %.0f s; its rows stay on disk", timeout + 5.0)
