"""Answer cache benchmark: what a full hit costs beside today's no-cache path, and what a replayed
workload saves.

    python -m bench.cache [--requests 1000] [--tickets 40] [--workload 240] [--timeout 300] [--no-pin]
                          [--no-write]

Processes on 127.0.0.1: the zero-delay upstream (bench/zero_delay_upstream.py), three gateways
(``decisions-gateway --config <tmp> --workers 1``, ``jev`` = ``typesafe/jev-latest`` on that
upstream): without the cache, with ``litellm_settings.cache: true`` in memory, and with the cache in
Redis on loopback (``cache_params: {type: redis}``, its own namespace, deleted afterwards); and this
process as the load client (aiohttp, keep-alive). With two or more cores (and unless ``--no-pin``)
the gateways run on core 0, the upstream and the client on core 1.

Latency, at concurrency 1, ``--requests`` rounds; each round sends one request of every case in turn
(so all cases see the same moments of a noisy machine): the three-question System One body of
bench/gateway.py to the gateway without a cache (today's path), the same body as a full hit from
memory and from Redis, the same again with a new input each time (a miss: lookup, upstream call,
store) to the cache-less gateway and to both caches, and the same request straight to the upstream.
*Added by the cache* is a case's p50 minus the cache-less gateway's on the same kind of request.

Cost, on a replayed workload: ``--workload`` requests drawn (seeded) from ``--tickets`` inputs, each
asking a random non-empty subset of the three questions, sent twice through the memory cache (the
second time is the replay) and once through the cache-less gateway; the sums of
``x-decisions-response-cost`` (paid) and ``x-decisions-cost-saved`` per pass, and the upstream's
count of calls. Prints the tables and rewrites the "Cache" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from bench.docs_section import machine_env, replace_section
from bench.processes import free_port, log_tail, pinned_to, pinning, stop, this_process_on, wait_for_http, wait_for_port
from bench.zero_delay_upstream import S1_QUESTIONS, STATE

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Cache"
HOST = "127.0.0.1"
UPSTREAM_KEY = "bench-upstream-key"
REDIS_URL = os.environ.get("DECISIONS_GATEWAY_BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
GATEWAYS = ("off", "memory", "redis")
NO_STORE = {"Cache-Control": "no-store"}  # the request skips the cache: today's path, in the same process
# (case, gateway, kind, headers): kind "hit" repeats one body, "miss" sends a new input every time.
CASES: tuple[tuple[str, str, str, dict[str, str]], ...] = (
    ("gateway without a cache", "off", "hit", {}),
    ("memory gateway, no-store (today's path)", "memory", "hit", NO_STORE),
    ("memory gateway, full hit", "memory", "hit", {}),
    ("memory gateway, new input, no-store", "memory", "miss", NO_STORE),
    ("memory gateway, miss (lookup + upstream + store)", "memory", "miss", {}),
    ("Redis gateway, no-store (today's path)", "redis", "hit", NO_STORE),
    ("Redis gateway, full hit", "redis", "hit", {}),
    ("Redis gateway, new input, no-store", "redis", "miss", NO_STORE),
    ("Redis gateway, miss (lookup + upstream + store)", "redis", "miss", {}),
    ("upstream alone", "upstream", "hit", {}),
)
BUDGET_MS = {"memory": 0.3, "redis": 0.5}  # issue 11: what a full hit may add at p50


def body(model: str, state: str = STATE, questions: dict | None = None) -> bytes:
    return json.dumps({"model": model, "state": state, "questions": questions or S1_QUESTIONS}).encode()


def gateway_config(mode: str, upstream_base: str, namespace: str) -> dict:
    settings: dict = {"model_list": [{"model_name": "jev", "litellm_params": {
        "model": "typesafe/jev-latest", "api_key": UPSTREAM_KEY, "api_base": upstream_base, "timeout": 10}}]}
    if mode == "memory":
        settings["litellm_settings"] = {"cache": True, "cache_params": {"type": "local"}}
    elif mode == "redis":
        settings["litellm_settings"] = {"cache": True, "cache_params": {"type": "redis", "url": REDIS_URL,
                                                                        "namespace": namespace}}
    return settings


@dataclass
class Case:
    name: str
    target: str  # a gateway mode, or "upstream"
    kind: str  # "hit" or "miss"
    headers: dict[str, str] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""

    def p(self, q: float) -> float:
        return percentile(self.latencies, q)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * q / 100)) - 1]


@dataclass
class Pass:
    name: str
    requests: int = 0
    paid: float = 0.0
    saved: float = 0.0
    hits: int = 0
    misses: int = 0
    upstream_calls: int = 0
    errors: int = 0


@dataclass
class Results:
    cases: list[Case]
    passes: list[Pass]
    env: dict
    steps: dict[str, list[float]] = field(default_factory=dict)  # store -> microseconds of the steps per full hit


# ---- the cache's own steps, in this process ---------------------------------------------------------


async def step_costs(store_name: str, n: int, namespace: str) -> list[float]:
    """Microseconds that ``cache_lookup`` + ``cache_merge`` take for a full hit of the three-question body
    (the gateway's own steps over its own store), ``n`` times after a few unrecorded ones."""
    from gateway.cache import AnswerCache, cache_lookup, cache_merge, cache_settings_of
    from gateway.cache.store import AnswerStore
    from gateway.config.loader import build_config
    from gateway.config.registry import ModelRegistry
    from gateway.context import RequestContext
    from gateway.pipeline import Pipeline
    from translators import systemone as systemone_wire
    from translators.ir import Answer, DecisionResult, Usage

    config = build_config(gateway_config(store_name, "http://127.0.0.1:9", namespace), {}, source="<bench>")
    registry = ModelRegistry.from_config(config)
    cache = AnswerCache(cache_settings_of(config), AnswerStore.from_settings(cache_settings_of(config)))
    pipeline = Pipeline(registry, upstream=None)
    pipeline.cache = cache
    req = systemone_wire.parse_request(json.loads(body("jev", f"{STATE} (steps {uuid.uuid4().hex})")))

    def context() -> RequestContext:
        return RequestContext(request_id="bench", route="/v1/systemone", wire=systemone_wire, req=req,
                              model_group="jev")

    primed = context()
    await cache_lookup(pipeline, primed)
    primed.result = DecisionResult("jev-1.13-20260917", (
        Answer("refund", "yes_no", (0.91, 0.09)), Answer("tone", "choice", (0.1, 0.8, 0.1), 0.7),
        Answer("urgency", "score", (0.05, 0.15, 0.8), 0.625)), Usage(input_tokens=120, output_tokens=0))
    primed.tried, primed.cost = list(registry.group("jev")), 5.04e-6
    await cache_merge(pipeline, primed)
    out = []
    try:
        for i in range(n + 20):
            ctx = context()
            started = time.perf_counter()
            await cache_lookup(pipeline, ctx)
            await cache_merge(pipeline, ctx)
            elapsed = (time.perf_counter() - started) * 1e6
            if ctx.cache is None or ctx.cache.hits != 3:
                raise RuntimeError(f"the {store_name} cache did not answer the primed request from its entries")
            if i >= 20:
                out.append(elapsed)
    finally:
        await cache.close()
    return out


# ---- the load client ----------------------------------------------------------------------------


async def send(session, url: str, payload: bytes, headers: dict[str, str] | None = None
               ) -> tuple[float, int, dict[str, str], str]:
    started = time.perf_counter()
    async with session.post(url, data=payload, headers={"Content-Type": "application/json",
                                                         "Authorization": "Bearer bench-client",
                                                         **(headers or {})}) as response:
        text = await response.read()
        status, headers = response.status, dict(response.headers)
    return (time.perf_counter() - started) * 1000.0, status, headers, text[:300].decode(errors="replace")


async def latency_rounds(bases: dict[str, str], cases: list[Case], rounds: int, warmup: int, deadline: float) -> None:
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        paths = {name: "/v1/systemone" for name in bases}
        hit_bodies = {name: body("jev-latest" if name == "upstream" else "jev") for name in bases}
        for round_ in range(-warmup, rounds):
            if time.monotonic() > deadline:
                break
            for case in cases:
                payload = hit_bodies[case.target] if case.kind == "hit" else body(
                    "jev", f"{STATE} (ticket {uuid.uuid4().hex})")
                try:
                    ms, status, _, text = await send(session, bases[case.target] + paths[case.target], payload,
                                                     case.headers)
                except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                    case.errors += 1
                    case.first_error = case.first_error or f"{type(exc).__name__}: {exc}"
                    continue
                if status != 200:
                    case.errors += 1
                    case.first_error = case.first_error or f"HTTP {status}: {text}"
                elif round_ >= 0:
                    case.latencies.append(ms)


def workload(tickets: int, size: int, seed: int = 11) -> list[bytes]:
    """``size`` requests over ``tickets`` inputs, each a random non-empty subset of the three questions."""
    rng = random.Random(seed)
    names = list(S1_QUESTIONS)
    out = []
    for _ in range(size):
        ticket = rng.randrange(tickets)
        chosen = [n for n in names if rng.random() < 0.6] or [rng.choice(names)]
        out.append(body("jev", f"{STATE} (ticket {ticket} of the replayed set)", {n: S1_QUESTIONS[n] for n in chosen}))
    return out


async def replay(base: str, requests: list[bytes], name: str, upstream_base: str) -> Pass:
    import aiohttp

    result = Pass(name, len(requests))
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        before = await upstream_calls(session, upstream_base)
        for payload in requests:
            _, status, headers, _ = await send(session, base + "/v1/systemone", payload)
            if status != 200:
                result.errors += 1
                continue
            result.paid += float(headers.get("x-decisions-response-cost", "nan"))
            result.saved += float(headers.get("x-decisions-cost-saved", "0"))
            result.hits += int(headers.get("x-decisions-cache-hits", "0"))
            result.misses += int(headers.get("x-decisions-cache-misses", "0"))
        after = await upstream_calls(session, upstream_base)
        result.upstream_calls = after - before if before >= 0 and after >= 0 else -1
    return result


async def upstream_calls(session, upstream_base: str) -> int:
    """The upstream's count of the decision calls it answered (-1 when it does not say)."""
    async with session.get(upstream_base + "/calls") as response:
        if response.status != 200:
            return -1
        counts = await response.json()
    return sum(int(v) for v in counts.values())


# ---- processes ----------------------------------------------------------------------------------


def start_gateway(mode: str, upstream_base: str, tmp: Path, namespace: str, cores: set[int] | None,
                  deadline: float) -> tuple[subprocess.Popen, str, Path]:
    folder = tmp / mode
    folder.mkdir()
    config = folder / "gateway.yaml"
    config.write_text(json.dumps(gateway_config(mode, upstream_base, namespace), indent=2))  # JSON is YAML
    port = free_port()
    log_path = folder / "gateway.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", "--config", str(config), "--host", HOST, "--port", str(port),
             "--workers", "1", "--log-level", "warning"], stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, cwd=folder, env={**os.environ, "DECISIONS_GATEWAY_DATA_DIR": str(folder)},
            preexec_fn=pinned_to(cores))
    base = f"http://{HOST}:{port}"
    wait_for_http(f"{base}/health/readiness", proc, min(deadline, time.monotonic() + 60), log_path)
    return proc, base, log_path


async def delete_namespace(namespace: str) -> None:
    from gateway.shared_state import RedisState

    state = RedisState(REDIS_URL, connect_timeout_s=2, socket_timeout_s=2, pool_timeout_s=2)
    try:
        await state.delete_prefix(namespace + ":")
    finally:
        await state.close()


def run(rounds: int = 1000, tickets: int = 40, size: int = 240, timeout: float = 300.0, warmup: int = 50,
        pin: bool = True) -> Results:
    deadline = time.monotonic() + timeout
    pins = pinning(pin)
    gateway_cores, other_cores = pins if pins else (None, None)
    env = machine_env(rounds=rounds, warmup=warmup, tickets=tickets, workload=size, timeout=timeout,
                      pinned=f"gateways on core {min(gateway_cores)}, upstream and client on core {min(other_cores)}"
                      if gateway_cores and other_cores else "")
    namespace = f"bench-cache-{uuid.uuid4().hex[:12]}"
    cases = [Case(*spec) for spec in CASES]
    procs: list[subprocess.Popen | None] = []
    with this_process_on(other_cores), tempfile.TemporaryDirectory(prefix="bench-cache-") as folder:
        tmp = Path(folder)
        try:
            upstream_port = free_port()
            upstream = subprocess.Popen([sys.executable, "-m", "bench.zero_delay_upstream", str(upstream_port)],
                                        cwd=ROOT, stdin=subprocess.DEVNULL, preexec_fn=pinned_to(other_cores))
            procs.append(upstream)
            wait_for_port(upstream_port, upstream, min(deadline, time.monotonic() + 30))
            upstream_base = f"http://{HOST}:{upstream_port}"
            bases = {"upstream": upstream_base}
            logs = {}
            for mode in GATEWAYS:
                proc, bases[mode], logs[mode] = start_gateway(mode, upstream_base, tmp, namespace, gateway_cores,
                                                              deadline)
                procs.append(proc)
            asyncio.run(latency_rounds(bases, cases, rounds, warmup, deadline))
            steps = {name: asyncio.run(step_costs(name, rounds, namespace)) for name in ("memory", "redis")}
            requests = workload(tickets, size)
            passes = [asyncio.run(replay(bases["off"], requests, "without the cache", upstream_base)),
                      asyncio.run(replay(bases["memory"], requests, "with the cache, first pass", upstream_base)),
                      asyncio.run(replay(bases["memory"], requests, "with the cache, replayed", upstream_base))]
            env["gateway_logs"] = {mode: log_tail(path, 1000) for mode, path in logs.items()}
        finally:
            for proc in reversed(procs):
                stop(proc)
            try:
                asyncio.run(delete_namespace(namespace))
            except Exception as exc:  # noqa: BLE001 - a clean-up that fails is said, not raised over the figures
                print(f"bench.cache: could not delete the Redis namespace {namespace}: {exc}", file=sys.stderr)
    return Results(cases, passes, env, steps)


# ---- the report ---------------------------------------------------------------------------------


def _ms(value: float, sign: bool = False) -> str:
    if math.isnan(value):
        return "–"
    return f"{value:+.2f}" if sign else f"{value:.2f}"


def added(results: Results, case: Case) -> float:
    """The case's p50 minus its own gateway's p50 on the same kind of request with ``no-store``."""
    if case.target in ("off", "upstream") or case.headers:
        return math.nan
    base = next(c for c in results.cases if c.target == case.target and c.kind == case.kind and c.headers)
    return case.p(50) - base.p(50)


def section(results: Results) -> str:
    env = results.env
    load1, load5, _ = env["load_start"]
    rows = ["| case | requests | errors | p50 ms | p99 ms | added by the cache, p50 ms |",
            "|---|---:|---:|---:|---:|---:|"]
    for case in results.cases:
        rows.append(f"| {case.name} | {len(case.latencies):,} | {case.errors} | {_ms(case.p(50))} | {_ms(case.p(99))} "
                    f"| {_ms(added(results, case), sign=True)} |")
    by = {(c.target, c.kind): c for c in results.cases if not c.headers}
    verdict = []
    for mode, label in (("memory", "memory"), ("redis", "Redis on loopback")):
        hit, miss = added(results, by[(mode, "hit")]), added(results, by[(mode, "miss")])
        budget = BUDGET_MS[mode]
        verdict.append(f"a full hit from {label} takes {_ms(hit, sign=True)} ms at p50 against today's path "
                       f"(budget: at most +{budget} ms: {'met' if hit <= budget else 'NOT met'}), a miss "
                       f"{_ms(miss, sign=True)} ms")
    passes = ["| pass | requests | errors | upstream calls | question hits | question misses | paid USD "
              "| saved USD |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for p in results.passes:
        calls = f"{p.upstream_calls:,}" if p.upstream_calls >= 0 else "–"
        passes.append(f"| {p.name} | {p.requests:,} | {p.errors} | {calls} | {p.hits:,} | {p.misses:,} "
                      f"| {p.paid:.3e} | {p.saved:.3e} |")
    without, first, again = results.passes
    cached_total = first.paid + again.paid
    method = (
        f"`python -m bench.cache` ({env['rounds']} rounds at concurrency 1 after {env['warmup']} warm-up rounds; "
        f"{env['python']}, {env['cpus']} CPUs ({env['machine']}), {env['date']}; load average {load1:.2f} (1 min) / "
        f"{load5:.2f} (5 min) at the start). Processes on 127.0.0.1: the zero-delay upstream of bench/gateway.py, "
        "three gateways (`--workers 1`; `jev` = `typesafe/jev-latest` on that upstream) without the cache, with "
        "`litellm_settings.cache: true` in memory and with `cache_params: {type: redis}` on a loopback Redis, "
        "and the aiohttp client. Each round sends one request of every case in turn, so all share the machine's "
        "moment-to-moment noise: the three-question System One body (a noul, a 3-option choice, a 3-level score), "
        "repeated (a full hit once cached), and the same with a new input each time (a miss: lookup, upstream call, "
        "store); today's path is the same request with `Cache-Control: no-store` to the same gateway process (the "
        "cache steps return at once). *Added by the cache* is the case's p50 minus that one's on the same kind of "
        "request (a full hit skips the upstream call, so it is below today's path). The cache's own steps are also "
        "timed in this process, on the gateway's code and stores. "
        + (f"Pinned: {env['pinned']}." if env.get("pinned") else "Not pinned: all processes share the cores.")
    )
    workload_text = (
        f"Replayed workload: {env['workload']} requests over {env['tickets']} inputs, each asking a random non-empty "
        "subset of the three questions (seeded), sent once through the gateway without the cache, then twice "
        "through the memory cache (the second pass replays the first). Paid is the sum of "
        "`x-decisions-response-cost`, saved the sum of `x-decisions-cost-saved` (what the cached answers cost when "
        f"they were paid for). Both passes with the cache paid {cached_total:.3e} USD for "
        f"{2 * without.requests:,} requests, against {2 * without.paid:.3e} USD for the same two passes without it "
        f"({(1 - cached_total / (2 * without.paid)) * 100 if without.paid else math.nan:.0f} % less); the replay "
        + (f"made {again.upstream_calls} upstream calls." if again.upstream_calls >= 0 else
           f"had {again.misses} question misses (this upstream does not count its calls).")
    )
    text = "; ".join(verdict)
    steps = ["| the cache's steps per full hit (`cache_lookup` + `cache_merge`, in process) | runs | p50 µs | p99 µs |",
             "|---|---:|---:|---:|"]
    for name, label in (("memory", "memory"), ("redis", "Redis on loopback (one MGET)")):
        micros = results.steps.get(name, [])
        steps.append(f"| {label} | {len(micros):,} | {_ms(percentile(micros, 50))} | {_ms(percentile(micros, 99))} |")
    return "\n".join([SECTION, "", method, "", *rows, "", text[:1].upper() + text[1:] + ".", "", *steps, "",
                      workload_text, "", *passes, ""])


def write_section(text: str, doc: Path | None = None) -> None:
    replace_section(doc or DOC, SECTION, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000, help="rounds at concurrency 1 (one request per case)")
    parser.add_argument("--warmup", type=int, default=50, help="unrecorded rounds first")
    parser.add_argument("--tickets", type=int, default=40, help="distinct inputs in the replayed workload")
    parser.add_argument("--workload", type=int, default=240, help="requests in the replayed workload")
    parser.add_argument("--timeout", type=float, default=300.0, help="hard limit for the whole run, seconds")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the gateways and the load apart")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    results = run(args.requests, args.tickets, args.workload, args.timeout, args.warmup, pin=not args.no_pin)
    text = section(results)
    print(text)
    for case in results.cases:
        if case.first_error:
            print(f"first error in {case.name!r}: {case.first_error}", file=sys.stderr)
    if not args.no_write:
        write_section(text)
    failed = any(c.errors for c in results.cases) or any(p.errors for p in results.passes)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
