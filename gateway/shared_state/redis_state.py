"""``RedisState``: the shared state interface on one Redis, for several processes or machines.

One ``redis.asyncio`` client on one bounded connection pool. The commands issued in one turn of the
event loop (a request's admission checks, and those of every other request at that moment) go to
Redis as one pipeline (``redis_batch.CommandBatch``). Every read-modify-write is one Lua script, sent
as ``EVALSHA`` (loaded again when a restarted Redis has lost it): ``incr`` with a ttl,
``window_add`` (the check against the limit and the add are one atomic step) and
``record_latency``. The many-key reads are one command each: ``MGET`` for ``get_many``/``get_ints``,
one script for ``window_get_many``, an ``LRANGE`` a key for ``latency`` (in one batch). Fixed
windows take the Redis server's clock (``TIME``), so every process agrees on the window whatever
its own clock says.

Timeouts are short (0.25 s to connect, 0.25 s for a call's answer, unless told otherwise), redis-py's own
retries are off, at most ``max_connections`` calls run at once and a call waits at most
``pool_timeout_s`` for its turn, so a dead Redis answers with an error quickly instead of stalling
the request; ``FailoverState`` turns that error into memory service. A deadline that passes while
this process itself was stalled (the event loop busy, the GIL in another thread) does not count
(``_Deadline``), so a busy gateway does not take its own stall for a Redis outage. ``RedisState`` itself raises
(``REDIS_ERRORS``). Standalone Redis only (window keys are derived inside the scripts, which
Redis Cluster would refuse). Needs Redis 5 or later (``TIME`` before a write in a script).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from gateway.shared_state.base import LATENCY_SAMPLES, Backend, SharedState
from gateway.shared_state.budget import BudgetView
from gateway.shared_state.memory import WINDOW_SLACK_S
from gateway.shared_state.redis_batch import CommandBatch, Script

try:  # redis-py 7.1 and later read the package metadata for each new connection unless told
    from redis.driver_info import DriverInfo

    _DRIVER_INFO: dict[str, Any] = {"driver_info": DriverInfo(lib_version=redis.__version__)}
except ImportError:  # earlier ones read it once
    _DRIVER_INFO = {}

# What a Redis call raises when Redis is unreachable, slow or refusing: redis-py's errors, and the
# OS-level ones (TimeoutError is an OSError) that may escape it.
REDIS_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError)

CONNECT_TIMEOUT_S = 0.25
SOCKET_TIMEOUT_S = 0.25
MAX_CONNECTIONS = 64
POOL_TIMEOUT_S = 0.5

_INCR_TTL = Script("""
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return value
""")

# KEYS[1] key; ARGV amount, window_s, limit ('' for none), slack_s. Returns {allowed 0/1, total}.
_WINDOW_ADD = Script("""
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local window = tonumber(ARGV[2])
local index = math.floor(now / window)
local name = KEYS[1] .. ':' .. string.format('%d', index)
local amount = tonumber(ARGV[1])
local current = tonumber(redis.call('GET', name) or '0')
if ARGV[3] ~= '' and amount > 0 and current + amount > tonumber(ARGV[3]) then
  return {0, current}
end
local total = current + amount
if total < 0 then total = 0 end
local ttl_ms = math.ceil(((index + 1) * window - now + tonumber(ARGV[4])) * 1000)
redis.call('SET', name, string.format('%d', total), 'PX', string.format('%d', ttl_ms))
return {1, total}
""")

# KEYS the keys; ARGV[1] window_s. Returns the current window's totals.
_WINDOW_GET_MANY = Script("""
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local suffix = ':' .. string.format('%d', math.floor(now / tonumber(ARGV[1])))
local totals = {}
for i, key in ipairs(KEYS) do
  totals[i] = tonumber(redis.call('GET', key .. suffix) or '0')
end
return totals
""")

# The budget period's keys and their ttl, as gateway/shared_state/budget.py names them (ARGV[1] window_s,
# ARGV[2] slack_s); the decision is budget.decide's.
_BUDGET_KEYS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local window = tonumber(ARGV[1])
local index = math.floor(now / window)
local suffix = ':' .. string.format('%d', index)
local spent_key, held_key, turn_key = KEYS[1] .. ':spent' .. suffix, KEYS[1] .. ':held' .. suffix, KEYS[1] .. ':turn'
local ttl_ms = string.format('%d', math.ceil(((index + 1) * window - now + tonumber(ARGV[2])) * 1000))
local turn = redis.call('GET', turn_key)
local function turn_amount()
  if not turn then return 0 end
  return tonumber(string.match(turn, '^(%d+):'))
end
"""

# ARGV window_s, slack_s, budget, worst ('' unknown), seed, token, turn ttl ms.
# Returns {verdict, amount, spent, held}.
_BUDGET_RESERVE = Script(_BUDGET_KEYS + """
local spent = redis.call('GET', spent_key)
if spent then
  spent = tonumber(spent)
else
  spent = tonumber(ARGV[5])
  redis.call('SET', spent_key, ARGV[5], 'PX', ttl_ms)
end
local counted = tonumber(redis.call('GET', held_key) or '0')
local held = counted + turn_amount()
local left = tonumber(ARGV[3]) - spent - held
local verdict, amount = 0, 0
if left > 0 and ARGV[4] ~= '' and tonumber(ARGV[4]) <= left then
  verdict, amount = 1, tonumber(ARGV[4])
  redis.call('SET', held_key, string.format('%d', counted + amount), 'PX', ttl_ms)
elseif left > 0 and not turn then
  verdict, amount = 2, left
  redis.call('SET', turn_key, string.format('%d', left) .. ':' .. ARGV[6], 'PX', ARGV[7])
elseif left > 0 or held > 0 then
  verdict = 3
end
return {verdict, amount, spent, held}
""")

# ARGV window_s, slack_s, held, cost, token ('' none). Returns {spent, held}.
_BUDGET_SETTLE = Script(_BUDGET_KEYS + """
local counted = tonumber(redis.call('GET', held_key) or '0')
if ARGV[5] == '' then
  counted = counted - tonumber(ARGV[3])
  if counted < 0 then counted = 0 end
  redis.call('SET', held_key, string.format('%d', counted), 'PX', ttl_ms)
elseif turn and string.sub(turn, -string.len(ARGV[5]) - 1) == ':' .. ARGV[5] then
  redis.call('DEL', turn_key)
  turn = false
end
local spent = redis.call('GET', spent_key)
if spent then
  spent = tonumber(spent) + tonumber(ARGV[4])
  if spent < 0 then spent = 0 end
  redis.call('SET', spent_key, string.format('%d', spent), 'PX', ttl_ms)
else
  spent = 0
end
return {spent, counted + turn_amount()}
""")

# ARGV window_s, slack_s, amount, seed. Returns the spent counter after it.
_SPEND_ADD = Script(_BUDGET_KEYS + """
local spent = tonumber(redis.call('GET', spent_key) or ARGV[4]) + tonumber(ARGV[3])
if spent < 0 then spent = 0 end
redis.call('SET', spent_key, string.format('%d', spent), 'PX', ttl_ms)
return spent
""")

# ARGV window_s, slack_s. Returns {spent, held}.
_BUDGET_GET = Script(_BUDGET_KEYS + """
return {tonumber(redis.call('GET', spent_key) or '0'), tonumber(redis.call('GET', held_key) or '0') + turn_amount()}
""")

# KEYS[1] key; ARGV sample ms, samples kept, ttl ms.
_RECORD_LATENCY = Script("""
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
""")


def _ms(ttl_s: float) -> int:
    return max(1, math.ceil(ttl_s * 1000))


def _window_arg(window_s: float) -> str:
    if window_s <= 0:
        raise ValueError(f"window_s must be positive, got {window_s!r}")
    return repr(float(window_s))


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for logs and readiness)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


class _Deadline:
    """``asyncio.timeout(period_s)``, except that a deadline passed while this process was held up does not count.

    When the check at the deadline runs more than half a period late, the event loop itself was
    stalled (busy with other work, or another thread held the GIL): Redis's answer may be sitting
    unread in the socket, so the call gets another period from then, up to ``MAX_PERIODS`` periods
    in all. When the loop is on time, a Redis that has not answered fails the call in one period.
    Without this, a busy gateway would take its own stall for a Redis outage and fail over.
    """

    MAX_PERIODS = 4

    def __init__(self, period_s: float) -> None:
        self._period_s = period_s
        self._timeout = asyncio.timeout(None)

    async def __aenter__(self) -> None:
        await self._timeout.__aenter__()
        self._loop = asyncio.get_running_loop()
        now = self._loop.time()
        self._due = now + self._period_s
        self._last = now + self._period_s * self.MAX_PERIODS
        self._check_handle = self._loop.call_at(self._due, self._check)

    async def __aexit__(self, *exc_info: Any) -> None:
        self._check_handle.cancel()
        await self._timeout.__aexit__(*exc_info)

    def _check(self) -> None:
        now = self._loop.time()
        if now - self._due > self._period_s / 2 and now < self._last:
            self._due = now + self._period_s
            self._check_handle = self._loop.call_at(self._due, self._check)
        else:
            self._timeout.reschedule(now)  # expires on the next turn of the loop


class _Slots:
    """At most ``size`` Redis calls at once; a call that waits longer than ``timeout_s`` for its turn fails.

    Taking a free slot does not yield to the event loop (an uncontended ``Semaphore``), so it costs
    next to nothing; only a wait for one is bounded by a deadline.
    """

    def __init__(self, size: int, timeout_s: float) -> None:
        self._semaphore = asyncio.Semaphore(size)
        self._timeout_s = timeout_s

    async def __aenter__(self) -> None:
        if not self._semaphore.locked():
            await self._semaphore.acquire()
            return
        try:
            async with _Deadline(self._timeout_s):
                await self._semaphore.acquire()
        except TimeoutError:
            raise RedisConnectionError(f"no free Redis connection within {self._timeout_s} s") from None

    async def __aexit__(self, *exc_info: object) -> None:
        self._semaphore.release()


class RedisState(SharedState):
    """Shared state on one Redis. See the module docstring."""

    def __init__(self, url: str, *, connect_timeout_s: float = CONNECT_TIMEOUT_S,
                 socket_timeout_s: float = SOCKET_TIMEOUT_S, max_connections: int = MAX_CONNECTIONS,
                 pool_timeout_s: float = POOL_TIMEOUT_S,
                 latency_samples: int = LATENCY_SAMPLES) -> None:
        self._url = url
        self._latency_samples = latency_samples
        # redis-py's BlockingConnectionPool costs about 70 us a call in its own waiting; the plain
        # pool does not wait, so the bound on connections (and on waiting for one) is _Slots.
        # The read/write timeout is one _Deadline around each call (_call): redis-py's own
        # socket_timeout wraps every send in asyncio.wait_for, a new task per command on 3.11.
        # A call cut off by it closes its connection (redis-py disconnects on any interruption).
        self._pool = aioredis.ConnectionPool.from_url(
            url, socket_connect_timeout=connect_timeout_s, socket_timeout=None,
            retry=Retry(NoBackoff(), 0), health_check_interval=0, **_DRIVER_INFO)
        self._timeout_s = socket_timeout_s
        self._slots = _Slots(max_connections, pool_timeout_s)
        self._redis = aioredis.Redis(connection_pool=self._pool)
        self._batch = CommandBatch(self._redis, self._call)  # one turn's commands, one pipeline

    # ---- health ---------------------------------------------------------------------------------

    @property
    def backend(self) -> Backend:
        return "redis"

    @property
    def url(self) -> str:
        """The Redis URL, password redacted."""
        return redact_url(self._url)

    def status(self) -> dict[str, Any]:
        return {"backend": "redis", "degraded": False, "url": self.url}

    async def ping(self) -> None:
        """One round trip to Redis; raises one of ``REDIS_ERRORS`` when it is unreachable."""
        await self._call(self._redis.ping)

    async def drop_idle_connections(self) -> None:
        """Close the pool's idle connections (after an outage they point at a Redis that is gone)."""
        await self._pool.disconnect(inuse_connections=False)

    async def delete_prefix(self, prefix: str) -> int:
        """Delete every key whose name starts with ``prefix`` (SCAN, then DEL); return how many.

        For tests, benchmarks and clean-ups, not for a request path: it walks the whole key space.
        """
        pattern = "".join("\\" + c if c in "*?[]\\" else c for c in prefix) + "*"
        keys = [key async for key in self._redis.scan_iter(match=pattern, count=1000)]
        for start in range(0, len(keys), 1000):
            await self._call(self._redis.delete, *keys[start:start + 1000])
        return len(keys)

    async def _cmd(self, *args: Any) -> Any:
        """One command, sent with the others of this turn of the loop (gateway/shared_state/redis_batch.py)."""
        return await self._batch.command(*args)

    async def _script(self, script: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
        return await self._batch.script(script, keys, args)

    async def _call(self, command: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
        """Run one Redis command (or script, or pipeline) in a connection slot."""
        async with self._slots:
            try:
                async with _Deadline(self._timeout_s):
                    return await command(*args, **kwargs)
            except TimeoutError:  # asyncio's; redis-py's own (connect) is a RedisError
                raise RedisTimeoutError(f"no answer from Redis within {self._timeout_s} s") from None

    # ---- counters -------------------------------------------------------------------------------

    async def incr(self, key: str, delta: int = 1, ttl_s: float | None = None) -> int:
        if ttl_s is None:
            return int(await self._cmd("INCRBY", key, delta))
        return int(await self._script(_INCR_TTL, [key], [int(delta), _ms(ttl_s)]))

    async def get_int(self, key: str) -> int:
        value = await self._cmd("GET", key)
        return int(value) if value is not None else 0

    async def get_ints(self, keys: Sequence[str]) -> list[int]:
        if not keys:
            return []
        return [int(v) if v is not None else 0 for v in await self._cmd("MGET", *keys)]

    # ---- fixed windows --------------------------------------------------------------------------

    async def window_add(self, key: str, amount: int, window_s: float,
                         limit: int | None = None) -> tuple[bool, int]:
        args = [int(amount), _window_arg(window_s), "" if limit is None else int(limit), WINDOW_SLACK_S]
        allowed, total = await self._script(_WINDOW_ADD, [key], args)
        return bool(allowed), int(total)

    async def window_get(self, key: str, window_s: float) -> int:
        return (await self.window_get_many([key], window_s))[0]

    async def window_get_many(self, keys: Sequence[str], window_s: float) -> list[int]:
        if not keys:
            return []
        totals = await self._script(_WINDOW_GET_MANY, keys, [_window_arg(window_s)])
        return [int(v) for v in totals]

    # ---- budget reservations --------------------------------------------------------------------

    async def budget_reserve(self, key: str, window_s: float, budget: int, worst: int | None, seed: int,
                             token: str, turn_ttl_s: float) -> BudgetView:
        args = [_window_arg(window_s), WINDOW_SLACK_S, int(budget), "" if worst is None else int(worst),
                max(0, int(seed)), token, _ms(turn_ttl_s)]
        verdict, amount, spent, held = await self._script(_BUDGET_RESERVE, [key], args)
        return BudgetView(int(verdict), int(amount), int(spent), int(held))

    async def budget_settle(self, key: str, window_s: float, held: int, cost: int,
                            token: str | None) -> tuple[int, int]:
        args = [_window_arg(window_s), WINDOW_SLACK_S, int(held), int(cost), token or ""]
        spent, left = await self._script(_BUDGET_SETTLE, [key], args)
        return int(spent), int(left)

    async def spend_add(self, key: str, window_s: float, amount: int, seed: int) -> int:
        args = [_window_arg(window_s), WINDOW_SLACK_S, int(amount), max(0, int(seed))]
        return int(await self._script(_SPEND_ADD, [key], args))

    async def budget_get(self, key: str, window_s: float) -> tuple[int, int]:
        spent, held = await self._script(_BUDGET_GET, [key], [_window_arg(window_s), WINDOW_SLACK_S])
        return int(spent), int(held)

    # ---- strings with a ttl ---------------------------------------------------------------------

    async def set_until(self, key: str, value: str, ttl_s: float) -> None:
        await self._set(key, value, ttl_s)

    async def _set(self, key: str, value: str | bytes, ttl_s: float) -> None:
        if ttl_s <= 0:
            await self._cmd("DEL", key)
        else:
            await self._cmd("SET", key, value, "PX", _ms(ttl_s))

    async def get(self, key: str) -> str | None:
        value = await self._cmd("GET", key)
        return value.decode() if value is not None else None

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        if not keys:
            return []
        return [v.decode() if v is not None else None for v in await self._cmd("MGET", *keys)]

    async def ttl(self, key: str) -> float | None:
        ms = await self._cmd("PTTL", key)
        if ms == -2:
            return None
        return math.inf if ms == -1 else ms / 1000

    async def delete(self, key: str) -> None:
        await self._cmd("DEL", key)

    # ---- latency --------------------------------------------------------------------------------

    async def record_latency(self, key: str, ms: float, ttl_s: float) -> None:
        await self._script(_RECORD_LATENCY, [key], [repr(float(ms)), self._latency_samples, _ms(ttl_s)])

    async def latency(self, keys: Sequence[str]) -> list[float | None]:
        if not keys:
            return []
        series = await asyncio.gather(*(self._cmd("LRANGE", key, 0, -1) for key in keys))
        return [sum(map(float, samples)) / len(samples) if samples else None for samples in series]

    # ---- cache bytes ----------------------------------------------------------------------------

    async def bytes_get(self, key: str) -> bytes | None:
        value: bytes | None = await self._cmd("GET", key)
        return value

    async def bytes_get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        if not keys:
            return []
        values: list[bytes | None] = await self._cmd("MGET", *keys)
        return values

    async def bytes_set(self, key: str, value: bytes, ttl_s: float) -> None:
        await self._set(key, value, ttl_s)

    async def bytes_set_many(self, items: Sequence[tuple[str, bytes, float]]) -> None:
        if not items:
            return
        await asyncio.gather(*(self._set(key, value, ttl_s) for key, value, ttl_s in items))  # one batch

    # ---- lifecycle ------------------------------------------------------------------------------

    async def close(self) -> None:
        await self._redis.aclose()
        await self._pool.disconnect()
