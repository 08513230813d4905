"""Shared state benchmark: what one call of the state interface costs, in memory and on Redis.

    python -m bench.shared_state [--calls 3000] [--warmup 300] [--redis-url redis://127.0.0.1:6379/0]
                                 [--no-write]

One process, one call at a time (concurrency 1), so each figure is one call's own latency: the
three calls a routed request makes most, ``incr`` with a ttl (an in-flight count; a Lua script in
Redis), ``window_add`` with a limit (a rate-limit check-and-add; a Lua script) and ``get_many`` of 4
keys (the cooldowns of a model group; one ``MGET``), on ``MemoryState``, on ``RedisState`` against
the Redis at ``--redis-url`` (loopback) and on ``FailoverState`` over that Redis (what the gateway
runs with Redis configured). Keys go under a random prefix and are deleted at the end. Prints a
table and rewrites the "Shared state" section of docs/benchmarks.md (other sections are kept).
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis
import redis.asyncio as aioredis
from redis.asyncio.connection import parse_url

from bench.docs_section import machine_env, replace_section
from gateway.shared_state import FailoverState, MemoryState, RedisState, SharedState

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Shared state"
REDIS_URL = "redis://127.0.0.1:6379/0"
WINDOW_S = 60


@dataclass
class Case:
    backend: str
    call: str
    latencies_us: list[float] = field(default_factory=list)

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies_us)
        return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


@dataclass
class Results:
    cases: list[Case]
    env: dict


def calls(prefix: str) -> list[tuple[str, Callable[[SharedState], Awaitable[object]]]]:
    cooldowns = [f"{prefix}router:cooldown:dep-{i}" for i in range(4)]
    return [
        ("incr (ttl)", lambda s: s.incr(prefix + "router:inflight:dep-0", 1, ttl_s=60)),
        ("window_add (limit)", lambda s: s.window_add(prefix + "limits:rpm:key-0", 1, WINDOW_S, limit=10**12)),
        ("get_many (4 keys)", lambda s: s.get_many(cooldowns)),
    ]


async def measure(backend: str, state: SharedState, prefix: str, n: int, warmup: int) -> list[Case]:
    cases = []
    for name, call in calls(prefix):
        for _ in range(warmup):
            await call(state)
        case = Case(backend, name)
        clock = time.perf_counter_ns
        for _ in range(n):
            start = clock()
            await call(state)
            case.latencies_us.append((clock() - start) / 1000)
        cases.append(case)
    return cases


async def raw_round_trip_us(redis_url: str, n: int, warmup: int) -> float:
    """p50 of one ``PING`` written straight to the socket (asyncio streams, no client library)."""
    address = parse_url(redis_url)
    reader, writer = await asyncio.open_connection(address.get("host", "127.0.0.1"), address.get("port", 6379))
    if address.get("password"):
        raise SystemExit("the raw round trip is measured without AUTH: use a Redis without a password")
    latencies = []
    try:
        for i in range(warmup + n):
            start = time.perf_counter_ns()
            writer.write(b"*1\r\n$4\r\nPING\r\n")
            await reader.readuntil(b"\r\n")
            if i >= warmup:
                latencies.append((time.perf_counter_ns() - start) / 1000)
    finally:
        writer.close()
    return Case("raw", "PING", latencies).percentile(50)


def redis_state(url: str, timeout_s: float | None = None) -> RedisState:
    """A RedisState with the gateway's timeouts, or ``timeout_s`` for each of them (a bench's test on a
    loaded machine gives it the Redis tests' generous ones; the gateway's 0.25 s is for production)."""
    if timeout_s is None:
        return RedisState(url)
    return RedisState(url, connect_timeout_s=timeout_s, socket_timeout_s=timeout_s, pool_timeout_s=timeout_s)


async def run_async(n: int, warmup: int, redis_url: str, timeout_s: float | None = None) -> Results:
    prefix = f"bench:shared-state:{uuid.uuid4().hex}:"
    admin = aioredis.Redis.from_url(redis_url)
    try:
        server = await admin.info("server")
    finally:
        await admin.aclose()
    env = machine_env(redis_py=redis.__version__, redis_server=server.get("redis_version", "?"), calls=n,
                      warmup=warmup)
    env["raw_ping_p50_us"] = await raw_round_trip_us(redis_url, n, warmup)
    cases: list[Case] = []
    memory = MemoryState()
    cases += await measure("memory", memory, prefix, n, warmup)
    await memory.close()
    plain = redis_state(redis_url, timeout_s)
    failover = FailoverState(redis_state(redis_url, timeout_s), MemoryState())
    try:
        cases += await measure("redis", plain, prefix, n, warmup)
        cases += await measure("failover over redis", failover, prefix, n, warmup)
        env["failover_degraded"] = failover.degraded
    finally:
        await plain.delete_prefix(prefix)
        await plain.close()
        await failover.close()
    return Results(cases, env)


def run(n: int = 3000, warmup: int = 300, redis_url: str = REDIS_URL, timeout_s: float | None = None) -> Results:
    return asyncio.run(run_async(n, warmup, redis_url, timeout_s))


def section(results: Results) -> str:
    env = results.env
    load1, load5, _ = env["load_start"]
    by = {(c.backend, c.call): c for c in results.cases}
    backends = list(dict.fromkeys(c.backend for c in results.cases))
    names = list(dict.fromkeys(c.call for c in results.cases))
    method = (
        f"`python -m bench.shared_state` ({env['calls']:,} calls of each kind per backend, one at a time, each "
        f"after {env['warmup']} unrecorded ones; {env['python']}, {env['cpus']} CPUs ({env['machine']}), "
        f"redis-py {env['redis_py']}, redis-server {env['redis_server']} on 127.0.0.1, {env['date']}; load "
        f"average {load1:.2f} (1 min) / {load5:.2f} (5 min) at the start). `incr (ttl)` is an in-flight "
        "count (a Lua script in Redis), `window_add (limit)` a rate-limit check-and-add (a Lua script), "
        "`get_many (4 keys)` the cooldowns of a four-deployment group (one `MGET`). *failover over redis* is "
        "`FailoverState(RedisState, MemoryState)`, what the gateway runs with Redis configured"
        + ("" if not env.get("failover_degraded") else " (it was degraded during the run: its row is memory)")
        + ". For scale, a bare loopback round trip to the same Redis (`PING` written to the socket with "
        f"asyncio streams, no client library) takes {env['raw_ping_p50_us']:,.1f} µs p50: most of a Redis "
        "call's cost is the client library's own Python. Client and Redis share the machine's cores; "
        "absolute figures move with its load."
    )
    header = "| call | " + " | ".join(f"{b} p50 µs | {b} p99 µs" for b in backends) + " |"
    rule = "|---|" + "---:|---:|" * len(backends)
    rows = []
    for name in names:
        cells = []
        for backend in backends:
            case = by[(backend, name)]
            cells += [f"{case.percentile(50):,.1f}", f"{case.percentile(99):,.1f}"]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join([SECTION, "", method, "", header, rule, *rows, ""])


def write_section(text: str, doc: Path | None = None) -> None:
    """Replace the "Shared state" section of ``doc`` (append it when absent); keep the rest."""
    replace_section(doc or DOC, SECTION, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3000, help="recorded calls of each kind per backend")
    parser.add_argument("--warmup", type=int, default=300, help="unrecorded calls before each case")
    parser.add_argument("--redis-url", default=REDIS_URL)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    text = section(run(args.calls, args.warmup, args.redis_url))
    print(text)
    if not args.no_write:
        write_section(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
