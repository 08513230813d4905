"""Redis commands issued in one turn of the event loop, sent to Redis as one pipeline.

    batch = CommandBatch(redis, run)                   # run: the state's slot and deadline around a call
    value = await batch.command("GET", key)            # resolves when the batch's answers are read
    total = await batch.script(WINDOW_ADD, keys, args)  # EVALSHA, loading the script when Redis lacks it

A request's admission checks run at once (``asyncio.gather``), and at concurrency many requests reach
Redis in the same turn of the loop. Awaited one by one, redis-py sends each command on its own: a write,
a wait and a read, with its connection checkout and response parsing, about 70 µs of Python and two
system calls each. Here every command submitted before the loop turns is queued, and one task sends them
together on one connection (written at once, answers read in order; no MULTI, each command keeps
its own atomicity, a Lua script included) and hands each caller its own answer or its own error. A failure of the
connection fails every command of the batch, as it would have failed each of them. redis-py's pipeline
cannot do this by itself (it batches what one caller queues, costs more Python than a single command,
and its scripts cost a ``SCRIPT EXISTS`` round trip per execute), hence this small module on redis-py's
connections and parser. With hiredis installed (a dependency) redis-py reads answers with hiredis's C
parser, and the commands are packed by ``hiredis.pack_command``: redis-py's own packing (for asyncio) is
Python, a tenth of this module's time under load.

A script is sent as ``EVALSHA``; when Redis answers ``NOSCRIPT`` (a restarted or flushed Redis), the
batch loads the scripts that were missing and sends those commands once more.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis.exceptions import NoScriptError, ResponseError

MAX_BATCH = 512  # commands in one pipeline; a longer queue goes out as several


@dataclass(frozen=True)
class Script:
    source: str
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.source.encode()).hexdigest())


@dataclass
class _Pending:
    args: tuple[Any, ...]
    future: asyncio.Future[Any]
    script: Script | None = None


Runner = Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]


class CommandBatch:
    """The commands of one turn of the loop, as one pipeline. See the module docstring."""

    def __init__(self, redis: aioredis.Redis, run: Runner) -> None:
        self._redis = redis
        self._run = run  # e.g. RedisState's slot and deadline around one call
        self._queue: list[_Pending] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def command(self, *args: Any) -> asyncio.Future[Any]:
        return self._submit(_Pending(args, self._future()))

    def script(self, script: Script, keys: Sequence[str], args: Sequence[Any]) -> asyncio.Future[Any]:
        return self._submit(_Pending(("EVALSHA", script.sha, len(keys), *keys, *args), self._future(), script))

    def _future(self) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (tests): what was queued on the old one is gone with it
            self._loop, self._queue = loop, []
        return loop.create_future()

    def _submit(self, pending: _Pending) -> asyncio.Future[Any]:
        if not self._queue:
            assert self._loop is not None
            self._loop.call_soon(self._flush)
        self._queue.append(pending)
        return pending.future

    def _flush(self) -> None:
        queue, self._queue = self._queue, []
        assert self._loop is not None
        for start in range(0, len(queue), MAX_BATCH):
            task = self._loop.create_task(self._send(queue[start:start + MAX_BATCH]))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, batch: list[_Pending]) -> None:
        try:
            results = await self._run(lambda: self._execute(batch))
            missing = [(p, r) for p, r in zip(batch, results, strict=True)
                       if isinstance(r, NoScriptError) and p.script is not None]
            if missing:
                again = [p for p, _ in missing]
                scripts = {p.script.sha: p.script for p in again if p.script is not None}
                retried = await self._run(lambda: self._execute(again, load=list(scripts.values())))
                results = list(results)
                for (pending, _), result in zip(missing, retried, strict=True):
                    results[batch.index(pending)] = result
            for pending, result in zip(batch, results, strict=True):
                if pending.future.done():
                    continue  # its caller gave up (cancelled)
                if isinstance(result, BaseException):
                    pending.future.set_exception(result)
                else:
                    pending.future.set_result(result)
        except BaseException as exc:  # the connection failed (or the send was cancelled): every caller hears it
            for pending in batch:
                if not pending.future.done():
                    pending.future.set_exception(exc if isinstance(exc, Exception) else ConnectionError(str(exc)))
            if not isinstance(exc, Exception):
                raise

    async def _execute(self, batch: list[_Pending], load: Sequence[Script] = ()) -> list[Any]:
        """The commands written at once on one connection, their answers read in order (an error answer
        stays that command's); a broken connection is closed and raises."""
        commands = [("SCRIPT", "LOAD", script.source) for script in load] + [pending.args for pending in batch]
        pool = self._redis.connection_pool
        conn = await pool.get_connection()
        try:
            await conn.send_packed_command(b"".join(map(hiredis.pack_command, commands)), check_health=False)
            results: list[Any] = []
            for _ in commands:
                try:
                    results.append(await conn.read_response())
                except ResponseError as exc:
                    results.append(exc)
        except BaseException:
            await conn.disconnect()
            raise
        finally:
            await pool.release(conn)
        return results[len(load):]
