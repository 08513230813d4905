"""Admission benchmark: what ``admit`` + ``settle`` cost one request, in memory and on Redis.

    python -m bench.admission [--calls 3000] [--warmup 300] [--redis-url redis://127.0.0.1:6379/0]
                              [--no-write]

One process, one request at a time (concurrency 1), so each figure is one request's own cost: an
``admit`` and its ``settle`` (the true tokens and cost), timed together. Identities: a key with an
rpm limit and a budget (two checks: one ``window_add`` for the minute, one for the budget; settle
moves the budget from the worst case to the true cost); a key in a team, both with rpm, tpm,
max_parallel_requests and a budget (eight checks; settle moves tokens and cost for both and frees
both slots); the master key (no limits: no state call). Backends: the memory state, and
``FailoverState(RedisState, MemoryState)`` over the Redis at ``--redis-url`` (what the gateway runs
with Redis configured). Limits are high enough never to refuse. Keys go under a random prefix and
are deleted at the end. Prints a table and rewrites the "Admission" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import redis
import redis.asyncio as aioredis

from bench.docs_section import machine_env, replace_section
from bench.shared_state import Case as Timing  # a label and its latencies, with percentiles
from bench.shared_state import redis_state
from gateway.admission.admission import Admission
from gateway.auth.records import Identity, Limits
from gateway.shared_state import FailoverState, MemoryState, SharedState

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Admission"
REDIS_URL = "redis://127.0.0.1:6379/0"
HIGH = 10**12
WORST_USD, TRUE_USD = 0.002, 0.0007


@dataclass
class Results:
    cases: list[Timing]
    env: dict


def identities() -> list[tuple[str, Identity]]:
    run = uuid.uuid4().hex
    everything = Limits(rpm_limit=HIGH, tpm_limit=HIGH, max_parallel_requests=HIGH, max_budget=float(HIGH))
    return [
        ("key: rpm + budget", Identity(key_hash=f"rpm-budget-{run}", key_alias="bench",
                                       key_limits=Limits(rpm_limit=HIGH, max_budget=float(HIGH), spend=1.0))),
        ("key + team: rpm, tpm, parallel, budget", Identity(
            key_hash=f"all-{run}", key_alias="bench-all", key_limits=everything, team_id=f"team-{run}",
            team_alias="bench-team", team_limits=everything)),
        ("master key (unlimited)", Identity.master("m" * 64)),
    ]


async def measure(backend: str, admission: Admission, n: int, warmup: int) -> list[Timing]:
    cases = []
    clock = time.perf_counter_ns
    for name, who in identities():
        case = Timing(backend, name)
        for i in range(warmup + n):
            start = clock()
            ticket = await admission.admit(who, estimated_tokens=800, worst_cost_usd=WORST_USD)
            await admission.settle(ticket, tokens=812, cost_usd=TRUE_USD)
            if i >= warmup:
                case.latencies_us.append((clock() - start) / 1000)
        cases.append(case)
    return cases


async def run_async(n: int, warmup: int, redis_url: str, timeout_s: float | None = None) -> Results:
    prefix = f"bench:admission:{uuid.uuid4().hex}:"
    env = machine_env(redis_py=redis.__version__, calls=n, warmup=warmup)
    cases: list[Timing] = []
    memory = MemoryState()
    cases += await measure("memory", Admission(memory, prefix=prefix), n, warmup)
    await memory.close()
    plain = redis_state(redis_url, timeout_s)
    shared: SharedState = FailoverState(redis_state(redis_url, timeout_s), MemoryState())
    try:
        admin = aioredis.Redis.from_url(redis_url)
        try:
            env["redis_server"] = (await admin.info("server")).get("redis_version", "?")
        finally:
            await admin.aclose()
        admission = Admission(shared, prefix=prefix)
        cases += await measure("failover over redis", admission, n, warmup)
        env["degraded"] = admission.status()["degraded"]
    finally:
        await plain.delete_prefix(prefix)
        await plain.close()
        await shared.close()
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
        f"`python -m bench.admission` ({env['calls']:,} requests per identity and backend, one at a time, each "
        f"after {env['warmup']} unrecorded ones; {env['python']}, {env['cpus']} CPUs ({env['machine']}), "
        f"redis-py {env['redis_py']}, redis-server {env['redis_server']} on 127.0.0.1, {env['date']}; load "
        f"average {load1:.2f} (1 min) / {load5:.2f} (5 min) at the start). One figure is `admit` and its "
        "`settle` together (the true tokens and cost). *key: rpm + budget* is two checks (the minute's "
        "`window_add`, the budget's `window_add` against what is left) and one settle write (the budget, "
        "from the worst case to the true cost); *key + team* is eight checks (rpm, tpm, parallel slot, "
        "budget for each) and six settle writes; the master key makes no state call. *failover over redis* "
        "is `FailoverState(RedisState, MemoryState)`, what the gateway runs with Redis configured"
        + (" (it was degraded during the run: its rows are memory)" if env.get("degraded") else "")
        + ": a request's checks go to Redis together, in one round trip (see Shared state for the cost of "
        "one call). Client and Redis "
        "share the machine's cores; absolute figures move with its load."
    )
    rows = ["| identity | " + " | ".join(f"{b}: p50 / p99 µs" for b in backends) + " |",
            "|---|" + "---:|" * len(backends)]
    for name in names:
        timings = [by[(backend, name)] for backend in backends]
        rows.append(f"| {name} | " + " | ".join(f"{t.percentile(50):,.1f} / {t.percentile(99):,.1f}"
                                                for t in timings) + " |")
    return "\n".join([SECTION, "", method, "", *rows, ""])


def write_section(text: str, doc: Path | None = None) -> None:
    """Replace the "Admission" section of ``doc`` (append it when absent); keep the rest."""
    replace_section(doc or DOC, SECTION, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3000, help="recorded requests per identity and backend")
    parser.add_argument("--warmup", type=int, default=300, help="unrecorded requests before each case")
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
