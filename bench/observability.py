"""What the observer adds to the record step (gateway/observability): metrics and the request's log line.

    python -m bench.observability [--calls 2000] [--repeats 25] [--rounds 3] [--no-write]

The record step of ``gateway/pipeline.py`` on a finished 200 request (a configured group, its
deployment, usage, a cost, 1.2 ms upstream), without the spend log (its own bench is
``bench.outbox``), in five setups: no observer (the step as it was before metrics and logs joined
it), metrics, metrics and the JSON request line, and both again in prometheus-client's multiprocess
mode (``--workers N``: the values are written to memory-mapped files). The log line is formatted and
written (to /dev/null) by the writer thread; each timing waits for the writer to finish, so its work
is inside the figure. Each setup runs in a process of its own (the log handler and the multiprocess
mode are per process), pinned to one CPU when ``taskset`` is there, so the writer thread shares the
core as in a pinned gateway; ``--rounds`` times in turn, the best kept. Prints a table and rewrites
the "Observability" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.docs_section import machine_env, replace_section

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Observability"
SETUPS = {"no observer": ("none", False), "metrics": ("metrics", False), "metrics + log line": ("log", False),
          "metrics, multiprocess": ("metrics", True), "metrics + log line, multiprocess": ("log", True)}


def child(mode: str, calls: int, repeats: int) -> float:
    """Best microseconds per record step over ``repeats`` runs of ``calls`` requests (in this process)."""
    from gateway.config.loader import build_config
    from gateway.config.registry import ModelRegistry
    from gateway.context import RequestContext
    from gateway.observability import Observer, logs
    from gateway.pipeline import Pipeline, record
    from translators import systemone
    from translators.ir import DecisionResult, Usage

    config = build_config({"model_list": [{"model_name": "jev", "litellm_params": {
        "model": "typesafe/jev-latest", "api_key": "bench-key-0123456789", "api_base": "http://127.0.0.1:9"}}]},
        {}, source="bench")
    registry = ModelRegistry.from_config(config)
    pipeline = Pipeline(registry, None)
    observer = None
    if mode != "none":
        observer = Observer(config.general_settings, lambda: pipeline)
        logs.configure("json", "info" if mode == "log" else "warning", stream=open(os.devnull, "w"))
    result = DecisionResult(answers=(), model="jev-1.13-20260917", usage=Usage(input_tokens=100, output_tokens=3))

    def finished() -> RequestContext:
        ctx = RequestContext(request_id="req_" + os.urandom(16).hex(), route="/v1/systemone", wire=systemone)
        if observer is not None:
            observer.begin(pipeline, ctx)
        ctx.model_group, ctx.deployment, ctx.status, ctx.cost = "jev", registry.deployments[0], 200, 0.0012
        ctx.result, ctx.upstream_ms = result, 1.2
        return ctx

    contexts = iter([finished() for _ in range(calls * (repeats + 1))])
    for _ in range(calls):  # warm-up: every label child bound
        record(pipeline, next(contexts))
    best = float("inf")
    for _ in range(repeats):
        logs.flush(10)
        started = time.perf_counter()
        for _ in range(calls):
            record(pipeline, next(contexts))
        logs.flush(10)  # the writer thread's share
        best = min(best, time.perf_counter() - started)
    logs.unconfigure()
    return best / calls * 1e6


def run(calls: int = 2000, repeats: int = 25, rounds: int = 3) -> dict:
    pin = ["taskset", "-c", str((os.cpu_count() or 1) - 1)] if shutil.which("taskset") else []
    env = machine_env(calls=calls, repeats=repeats, rounds=rounds, pinned=bool(pin))
    best: dict[str, float] = {}
    for _ in range(rounds):
        for name, (mode, multiproc) in SETUPS.items():
            folder = tempfile.mkdtemp(prefix="bench-metrics-") if multiproc else None
            child_env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
            if folder:
                child_env["PROMETHEUS_MULTIPROC_DIR"] = folder
            try:
                out = subprocess.run([*pin, sys.executable, "-m", "bench.observability", "--child", mode,
                                      "--calls", str(calls), "--repeats", str(repeats)], cwd=ROOT, env=child_env,
                                     capture_output=True, text=True, check=True, timeout=600).stdout
            finally:
                if folder:
                    shutil.rmtree(folder, ignore_errors=True)
            best[name] = min(best.get(name, float("inf")), json.loads(out.strip().splitlines()[-1])["us"])
    return {"env": env, "us": best}


def section(results: dict) -> str:
    env, us = results["env"], results["us"]
    load1, load5, _ = env["load_start"]
    base = us["no observer"]
    method = (
        f"`python -m bench.observability` ({env['calls']:,} record steps per run, best of {env['repeats']} runs, "
        f"{env['rounds']} rounds of the setups in turn, each setup in a process of its own"
        f"{', pinned to one CPU' if env['pinned'] else ''}; {env['python']}, {env['cpus']} CPUs ({env['machine']}), "
        f"{env['date']}; load average {load1:.2f} (1 min) / {load5:.2f} (5 min) at the start). The record step "
        "of a finished 200 request without the spend log. The log line's figure includes the writer thread "
        "formatting and writing it (JSON, to /dev/null); *multiprocess* is `--workers N` (values in "
        "memory-mapped files).")
    rows = ["| setup | µs per request | added |", "|---|---:|---:|"]
    rows += [f"| {name} | {value:,.2f} | {value - base:+,.2f} |" for name, value in us.items()]
    return "\n".join([SECTION, "", method, "", *rows, ""])


def write_section(text: str, doc: Path | None = None) -> None:
    replace_section(doc or DOC, SECTION, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="record steps per timed run (below 10,000: "
                        "the log queue's size, so no line is dropped)")
    parser.add_argument("--repeats", type=int, default=25, help="timed runs per setup; the best is kept")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every setup, in turn")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    parser.add_argument("--child", choices=["none", "metrics", "log"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps({"us": child(args.child, args.calls, args.repeats)}))
        return 0
    text = section(run(args.calls, args.repeats, args.rounds))
    print(text)
    if not args.no_write:
        write_section(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
