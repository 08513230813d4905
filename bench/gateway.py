"""Gateway overhead benchmark: what the gateway adds on top of a zero-delay upstream.

    python -m bench.gateway [--requests 500] [--concurrent-requests 3000] [--concurrency 32]
                            [--timeout 300] [--no-pin] [--auth] [--no-write]

Three processes on 127.0.0.1: a zero-delay upstream (a small aiohttp app answering TypeSafe's
``POST /v1/systemone`` and OpenAI's ``POST /v1/decisions`` with valid answers precomputed per question),
the gateway as a real process (``decisions-gateway --config <tmp config> --port <free>``, one worker,
``jev`` = ``typesafe/jev-latest`` and ``luna`` = ``openai/gpt-6-luna`` on that upstream), and this
process as the load client (aiohttp, keep-alive). The body is small and realistic: three questions
(a ``noul``, a 3-option choice, a 3-level score).

Measured: the upstream alone at concurrency 1 (both routes); through the gateway at concurrency 1,
``/v1/systemone`` -> typesafe (same wire), ``/v1/decisions`` -> typesafe and ``/v1/systemone`` -> openai
(translated), with the added latency (gateway minus the direct call to the same upstream route);
throughput at ``--concurrency`` for ``/v1/systemone`` -> typesafe (and the upstream alone, for scale);
the gateway's RSS after the run (``/proc/<pid>/status``). With two or more cores (and unless
``--no-pin``), the gateway is pinned to core 0 and the upstream and the load client to core 1
(``sched_setaffinity``), so the gateway's figures are not mixed with the other two processes' CPU
time. Every case is bounded by its request count and by one overall ``--timeout``; all processes are
stopped at the end. Prints a table and rewrites the "Gateway overhead" section of docs/benchmarks.md
(other sections are left as they are).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.docs_section import machine_env, replace_section
from bench.processes import free_port, log_tail, pinned_to, pinning, rss_mib, stop, wait_for_http, wait_for_port
from bench.zero_delay_upstream import S1_QUESTIONS, openai_body, systemone_body

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Gateway overhead"
HOST = "127.0.0.1"
UPSTREAM_KEY = "bench-upstream-key"

# LiteLLM on the same kind of 2-vCPU machine (shared/spec/litellm-reference.md, section 12).
LITELLM = {"added_p50_ms": 14.5, "rps_32": 83.8, "rss_mb": 413}


# ---- processes --------------------------------------------------------------------------------


def gateway_command() -> list[str]:
    script = Path(sys.executable).with_name("decisions-gateway")
    if script.exists():
        return [str(script)]
    found = shutil.which("decisions-gateway")
    return [found] if found else [sys.executable, "-m", "gateway.cli"]


def gateway_config(upstream_port: int) -> dict:
    base = f"http://{HOST}:{upstream_port}"
    return {"model_list": [
        {"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": UPSTREAM_KEY,
                                                  "api_base": base, "timeout": 10}},
        {"model_name": "luna", "litellm_params": {"model": "openai/gpt-6-luna", "api_key": UPSTREAM_KEY,
                                                   "api_base": base, "timeout": 10}},
    ]}


# ---- the load client --------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    target: str  # "upstream" or "gateway"
    path: str
    body: bytes
    concurrency: int
    total: int
    direct: str | None = None  # the upstream case this one is compared with
    paired: list[float] = field(default_factory=list)  # direct calls interleaved with this case's (concurrency 1)
    key: str = "bench-client"  # the Authorization bearer (a virtual key with --auth)
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""
    elapsed_s: float = 0.0
    cut_short: bool = False

    def pct(self, q: float) -> float:
        return percentile(self.latencies, q)

    @property
    def rps(self) -> float:
        done = len(self.latencies) + self.errors
        return done / self.elapsed_s if self.elapsed_s > 0 else 0.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of unsorted values; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n*q/100), at least 1
    return ordered[int(rank) - 1]


def expected_keys(case: Case) -> set[str]:
    return set(S1_QUESTIONS)


def check_answer(case: Case, payload: bytes) -> str | None:
    """None when the response holds an answer for each of the three questions, else why not."""
    try:
        body = json.loads(payload)
        answers = body["answers"]
        names = set(answers) if isinstance(answers, dict) else {a.get("name") for a in answers}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return f"unusable body ({exc!r}): {payload[:200]!r}"
    return None if names == expected_keys(case) else f"answers for {sorted(map(str, names))}"


async def drive(session, base: str, case: Case, total: int, deadline: float, record: bool) -> None:
    """``total`` POSTs with ``case.concurrency`` in flight, stopping at ``deadline``."""
    import aiohttp

    url = base + case.path
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {case.key}"}
    remaining = total
    checked = False

    async def one() -> None:
        nonlocal checked
        started = time.perf_counter()
        error: str | None
        try:
            async with session.post(url, data=case.body, headers=headers) as response:
                payload = await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        else:
            error = None if status == 200 else f"HTTP {status}: {payload[:300]!r}"
            if error is None and not checked:
                checked = True
                error = check_answer(case, payload)
        latency = (time.perf_counter() - started) * 1000.0
        if not record:
            if error:
                raise RuntimeError(f"{case.name}: warm-up request failed: {error}")
            return
        if error is None:
            case.latencies.append(latency)
        else:
            case.errors += 1
            case.first_error = case.first_error or error

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            if time.monotonic() >= deadline:
                case.cut_short = True
                return
            remaining -= 1
            await one()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(case.concurrency)))
    if record:
        case.elapsed_s = time.perf_counter() - started


async def run_case(base: str, case: Case, deadline: float, warmup: int, direct: Case | None = None,
                   direct_base: str = "") -> None:
    """The case's requests; at concurrency 1 with a ``direct`` case, each request to the gateway is
    followed by one straight to the upstream, so both see the same moment of a noisy machine and
    the added latency compares like with like."""
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=10)
    connector = aiohttp.TCPConnector(limit=case.concurrency * 2)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await drive(session, base, case, max(warmup, case.concurrency), deadline, record=False)
        if direct is None or case.concurrency != 1:
            await drive(session, base, case, case.total, deadline, record=True)
            return
        twin = Case(direct.name, direct.target, direct.path, direct.body, 1, case.total)
        await drive(session, direct_base, twin, warmup, deadline, record=False)
        started = time.perf_counter()
        for _ in range(case.total):
            if time.monotonic() >= deadline:
                case.cut_short = True
                break
            await drive(session, base, case, 1, deadline, record=True)
            await drive(session, direct_base, twin, 1, deadline, record=True)
        case.elapsed_s = time.perf_counter() - started
        case.paired = twin.latencies
        case.errors += twin.errors
        case.first_error = case.first_error or twin.first_error


def make_cases(sequential: int, concurrent: int, concurrency: int) -> list[Case]:
    s1_jev, s1_luna, oa_jev = systemone_body("jev"), systemone_body("luna"), openai_body("jev")
    s1_direct, oa_direct = systemone_body("jev-latest"), openai_body("gpt-6-luna")
    return [
        Case("upstream alone: POST /v1/systemone", "upstream", "/v1/systemone", s1_direct, 1, sequential),
        Case("upstream alone: POST /v1/decisions", "upstream", "/v1/decisions", oa_direct, 1, sequential),
        Case("gateway /v1/systemone -> typesafe (same wire)", "gateway", "/v1/systemone", s1_jev, 1, sequential,
             direct="upstream alone: POST /v1/systemone"),
        Case("gateway /v1/decisions -> typesafe (translated)", "gateway", "/v1/decisions", oa_jev, 1, sequential,
             direct="upstream alone: POST /v1/systemone"),
        Case("gateway /v1/systemone -> openai (translated)", "gateway", "/v1/systemone", s1_luna, 1, sequential,
             direct="upstream alone: POST /v1/decisions"),
        Case("upstream alone: POST /v1/systemone", "upstream", "/v1/systemone", s1_direct, concurrency, concurrent),
        Case("gateway /v1/systemone -> typesafe (same wire)", "gateway", "/v1/systemone", s1_jev, concurrency,
             concurrent, direct="upstream alone: POST /v1/systemone"),
    ]


@dataclass
class Results:
    cases: list[Case]
    env: dict


MASTER_KEY = "sk-bench-master-key"
AUTH_SECTION = "## Gateway overhead with keys, limits and spend logs"


def auth_settings(tmp: str) -> dict:
    """Master key, Redis on loopback, the spend log in a SQLite file of the run's own."""
    return {"master_key": MASTER_KEY, "redis_url": "redis://127.0.0.1:6379/14",
            "database_url": f"sqlite:///{tmp}/spend.db"}


def virtual_key(base: str) -> str:
    """A virtual key with an rpm limit and a budget (high enough never to refuse the run)."""
    import urllib.request

    body = json.dumps({"key_alias": f"bench-{os.getpid()}", "rpm_limit": 1_000_000, "max_budget": 1_000_000.0})
    request = urllib.request.Request(f"{base}/key/generate", data=body.encode(), method="POST", headers={
        "Authorization": f"Bearer {MASTER_KEY}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["key"]


def run(sequential: int = 500, concurrent: int = 3000, concurrency: int = 32, timeout: float = 300.0,
        warmup: int = 50, pin: bool = True, auth: bool = False) -> Results:
    """Start the upstream and the gateway, run every case, read the gateway's RSS, stop both.
    With ``auth``: a master key, one virtual key with an rpm limit and a budget, Redis on loopback
    and spend logging to SQLite."""
    hard_deadline = time.monotonic() + timeout
    pins = pinning(pin)
    gateway_cores, other_cores = pins if pins else (None, None)
    env = machine_env(**{
        "sequential": sequential, "concurrent": concurrent,
        "concurrency": concurrency, "warmup": warmup, "timeout": timeout,
        "pinned": f"gateway on core {min(gateway_cores)}, upstream and client on core {min(other_cores)}"
        if gateway_cores and other_cores else "", "auth": auth,
    })
    if other_cores:
        os.sched_setaffinity(0, other_cores)
    cases = make_cases(sequential, concurrent, concurrency)
    upstream = gateway = None
    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as tmp:
        log_path = Path(tmp) / "gateway.log"
        try:
            upstream_port = free_port()
            upstream = subprocess.Popen([sys.executable, "-m", "bench.zero_delay_upstream", str(upstream_port)],
                                        cwd=ROOT, stdin=subprocess.DEVNULL, preexec_fn=pinned_to(other_cores))
            wait_for_port(upstream_port, upstream, min(hard_deadline, time.monotonic() + 30))

            config = Path(tmp) / "gateway.yaml"
            settings = gateway_config(upstream_port)
            if auth:
                settings["general_settings"] = auth_settings(tmp)
            config.write_text(json.dumps(settings, indent=2))  # JSON is YAML
            gateway_port = free_port()
            gateway_base = f"http://{HOST}:{gateway_port}"
            started = time.monotonic()
            with open(log_path, "wb") as log:
                gateway = subprocess.Popen(
                    gateway_command() + ["--config", str(config), "--host", HOST, "--port", str(gateway_port),
                                         "--workers", "1", "--log-level", "warning"],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=tmp,
                    env={**os.environ, "DECISIONS_GATEWAY_DATA_DIR": tmp}, preexec_fn=pinned_to(gateway_cores))
            wait_for_http(f"{gateway_base}/health/readiness", gateway,
                          min(hard_deadline, time.monotonic() + 60), log_path)
            env["gateway_ready_s"] = time.monotonic() - started
            env["rss_ready_mib"] = rss_mib(gateway.pid)[0]

            if auth:
                key = virtual_key(gateway_base)
                for case in cases:
                    if case.target == "gateway":
                        case.key = key
            bases = {"upstream": f"http://{HOST}:{upstream_port}", "gateway": gateway_base}
            by_name = {(c.name, c.concurrency): c for c in cases}
            for case in cases:
                direct = by_name.get((case.direct, case.concurrency)) if case.direct else None
                asyncio.run(run_case(bases[case.target], case, hard_deadline, warmup, direct, bases["upstream"]))
            env["rss_after_mib"], env["rss_peak_mib"] = rss_mib(gateway.pid)
            env["gateway_alive"] = gateway.poll() is None
            env["gateway_log"] = log_tail(log_path, 2000)
        finally:
            stop(gateway)
            stop(upstream)
    return Results(cases, env)


# ---- the report -------------------------------------------------------------------------------


def _ms(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.2f}"


def _added(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:+.2f}"


def added(case: Case, by_name: dict[tuple[str, int], Case], q: float) -> float:
    if case.direct is None:
        return float("nan")
    if case.paired:  # the direct calls interleaved with this case's own
        return case.pct(q) - percentile(case.paired, q)
    direct = by_name.get((case.direct, case.concurrency))
    return case.pct(q) - direct.pct(q) if direct else float("nan")


def table_rows(results: Results) -> list[str]:
    by_name = {(c.name, c.concurrency): c for c in results.cases}
    rows = [
        "| case | concurrency | requests | errors | req/s | p50 ms | p95 ms | p99 ms | added p50 ms | added p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in results.cases:
        done = len(c.latencies) + c.errors
        short = " (cut short by the timeout)" if c.cut_short else ""
        rows.append(f"| {c.name}{short} | {c.concurrency} | {done:,} | {c.errors} | {c.rps:,.0f} | {_ms(c.pct(50))} "
                    f"| {_ms(c.pct(95))} | {_ms(c.pct(99))} | {_added(added(c, by_name, 50))} "
                    f"| {_added(added(c, by_name, 99))} |")
    return rows


def headline(results: Results) -> dict:
    by_name = {(c.name, c.concurrency): c for c in results.cases}
    seq = [c for c in results.cases if c.target == "gateway" and c.concurrency == 1]
    conc = [c for c in results.cases if c.target == "gateway" and c.concurrency > 1]
    return {
        "added_p50_ms": max(added(c, by_name, 50) for c in seq) if seq else float("nan"),
        "rps": conc[0].rps if conc else float("nan"),
        "rss_mib": results.env.get("rss_after_mib", float("nan")),
    }


def section(results: Results) -> str:
    env = results.env
    load1, load5, _ = env["load_start"]
    head = headline(results)
    errors = sum(c.errors for c in results.cases)
    nan = float("nan")
    method = (
        f"`python -m bench.gateway` ({env['sequential']} requests per case at concurrency 1, "
        f"{env['concurrent']:,} at concurrency {env['concurrency']}, each after {env['warmup']} warm-up requests; "
        f"{env['python']}, {env['cpus']} CPUs ({env['machine']}), {env['date']}; load average "
        f"{load1:.2f} (1 min) / {load5:.2f} (5 min) at the start). Three processes on 127.0.0.1: a zero-delay "
        "aiohttp upstream answering TypeSafe's `/v1/systemone` and OpenAI's `/v1/decisions` with valid "
        "answers precomputed per question, the gateway started as `decisions-gateway --config <tmp> --port <free>` "
        "(one worker; `jev` = `typesafe/jev-latest`, `luna` = `openai/gpt-6-luna`, both on that upstream), "
        "and the aiohttp load client (keep-alive). Body: three questions (a noul, a 3-option choice, a 3-level "
        "score). *Added* is the gateway's percentile minus the direct call's to the same upstream route at the "
        "same concurrency; at concurrency 1 each gateway request is followed by one direct request, so the two "
        "series share the machine's moment-to-moment noise. "
        + (f"Pinned: {env['pinned']} (`sched_setaffinity`): the gateway does not share the client's and the "
           "upstream's core, so its figures hold its own CPU time only; absolute numbers still move with the "
           "machine's load from run to run."
           if env.get("pinned") else
           f"Client, upstream and gateway share the {env['cpus']} cores, so every figure includes the other two "
           "processes' CPU time; absolute numbers move with the machine's load from run to run.")
    )
    process = (
        f"Gateway process: start to `/health/readiness` 200 in {env.get('gateway_ready_s', nan):.2f} s; "
        f"RSS {env.get('rss_ready_mib', nan):.0f} MiB when ready, "
        f"**{env.get('rss_after_mib', nan):.0f} MiB after the run** "
        f"(peak {env.get('rss_peak_mib', nan):.0f} MiB; `VmRSS` / `VmHWM` of `/proc/<pid>/status`). "
        f"Errors over all cases: {errors}."
    )
    added_row = (f"| added p50 per call, concurrency 1 (worst of the three routes) | {_added(head['added_p50_ms'])} ms "
                 f"| +{LITELLM['added_p50_ms']} ms |")
    rps_row = (f"| requests/s at concurrency {env['concurrency']}, `/v1/systemone` -> typesafe | {head['rps']:,.1f} "
               f"| {LITELLM['rps_32']} |")
    if env.get("auth"):
        method += (" **With keys, limits and spend logs**: the gateway runs with a master key, every request "
                   "carries one virtual key with an `rpm_limit` and a `max_budget` (counted in Redis on 127.0.0.1), "
                   "and each call's spend row goes to the durable outbox and a SQLite spend log.")
    lines = [
        AUTH_SECTION if env.get("auth") else SECTION, "", method, "", *table_rows(results), "", process, "",
        "| against LiteLLM (litellm-reference.md section 12, same kind of 2-vCPU machine) | this gateway | LiteLLM |",
        "|---|---:|---:|",
        added_row,
        rps_row,
        f"| RSS after the run | {head['rss_mib']:.0f} MiB | {LITELLM['rss_mb']} MB |",
        "",
    ]
    return "\n".join(lines)


def write_section(text: str, doc: Path | None = None, auth: bool = False) -> None:
    """Replace the "Gateway overhead" section of ``doc`` (or the one with keys, limits and spend logs;
    appended when absent); keep the rest."""
    replace_section(doc or DOC, AUTH_SECTION if auth else SECTION, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=500, help="requests per case at concurrency 1")
    parser.add_argument("--concurrent-requests", type=int, default=3000, help="requests in the concurrent case")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=50, help="unrecorded requests before each case")
    parser.add_argument("--timeout", type=float, default=300.0, help="hard limit for the whole run, seconds")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the gateway and the load to separate cores")
    parser.add_argument("--auth", action="store_true",
                        help="master key + a virtual key with limits + Redis + spend logging")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    results = run(args.requests, args.concurrent_requests, args.concurrency, args.timeout, args.warmup,
                  pin=not args.no_pin, auth=args.auth)
    text = section(results)
    print(text)
    for case in results.cases:
        if case.first_error:
            print(f"first error in {case.name!r} (concurrency {case.concurrency}): {case.first_error}",
                  file=sys.stderr)
    if not args.no_write:
        write_section(text, auth=args.auth)
    return 1 if any(c.errors for c in results.cases) else 0


if __name__ == "__main__":
    sys.exit(main())
