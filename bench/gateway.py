"""Gateway overhead benchmark: what this gateway adds on top of a zero-delay upstream, beside what
LiteLLM 1.110.2's proxy adds on the same upstream in the same run.

    python -m bench.gateway [--modes none master auth cache] [--requests 1000] [--concurrent-requests 3000]
                            [--concurrency 32 128] [--litellm-requests 300] [--litellm-concurrent-requests 1000]
                            [--litellm-venv PATH | --no-litellm] [--no-install] [--timeout 1500] [--no-pin]
                            [--rounds 3] [--no-write]

Processes on 127.0.0.1: the zero-delay upstream (bench/zero_delay_upstream.py: TypeSafe's
``/v1/systemone`` and OpenAI's ``/v1/decisions`` with valid answers precomputed per question, and a
count of the calls it got), one gateway at a time (``decisions-gateway --config <tmp> --workers 1``,
then ``litellm --config <tmp> --num_workers 1`` from the venv bench/litellm.py keeps in the work folder;
both with ``jev`` = ``typesafe/jev-latest`` on that upstream), and this process as the load client
(aiohttp, keep-alive). The body is small and realistic: three questions (a ``noul``, a 3-option
choice, a 3-level score), sent to ``/v1/systemone`` (same wire) and ``/v1/decisions`` (translated).

Four configurations (``--modes``): ``none`` (no key at all); ``master`` (the master key only: what
LiteLLM can run here as its keyed configuration, so the two are compared like for like; ours still
writes its spend log); ``auth`` (a master key, one virtual key with an rpm limit and a budget counted in
Redis, spend logging to the outbox and a SQLite spend log; LiteLLM gets its master key only when it
cannot make a virtual key without a database, and the table says so);
``cache`` (``litellm_settings.cache: true`` with ``cache_params: {type: local}``, the same
body again and again, so every request after the first of each route is a hit; the upstream's count
of gateway calls shows how many really were).

Measured per configuration and gateway: start to ``/health/readiness`` 200; resident memory (the
process and its children) after a warm-up and after the run; per route, p50 and p99 at concurrency 1
with each request followed by one straight to the upstream (*added* = gateway minus direct, so both
see the same moment of a noisy machine), and requests per second at each ``--concurrency``: each
concurrent case runs ``--rounds`` times (every gateway alike) and the median round is reported, so a
short dip of the shared machine moves one round and not the figure. With two
or more cores (and unless ``--no-pin``) the gateway under test runs on core 0 and the upstream and
the load client on core 1 (``sched_setaffinity``, as ``taskset`` does). Every case is bounded by its
request count and one overall ``--timeout``; every process is stopped at the end. Prints the tables
and rewrites this bench's sections of docs/benchmarks.md (bench/gateway_report.py), the rest kept.
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

from bench import litellm, processes
from bench.docs_section import machine_env
from bench.load import Case, percentile, run_rounds, warm
from bench.processes import free_port, http_json, log_tail, pinned_to, stop, this_process_on, tree_rss_mib
from bench.zero_delay_upstream import UPSTREAM_KEY, openai_body, systemone_body

__all__ = ["percentile", "run", "main"]  # percentile: bench/router.py reads it from here

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
MASTER_KEY = "sk-bench-master-key"
MODES = ("none", "master", "auth", "cache")
ROUTES = (("/v1/systemone", "/v1/systemone -> typesafe (same wire)", systemone_body("jev")),
          ("/v1/decisions", "/v1/decisions -> typesafe (translated)", openai_body("jev")))
DIRECT_PATH, DIRECT_BODY = "/v1/systemone", systemone_body("jev-latest")
NAMES = {"ours": "this gateway", "litellm": f"LiteLLM {litellm.VERSION}"}


@dataclass
class Server:
    """One gateway process in one configuration, and what was measured of it."""

    name: str  # "ours" or "litellm"
    cases: list[Case]
    ready_s: float = math.nan
    rss_warm_mib: float = math.nan
    rss_after_mib: float = math.nan
    note: str = ""  # where its configuration differs from the mode's (LiteLLM's keys)
    sent: int = 0  # requests sent to it, warm-ups included
    upstream_calls: int = -1  # calls it made to the upstream meanwhile (-1: not counted)
    error: str = ""  # why it has no figures (LiteLLM only: ours failing stops the run)


@dataclass
class ModeRun:
    mode: str
    upstream: list[Case]  # the upstream alone at each concurrency
    servers: list[Server] = field(default_factory=list)

    def server(self, name: str) -> Server | None:
        return next((s for s in self.servers if s.name == name), None)


@dataclass
class Results:
    runs: list[ModeRun]
    env: dict
    litellm: litellm.Venv | None  # None: not asked for


# ---- the cases ----------------------------------------------------------------------------------


def upstream_cases(sequential: int, concurrent: int, concurrencies: list[int]) -> dict[int, Case]:
    return {c: Case(f"upstream alone: POST {DIRECT_PATH}", "upstream", DIRECT_PATH, DIRECT_BODY, c,
                    sequential if c == 1 else concurrent) for c in (1, *concurrencies)}


def server_cases(name: str, sequential: int, concurrent: int, concurrencies: list[int],
                 upstream: dict[int, Case]) -> list[Case]:
    return [Case(f"{NAMES[name]} {label}", name, path, body, c, sequential if c == 1 else concurrent,
                 direct=upstream[c], route=path)
            for c in (1, *concurrencies) for path, label, body in ROUTES]


# ---- the gateways' configurations ---------------------------------------------------------------


def ours_config(mode: str, upstream_base: str, tmp: str) -> dict:
    settings: dict = {"model_list": [{"model_name": "jev", "litellm_params": {
        "model": "typesafe/jev-latest", "api_key": UPSTREAM_KEY, "api_base": upstream_base, "timeout": 10}}]}
    if mode == "master":
        settings["general_settings"] = {"master_key": MASTER_KEY}
    if mode == "auth":  # Redis on loopback, the spend log in a SQLite file of the run's own
        settings["general_settings"] = {"master_key": MASTER_KEY, "redis_url": "redis://127.0.0.1:6379/14",
                                        "database_url": f"sqlite:///{tmp}/spend.db"}
    if mode == "cache":
        settings["litellm_settings"] = {"cache": True, "cache_params": {"type": "local"}}
    return settings


def gateway_command() -> list[str]:
    script = Path(sys.executable).with_name("decisions-gateway")
    if script.exists():
        return [str(script)]
    found = shutil.which("decisions-gateway")
    return [found] if found else [sys.executable, "-m", "gateway.cli"]


def generate_key(base: str) -> tuple[str | None, str]:
    """A virtual key with an rpm limit and a budget (high enough never to refuse the run), or why not."""
    status, body = http_json("POST", f"{base}/key/generate", {
        "key_alias": f"bench-{os.getpid()}-{time.time_ns()}", "rpm_limit": 1_000_000, "max_budget": 1_000_000.0},
        token=MASTER_KEY)
    if status == 200 and isinstance(body.get("key"), str):
        return body["key"], ""
    error = body.get("error", body)
    message = (error.get("message") or error.get("raw") or error) if isinstance(error, dict) else error
    return None, f"HTTP {status}: {str(message)[:200]}"


def upstream_calls(upstream_base: str) -> int:
    return int(http_json("GET", f"{upstream_base}/calls")[1]["gateway"])


# ---- one gateway process ------------------------------------------------------------------------


@dataclass
class Plan:
    """What every gateway of the run shares: the upstream, the cores, the counts and the deadline."""

    upstream_base: str
    cores: set[int] | None
    deadline: float
    warmup: int
    tmp: str
    rounds: int = 1  # of each concurrent case, the median round reported (bench/load.py run_rounds)


def start(command: list[str], env: dict[str, str], config: dict, plan: Plan, name: str) -> tuple[
        subprocess.Popen, str, float, Path]:
    """Start a gateway on a free port; (process, base URL, seconds to readiness, its log)."""
    work = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=plan.tmp))
    config_path = work / "config.yaml"
    config_path.write_text(json.dumps(config, indent=2))  # JSON is YAML
    port = free_port()
    log_path = work / "server.log"
    started = time.monotonic()
    with open(log_path, "wb") as log:
        argv = [part.replace("{config}", str(config_path)).replace("{port}", str(port)) for part in command]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=work,
                                env={**env, "DECISIONS_GATEWAY_DATA_DIR": str(work)}, preexec_fn=pinned_to(plan.cores))
    base = f"http://{HOST}:{port}"
    try:
        processes.wait_for_http(f"{base}/health/readiness", proc, min(plan.deadline, time.monotonic() + 120), log_path)
    except BaseException:
        stop(proc)
        raise
    return proc, base, time.monotonic() - started, log_path


def measure(server: Server, proc: subprocess.Popen, base: str, plan: Plan) -> None:
    """Warm up, read the memory, run every case, read it again; count the upstream calls meanwhile."""
    before = upstream_calls(plan.upstream_base)
    firsts = [c for c in server.cases if c.concurrency == 1]
    server.sent += asyncio.run(warm(base, firsts, plan.warmup, plan.deadline))
    server.rss_warm_mib = tree_rss_mib(proc.pid)
    for case in server.cases:
        asyncio.run(run_rounds(base, case, plan.deadline, plan.warmup, plan.upstream_base, plan.rounds))
        server.sent += case.sent
    server.rss_after_mib = tree_rss_mib(proc.pid)
    server.upstream_calls = upstream_calls(plan.upstream_base) - before
    if proc.poll() is not None:
        raise RuntimeError(f"{NAMES[server.name]} exited with {proc.returncode} during the run")


def send_with(server: Server, key: str) -> None:
    for case in server.cases:
        case.key = key


def run_ours(server: Server, mode: str, plan: Plan) -> None:
    command = gateway_command() + ["--config", "{config}", "--host", HOST, "--port", "{port}", "--workers", "1",
                                   "--log-level", "warning"]
    proc, base, server.ready_s, _ = start(command, dict(os.environ), ours_config(mode, plan.upstream_base, plan.tmp),
                                          plan, "ours")
    try:
        if mode == "auth":
            key, why = generate_key(base)
            if key is None:
                raise RuntimeError(f"this gateway made no virtual key: {why}")
            send_with(server, key)
        if mode == "master":
            send_with(server, MASTER_KEY)
        measure(server, proc, base, plan)
    finally:
        stop(proc)


def run_litellm(server: Server, mode: str, plan: Plan, venv: litellm.Venv) -> None:
    """LiteLLM in the mode's configuration; a failure is recorded in ``server.error``, never raised."""
    command = litellm.command(venv, Path("{config}"), HOST, 0)
    command[command.index("--port") + 1] = "{port}"
    config = litellm.config(plan.upstream_base, UPSTREAM_KEY,
                            master_key=MASTER_KEY if mode in ("master", "auth") else None, cache=mode == "cache")
    proc = None
    log_path: Path | None = None
    try:
        proc, base, server.ready_s, log_path = start(command, litellm.environment(), config, plan, "litellm")
        if mode == "auth":
            key, why = generate_key(base)
            if key is None:
                key, server.note = MASTER_KEY, f"{litellm.NO_KEYS}; its `/key/generate` answered {why}"
            send_with(server, key)
        if mode == "master":
            send_with(server, MASTER_KEY)
        measure(server, proc, base, plan)
    except (RuntimeError, OSError, ValueError, KeyError) as exc:
        server.error = one_line(exc, log_path, litellm.WORK_DIR / f"litellm-{mode}.log")
    finally:
        stop(proc)


def one_line(exc: BaseException, log_path: Path | None, keep: Path) -> str:
    """What went wrong in one table cell: the exception's first line and the log's last error lines; the
    whole log is copied to ``keep``."""
    said = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {said[0] if said else ''}"
    if log_path is not None and log_path.exists():
        keep.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log_path, keep)
        errors = [line.strip() for line in log_tail(log_path, 20_000).splitlines()
                  if line[:1].strip() and "error" in line.lower()]
        text += "; its log: " + " / ".join(errors[-2:]) + f" (all of it in {keep})"
    return text.replace("|", "/")


# ---- the run --------------------------------------------------------------------------------------


def run(modes: tuple[str, ...] = MODES, sequential: int = 1000, concurrent: int = 3000,
        concurrencies: tuple[int, ...] = (32, 128), litellm_sequential: int = 300, litellm_concurrent: int = 1000,
        timeout: float = 1500.0, warmup: int = 50, pin: bool = True,
        litellm_venv: Path | None = litellm.DEFAULT_VENV, install: bool = True, rounds: int = 3) -> Results:
    """Start the upstream; per mode, our gateway then LiteLLM's proxy, every case; stop everything.
    ``litellm_venv`` None leaves LiteLLM out; ``install`` False uses only a venv already there."""
    started = time.monotonic()
    deadline = started + timeout
    pins = processes.pinning(pin)
    gateway_cores, other_cores = pins if pins else (None, None)
    concurrency = list(concurrencies)
    env = machine_env(
        modes=list(modes), sequential=sequential, concurrent=concurrent, concurrencies=concurrency,
        litellm_sequential=litellm_sequential, litellm_concurrent=litellm_concurrent, warmup=warmup, timeout=timeout,
        rounds=rounds,
        pinned=f"gateway on core {min(gateway_cores)}, upstream and client on core {min(other_cores)}"
        if gateway_cores and other_cores else "")
    venv = litellm.prepare(litellm_venv, install=install) if litellm_venv is not None else None
    runs = []
    upstream = None
    with this_process_on(other_cores), tempfile.TemporaryDirectory(prefix="bench-gateway-") as tmp:
        try:
            port = free_port()
            upstream = subprocess.Popen([sys.executable, "-m", "bench.zero_delay_upstream", str(port)], cwd=ROOT,
                                        stdin=subprocess.DEVNULL, preexec_fn=pinned_to(other_cores))
            processes.wait_for_port(port, upstream, min(deadline, time.monotonic() + 30))
            plan = Plan(f"http://{HOST}:{port}", gateway_cores, deadline, warmup, tmp, rounds)
            for mode in modes:
                direct = upstream_cases(sequential, concurrent, concurrency)
                for case in direct.values():
                    asyncio.run(run_rounds(plan.upstream_base, case, deadline, warmup, rounds=rounds))
                current = ModeRun(mode, list(direct.values()))
                runs.append(current)
                ours = Server("ours", server_cases("ours", sequential, concurrent, concurrency, direct))
                current.servers.append(ours)
                run_ours(ours, mode, plan)
                if venv is not None:
                    theirs = Server("litellm", server_cases("litellm", litellm_sequential, litellm_concurrent,
                                                            concurrency, direct))
                    current.servers.append(theirs)
                    if venv.ready:
                        run_litellm(theirs, mode, plan, venv)
                    else:
                        theirs.error = venv.note
        finally:
            stop(upstream)
    env["wall_s"] = time.monotonic() - started
    return Results(runs, env, venv)


def main(argv: list[str] | None = None) -> int:
    from bench import gateway_report as report

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--auth", action="store_true", help="the auth configuration only (as --modes auth)")
    parser.add_argument("--requests", type=int, default=1000, help="requests per route at concurrency 1 (ours)")
    parser.add_argument("--concurrent-requests", type=int, default=3000, help="requests per concurrent case (ours)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--litellm-requests", type=int, default=300,
                        help="LiteLLM's requests per route at concurrency 1")
    parser.add_argument("--litellm-concurrent-requests", type=int, default=1000,
                        help="LiteLLM's requests per concurrent case")
    parser.add_argument("--litellm-venv", type=Path, default=litellm.DEFAULT_VENV,
                        help=f"LiteLLM's venv, installed there when missing (default {litellm.DEFAULT_VENV})")
    parser.add_argument("--no-litellm", action="store_true", help="ours alone")
    parser.add_argument("--no-install", action="store_true", help="use LiteLLM's venv only if it is already there")
    parser.add_argument("--warmup", type=int, default=50, help="unrecorded requests before each case")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of each concurrent case (every gateway); the median round is reported")
    parser.add_argument("--timeout", type=float, default=1500.0, help="hard limit for the whole run, seconds")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the gateway and the load to separate cores")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    modes = ("auth",) if args.auth else tuple(dict.fromkeys(args.modes))
    results = run(modes, args.requests, args.concurrent_requests, tuple(args.concurrency), args.litellm_requests,
                  args.litellm_concurrent_requests, args.timeout, args.warmup, pin=not args.no_pin,
                  litellm_venv=None if args.no_litellm else args.litellm_venv, install=not args.no_install,
                  rounds=args.rounds)
    results.env["command"] = "python -m bench.gateway" + "".join(f" {a}" for a in (argv if argv is not None
                                                                                    else sys.argv[1:]))
    sections = report.sections(results)
    print("\n".join(sections.values()))
    for run_ in results.runs:
        for server in run_.servers:
            for case in server.cases:
                if case.first_error:
                    print(f"first error in {case.name!r} ({run_.mode}, concurrency {case.concurrency}): "
                          f"{case.first_error}", file=sys.stderr)
    print(f"run took {results.env['wall_s']:.0f} s", file=sys.stderr)
    if not args.no_write:
        report.write(sections)
    ours_errors = sum(c.errors for r in results.runs for c in r.upstream + r.servers[0].cases)
    return 1 if ours_errors else 0


if __name__ == "__main__":
    sys.exit(main())
