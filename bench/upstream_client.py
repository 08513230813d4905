"""Upstream client benchmark: httpx's own pool vs httpx on aiohttp's transport vs plain aiohttp vs the
gateway's own client (gateway/upstream/http_client.py) and ``Upstream.send`` on it, POSTing a small System One
body to a local server at concurrency 32. Besides requests per second and latency, the client's own
CPU time per request (``time.process_time`` of this process: the server runs in another), the figure
that decides what the client costs a gateway that is CPU-bound under load.

    python -m bench.upstream_client [--requests 4000] [--concurrency 32] [--no-write]

The server runs in its own process (aiohttp), so the clients compete only with it for the CPUs.
Prints a table and writes it to docs/benchmarks.md, section "Upstream client" (other sections of
that file are left as they are).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Upstream client"
BODY = {"model": "jev-latest", "state": "I was charged twice.",
        "questions": {"billing": {"type": "noul", "instructions": "Is this about billing?"}}}
ANSWER = json.dumps({"model": "jev-1.13-20260917", "answers": {"billing": {"type": "noul", "noul": 0.97}},
                     "usage": {"input_tokens": 42, "output_tokens": 0}}).encode()


# ---- the server (a separate process) ----------------------------------------------------------


def serve(port: int) -> None:
    from aiohttp import web

    async def systemone(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=ANSWER, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/systemone", systemone)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the benchmark server did not start")


# ---- the clients ------------------------------------------------------------------------------


async def run_httpx(url: str, total: int, concurrency: int, aiohttp_transport: bool) -> list[float]:
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    if aiohttp_transport:
        from httpx_aiohttp import AiohttpTransport

        client = httpx.AsyncClient(transport=AiohttpTransport(limits=limits), limits=limits)
    else:
        client = httpx.AsyncClient(limits=limits)

    async def one() -> None:
        response = await client.post(url, json=BODY, timeout=30)
        assert response.status_code == 200 and response.content == ANSWER

    try:
        return await drive(one, total, concurrency)
    finally:
        await client.aclose()


async def run_gateway_upstream(url: str, total: int, concurrency: int) -> list[float]:
    from gateway.upstream.upstream import Upstream
    from providers.base import UpstreamRequest

    request = UpstreamRequest("POST", url, {}, json=BODY, timeout=30)
    async with Upstream(max_connections=concurrency) as upstream:
        async def one() -> None:
            response = await upstream.send(request, "bench")
            assert response.status == 200 and response.body == ANSWER

        return await drive(one, total, concurrency)


async def run_http_client(url: str, total: int, concurrency: int) -> list[float]:
    from gateway.upstream.http_client import HttpClient

    client = HttpClient(max_connections=concurrency)
    body, headers = json.dumps(BODY).encode(), {"Content-Type": "application/json"}

    async def one() -> None:
        answer = await client.request("POST", url, headers, body, timeout_s=30, max_bytes=1 << 24)
        assert answer.status == 200 and answer.body == ANSWER

    try:
        return await drive(one, total, concurrency)
    finally:
        await client.close()


async def run_aiohttp(url: str, total: int, concurrency: int) -> list[float]:
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        async def one() -> None:
            async with session.post(url, json=BODY) as response:
                assert response.status == 200 and await response.read() == ANSWER

        return await drive(one, total, concurrency)


async def drive(one, total: int, concurrency: int) -> list[float]:
    """``total`` calls with ``concurrency`` in flight; returns each call's latency in ms."""
    latencies: list[float] = []
    remaining = total

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            started = time.perf_counter()
            await one()
            latencies.append((time.perf_counter() - started) * 1000.0)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


CLIENTS = {
    "httpx.AsyncClient (httpx's own pool)": lambda url, n, c: run_httpx(url, n, c, aiohttp_transport=False),
    "httpx API on AiohttpTransport (httpx-aiohttp)": lambda url, n, c: run_httpx(url, n, c, aiohttp_transport=True),
    "aiohttp.ClientSession": run_aiohttp,
    "gateway HttpClient (gateway/upstream/http_client.py)": run_http_client,
    "gateway Upstream.send (gateway/upstream/upstream.py: HttpClient + JSON encoding)": run_gateway_upstream,
}


def measure(url: str, total: int, concurrency: int) -> list[tuple[str, float, float, float, float]]:
    rows = []
    for name, run in CLIENTS.items():
        asyncio.run(run(url, min(200, total), concurrency))  # warm-up: connections, imports
        started, cpu = time.perf_counter(), time.process_time()
        latencies = asyncio.run(run(url, total, concurrency))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        latencies.sort()
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        rows.append((name, total / elapsed, statistics.median(latencies), p99, cpu / total * 1e6))
    return rows


def table(rows, total: int, concurrency: int) -> str:
    lines = [
        SECTION,
        "",
        f"`python -m bench.upstream_client` ({total} POSTs of a small System One body per client, "
        f"concurrency {concurrency}, local aiohttp server in its own process; "
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d')}; 1-minute load average {os.getloadavg()[0]:.1f} at the start, "
        "so absolute numbers vary with what else runs; the ratios are the point).",
        "",
        "| client | requests/s | median ms | p99 ms | client CPU µs/request |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, rps, median, p99, cpu_us in rows:
        lines.append(f"| {name} | {rps:,.0f} | {median:.2f} | {p99:.2f} | {cpu_us:.0f} |")
    lines += ["", "The gateway sends every upstream call through its own client (kept-alive connections on "
                  "asyncio's transports and httptools' parser): httpx's pool is slow under concurrency "
                  "(encode/httpx#3215), httpx's wrapping over aiohttp's transport costs more than the HTTP work "
                  "itself, and aiohttp's client spends several times the exchange's CPU in its own objects. "
                  "Requests per second here are bounded by the server as much as by the client; the CPU column "
                  "is the client's alone.", ""]
    return "\n".join(lines)


def write_section(text: str) -> None:
    from bench.docs_section import replace_section

    replace_section(DOC, SECTION, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    try:
        wait_for_port(port)
        rows = measure(f"http://127.0.0.1:{port}/v1/systemone", args.requests, args.concurrency)
    finally:
        server.terminate()
        server.wait(timeout=10)
    text = table(rows, args.requests, args.concurrency)
    print(text)
    if not args.no_write:
        write_section(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
