"""What routing adds per request: ``Router.route`` against calling the deployment directly.

    python -m bench.router [--requests 20000] [--no-write]

In one process, with an in-process upstream that answers a canned TypeSafe body at once (so the
figures hold the router's own work only: pre-call filter, pick, health bookkeeping, the retry and
hedge scaffolding), for a three-question System One request:

* direct: ``gateway.upstream.call.fit`` + ``gateway.upstream.call.call`` (what any path must do);
* router, one deployment, memory state; router, one deployment, Redis on 127.0.0.1:6379;
* router, three deployments with ``least-busy`` (in-flight counts kept), memory and Redis.

Each case runs ``--requests`` sequential requests after a warm-up; the table gives the mean and
percentiles per request and the added time over direct. Writes the "## Router" section of
docs/benchmarks.md (``bench.docs_section.replace_section``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path

from bench.docs_section import replace_section
from bench.gateway import percentile
from bench.zero_delay_upstream import S1_QUESTIONS
from gateway.config.registry import ModelRegistry
from gateway.router import Health, Router, router_settings
from gateway.shared_state import MemoryState
from gateway.shared_state.factory import state_from_settings
from gateway.upstream import call as calls
from providers.base import Deployment, UpstreamRequest, UpstreamResponse
from translators import systemone as systemone_wire

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Router"
REDIS_URL = "redis://127.0.0.1:6379/15"


class CannedUpstream:
    """Answers every request with one precomputed TypeSafe body, without I/O."""

    def __init__(self, answer: bytes):
        self.response = UpstreamResponse(200, {"content-type": "application/json"}, answer)

    async def send(self, request: UpstreamRequest, provider: str = "") -> UpstreamResponse:
        return self.response


def canned_answer() -> bytes:
    answers = {"refund": {"type": "noul", "noul": 0.8},
               "tone": {"type": "choice", "choice": "calm", "probabilities": {"calm": 0.7, "angry": 0.2,
                                                                             "neutral": 0.1}},
               "urgency": {"type": "score", "score": 1.2, "probabilities": {"0": 0.2, "1": 0.4, "2": 0.4}}}
    return json.dumps({"model": "jev-latest", "answers": answers,
                       "usage": {"input_tokens": 120, "output_tokens": 0}}).encode()


def deployments(n: int) -> list[Deployment]:
    return [Deployment("jev", "typesafe", "jev-latest", api_key="k", api_base=f"http://127.0.0.1:{9000 + i}",
                       id=f"bench-{i}") for i in range(n)]


async def timed(n: int, one) -> list[float]:
    for _ in range(min(500, n)):
        await one()
    out = []
    for _ in range(n):
        started = time.perf_counter()
        await one()
        out.append((time.perf_counter() - started) * 1e6)
    return out


async def run(requests: int) -> dict[str, list[float]]:
    req = systemone_wire.parse_request({"model": "jev", "state": "I was charged twice.", "questions": S1_QUESTIONS})
    upstream = CannedUpstream(canned_answer())
    one_dep = deployments(1)
    results: dict[str, list[float]] = {}

    async def direct():
        calls.fit(one_dep[0], req)
        await calls.call(upstream, req, one_dep[0])

    results["direct: fit + call"] = await timed(requests, direct)
    for label, count, strategy in (("one deployment", 1, "simple-shuffle"), ("three, least-busy", 3, "least-busy")):
        for backend in ("memory", "redis"):
            deps = deployments(count)
            registry = ModelRegistry(deps)
            settings = router_settings({"routing_strategy": strategy}, {}, {"jev": deps})
            state = MemoryState() if backend == "memory" else state_from_settings(REDIS_URL)
            health = Health(state)
            router = Router(registry, settings, health, upstream)

            async def routed(router=router):
                await router.route(req, "jev")

            results[f"router, {label}, {backend}"] = await timed(requests, routed)
            await health.drain()
            await state.close()
    return results


def section(results: dict[str, list[float]], requests: int) -> str:
    base = percentile(results["direct: fit + call"], 50)
    rows = ["| case | requests | mean µs | p50 µs | p99 µs | added p50 µs |", "|---|---:|---:|---:|---:|---:|"]
    for name, values in results.items():
        p50 = percentile(values, 50)
        added = "–" if name.startswith("direct") else f"{p50 - base:+.1f}"
        rows.append(f"| {name} | {len(values):,} | {sum(values) / len(values):.1f} | {p50:.1f} "
                    f"| {percentile(values, 99):.1f} | {added} |")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    method = (f"`python -m bench.router --requests {requests}` ({platform.python_implementation()} "
              f"{platform.python_version()}, {os.cpu_count()} CPUs, {when}, "
              f"load average {os.getloadavg()[0]:.2f}). One process, pinned to one core when the machine has two or "
              "more; an in-process upstream answering a canned TypeSafe body at once, so the figures are the "
              "router's own work (pre-call filter, pick, health bookkeeping, retry and hedge scaffolding) on top of "
              "what any path does (capability check, build, parse, normalise: the *direct* row). Redis on "
              "127.0.0.1:6379 (database 15). Three-question System One request.")
    return "\n".join([SECTION, "", method, "", *rows, ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    results = asyncio.run(run(args.requests))
    text = section(results, args.requests)
    print(text)
    if not args.no_write:
        replace_section(DOC, SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
