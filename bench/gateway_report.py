"""The tables of bench/gateway.py: ours beside LiteLLM with the ratio and each figure marked against its
target, the processes' start-up and memory, and one detailed table per configuration; each in its own
section of docs/benchmarks.md (bench/docs_section.py ``replace_section``), the others kept."""

from __future__ import annotations

import math
from pathlib import Path

from bench.docs_section import replace_section
from bench.gateway import NAMES, ModeRun, Results, Server
from bench.load import Case

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
SUMMARY = "## Gateway against LiteLLM"
HEADINGS = {"none": "## Gateway overhead", "master": "## Gateway overhead with a master key",
            "auth": "## Gateway overhead with keys, limits and spend logs",
            "cache": "## Gateway overhead on a cache hit"}
TITLES = {"none": "no auth", "master": "master key only",
          "auth": "master key, virtual key with limits, Redis, spend log", "cache": "cache hit"}
# (mode, figure) -> the most our added milliseconds may be; at concurrency 32 requests/s >= RPS_RATIO x LiteLLM's.
LATENCY_TARGETS = {("none", 50): 1.0, ("none", 99): 3.0, ("master", 50): 1.5, ("auth", 50): 1.5, ("cache", 50): 0.3}
RPS_RATIO, RPS_TARGET_AT = 15.0, 32


def _ms(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.2f}"


def _added(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:+.2f} ms"


def _rps(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:,.0f}"


def _times(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.1f}x"


def measured(server: Server | None) -> bool:
    return server is not None and not server.error


def find(server: Server | None, route: str, concurrency: int) -> Case | None:
    if not measured(server):
        return None
    assert server is not None
    return next((c for c in server.cases if c.route == route and c.concurrency == concurrency and c.latencies), None)


def cache_hits(server: Server) -> bool:
    """Every request a hit but the first of each route (the same body each time)."""
    routes = len({c.route for c in server.cases})
    return server.sent > routes and 0 <= server.upstream_calls <= routes


def latency_mark(mode: str, q: int, ours: Server, value: float) -> str:
    limit = LATENCY_TARGETS.get((mode, q))
    if limit is None:
        return "–"
    if mode == "cache" and not cache_hits(ours):
        return (f"<= {limit} ms: not measured, no cache hits (the upstream got {ours.upstream_calls:,} of "
                f"{ours.sent:,} requests)")
    if math.isnan(value):
        return f"<= {limit} ms: no figure"
    return f"<= {limit} ms: {'met' if value <= limit else '**NOT met**'}"


def ratio(better: float, worse: float) -> float:
    """How many times ``better`` beats ``worse`` (NaN unless both are positive)."""
    return worse / better if better > 0 and worse > 0 else math.nan


def summary_rows(run: ModeRun, concurrencies: list[int]) -> list[str]:
    ours, theirs = run.server("ours"), run.server("litellm")
    assert ours is not None
    rows = []
    for route in dict.fromkeys(c.route for c in ours.cases):
        first = f"| {TITLES[run.mode]} | `{route}` "
        for q in (50, 99):
            mine, other = find(ours, route, 1), find(theirs, route, 1)
            value = mine.added(q) if mine else math.nan
            their = other.added(q) if other else math.nan
            times = ratio(value, their)
            rows.append(f"{first}| added p{q}, concurrency 1 | {_added(value)} | {_added(their)} "
                        f"| {_times(times)} | {latency_mark(run.mode, q, ours, value)} |")
            first = "| | "
        for concurrency in concurrencies:
            mine, other = find(ours, route, concurrency), find(theirs, route, concurrency)
            value, their = (mine.rps if mine else math.nan), (other.rps if other else math.nan)
            times = ratio(their, value)
            mark = "–"
            if concurrency == RPS_TARGET_AT:
                mark = (f">= {RPS_RATIO:.0f}x LiteLLM's: no LiteLLM figure" if math.isnan(times) else
                        f">= {RPS_RATIO:.0f}x LiteLLM's: {'met' if times >= RPS_RATIO else '**NOT met**'}")
            rows.append(f"| | | requests/s, concurrency {concurrency} | {_rps(value)} | {_rps(their)} "
                        f"| {_times(times)} | {mark} |")
    return rows


def process_rows(results: Results) -> list[str]:
    rows = ["| configuration | gateway | start to ready | RSS after warm-up | RSS after the run "
            "| upstream calls / requests sent | note |", "|---|---|---:|---:|---:|---:|---|"]
    for run in results.runs:
        for server in run.servers:
            calls = f"{server.upstream_calls:,} / {server.sent:,}" if server.upstream_calls >= 0 else "–"
            note = server.error or server.note
            if run.mode == "cache" and measured(server):
                note = (note + "; " if note else "") + ("cache hits" if cache_hits(server) else
                                                        "**no cache hits**: every call reached the upstream")
            rows.append(f"| {TITLES[run.mode]} | {NAMES[server.name]} | "
                        + ("– | – | – | – " if server.error else
                           f"{server.ready_s:.2f} s | {server.rss_warm_mib:.0f} MiB | {server.rss_after_mib:.0f} MiB "
                           f"| {calls} ") + f"| {note.replace('|', '/')} |")
    return rows


def method(results: Results) -> str:
    env = results.env
    load1, load5, _ = env["load_start"]
    venv = results.litellm
    theirs = ("LiteLLM was left out (`--no-litellm`)." if venv is None else
              f"{NAMES['litellm']}: {venv.note}." if venv.ready else
              f"**LiteLLM could not run, ours is reported alone**: {venv.note}.")
    pinned = (f"Pinned: {env['pinned']} (`sched_setaffinity`, as `taskset` does), so the gateway's figures hold "
              "its own CPU time only; absolute numbers still move with the machine's load."
              if env.get("pinned") else
              f"Not pinned: client, upstream and gateway share the {env['cpus']} cores, so every figure includes "
              "the other two processes' CPU time.")
    return (
        f"`{env.get('command', 'python -m bench.gateway')}` ({env['python']}, {env['cpus']} CPUs ({env['machine']}), "
        f"{env['date']}; load average {load1:.2f} (1 min) / {load5:.2f} (5 min) at the start; the run took "
        f"{env.get('wall_s', math.nan):.0f} s). Ours: {env['sequential']:,} requests per route at concurrency 1, "
        f"{env['concurrent']:,} per concurrent case; LiteLLM: {env['litellm_sequential']:,} and "
        f"{env['litellm_concurrent']:,}; each case after {env['warmup']} warm-up requests, and each concurrent case "
        f"run {env.get('rounds', 1)} times, the round with the median requests/s reported (every round's figure "
        "in the configuration's own section). One zero-delay aiohttp "
        "upstream (valid answers precomputed per question) serves both gateways, one gateway process at a time, "
        "one worker each, model `jev` = `typesafe/jev-latest` on that upstream; the load client is aiohttp with "
        "keep-alive. Body: three questions (a noul, a 3-option choice, a 3-level score), to `/v1/systemone` "
        "(same wire) and `/v1/decisions` (translated to System One). *Added* is the gateway's percentile minus "
        "the direct call's to the upstream: at concurrency 1 each gateway request is followed by one direct "
        "request, so both series share the machine's moment-to-moment noise. Configurations: *no auth*; "
        "*master key only* (LiteLLM's keyed configuration here, so the two are compared like for like; ours "
        "still writes its spend log, LiteLLM without a database writes none); "
        "*master key, virtual key with limits, Redis, spend log* (one virtual key with an `rpm_limit` and a "
        "`max_budget` counted in Redis on 127.0.0.1, each call's spend row to the durable outbox and a SQLite "
        "spend log); *cache hit* (`litellm_settings.cache: true`, `cache_params: {type: local}`, the same body "
        f"every time; the upstream counts the calls that reached it). {pinned} {theirs}")


def summary(results: Results) -> str:
    concurrencies = results.env["concurrencies"]
    lines = [SUMMARY, "", method(results), "",
             f"| configuration | route | figure | {NAMES['ours']} | {NAMES['litellm']} | ratio (over 1: ours ahead) "
             "| target |",
             "|---|---|---|---:|---:|---:|---|"]
    for run in results.runs:
        lines += summary_rows(run, concurrencies)
    lines += ["", "The ratio is LiteLLM's added latency over ours, and our requests per second over LiteLLM's.", "",
              *process_rows(results), "",
              "RSS: `VmRSS` of `/proc/<pid>/status`, the gateway process and its children added up. The detail "
              "of each configuration, with p95 and the upstream alone, is in its own section.", ""]
    return "\n".join(lines)


def detail(run: ModeRun, results: Results) -> str:
    env = results.env
    rows = ["| case | concurrency | requests | errors | req/s (each round) | p50 ms | p95 ms | p99 ms | added p50 ms "
            "| added p99 ms |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    cases = list(run.upstream) + [c for s in run.servers for c in s.cases if measured(s)]
    for c in cases:
        short = " (cut short by the timeout)" if c.cut_short else ""
        rounds = f" ({' / '.join(_rps(r) for r in c.round_rps)})" if len(c.round_rps) > 1 else ""
        rows.append(f"| {c.name}{short} | {c.concurrency} | {c.done:,} | {c.errors} | {_rps(c.rps)}{rounds} "
                    f"| {_ms(c.pct(50))} "
                    f"| {_ms(c.pct(95))} | {_ms(c.pct(99))} | {_ms(c.added(50))} | {_ms(c.added(99))} |")
    missing = [f"{NAMES[s.name]}: {s.error}" for s in run.servers if s.error]
    return "\n".join([
        HEADINGS[run.mode], "",
        f"Configuration *{TITLES[run.mode]}* of the run in \"{SUMMARY[3:]}\" (`{env.get('command', '')}`, "
        f"{env['date']}, {env['cpus']} CPUs, load average {env['load_start'][0]:.2f} at the start; the method is "
        "described there).", "", *rows, "", *(["Not measured: " + "; ".join(missing), ""] if missing else [])])


def sections(results: Results) -> dict[str, str]:
    """Heading -> text: the summary, then one detailed section per configuration that ran."""
    out = {SUMMARY: summary(results)}
    for run in results.runs:
        out[HEADINGS[run.mode]] = detail(run, results)
    return out


def write(texts: dict[str, str], doc: Path | None = None) -> None:
    for heading, text in texts.items():
        replace_section(doc or DOC, heading, text)
