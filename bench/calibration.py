"""Calibration benchmark (issue 21): does a fit recover a known miscalibration, and what do the decision
log, its outcomes, its calibrators and its reports cost.

    python -m bench.calibration [--quick] [--pg-url postgresql://postgres@127.0.0.1:5432] [--no-pin]
                                [--no-write]

1. **Recovery**: a real gateway (tests/conftest.py ``start_gateway``, in this process; SQLite in a temporary
   folder) in front of ``TemperedTypeSafe`` upstreams (tests/fakes/tempered.py), which report a known
   truth at inverse temperature ``sharpen``: a 4-option choice question overconfident (sharpen 2.5: the
   right calibrator is temperature 2.5) and flattened (sharpen 1/2.5: temperature 0.4), and a yes/no
   (``noul``) question overconfident (Platt: a = 0.4, b = 0), one model group each. ``--train``
   requests each, outcomes drawn from the truth (seeded) and posted (``POST /v1/outcomes``, 1,000 a
   batch), ``POST /calibration/fit`` for the site; then ``--fresh`` new requests answered with the
   calibrator applied (``model_info.calibration: apply``), their outcomes posted, and
   ``GET /calibration/report`` for the site from the moment the fresh requests started (``start=``):
   raw against calibrated ECE, Brier and log loss on that held-out set, beside the fit's own held-out
   figures and the fitted temperature against the truth.
2. **Apply**: ``gateway.calibration.apply.apply`` on a 1-, 8- and 32-question result with a temperature
   calibrator active for every site (timeit, median of repeats, this process pinned to one core), and
   the whole ``calibrate`` step per request: with the sites hashed from the questions (no cache) and
   with the cache's digests reused.
3. **Ingest** (SQLite): ``--ingest`` logged decisions inserted directly (``insert_decisions``, as the
   outbox drain does), then ``record_outcomes`` in batches of 500 for half of them, the same again
   (every outcome replaced), and the other half over HTTP (``POST /v1/outcomes``, 500 a batch, one
   keep-alive client) to a gateway serving that file.
4. **Report** (PostgreSQL at ``--pg-url``, a ``dg_bench_<random>`` database created through the
   ``test`` database and dropped at the end): ``--pg-rows`` decision rows with outcomes loaded by COPY
   in time order over 30 days, 4 model groups, 50 sites (40 % of them calibrated), then
   ``VACUUM ANALYZE``; ``gateway.calibration.service.report`` timed for everything, one group, one
   site and one day (median of 3), its SQL and its Python (the bootstrap intervals) apart, and the
   plan of the slowest query (``EXPLAIN ANALYZE``).
5. **Decision-log overhead**: bench/gateway.py's method (its processes, its load client: the gateway
   on core 0, the zero-delay upstream and the client on core 1, each request followed by one straight to
   the upstream, *added* = gateway minus direct) for four gateway processes at once: the spend log off
   (``disable_spend_logs: true``: no outbox, so no decision log) and on with capture none, digest (the
   default) and full, their rounds interleaved; plus the log's own CPU per request in this process
   (``decision_rows`` and the larger outbox row).

Prints the tables and rewrites the "Calibration (issue 21)" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench.calibration_costs import (
    ApplyTiming,
    Ingest,
    ReportTiming,
    measure_apply,
    measure_ingest,
    measure_report,
    pinned,
)
from bench.calibration_doc import DOC, SECTION, judge, section, tables, write_section
from bench.calibration_overhead import Overhead, measure_drain, measure_log_cpu, measure_overhead
from bench.calibration_recovery import Recovery, measure_recovery
from bench.docs_section import machine_env

__all__ = ["DOC", "FULL", "PG_URL", "QUICK", "SECTION", "TINY", "Results", "Sizes", "judge", "main",
           "run", "section", "tables", "write_section"]

PG_URL = "postgresql://postgres@127.0.0.1:5432"


# ---- the sizes --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    train: int = 1000
    fresh: int = 20_000
    apply_number: int = 2000  # calls per timeit repeat (divided by the questions)
    apply_repeat: int = 9
    ingest: int = 40_000
    pg_rows: int = 1_000_000
    report_runs: int = 3
    overhead_rounds: int = 8
    overhead_requests: int = 250  # per round and configuration
    warmup: int = 30
    spread_seeds: int = 20  # offline fits of the same size on other outcome draws: the fit's own noise


FULL = Sizes()
QUICK = Sizes(train=1000, fresh=1000, apply_number=500, apply_repeat=5, ingest=6000, pg_rows=50_000,
              overhead_rounds=2, overhead_requests=100, warmup=20, spread_seeds=8)
TINY = Sizes(train=120, fresh=150, apply_number=20, apply_repeat=3, ingest=1000, pg_rows=3000, report_runs=1,
             overhead_rounds=1, overhead_requests=20, warmup=5, spread_seeds=2)


# ---- results ----------------------------------------------------------------------------------------

@dataclass
class Results:
    recoveries: list[Recovery]
    applies: list[ApplyTiming]
    ingests: list[Ingest]
    reports: list[ReportTiming]
    overheads: list[Overhead]
    log_cpu_us: dict[str, float]  # capture level -> decision_rows + the larger outbox row, per request
    env: dict[str, Any]
    plan: list[str] = field(default_factory=list)  # EXPLAIN ANALYZE of the slowest report query
    drain_us: dict[str, float] = field(default_factory=dict)  # the outbox drain's CPU per request
    notes: list[str] = field(default_factory=list)


# ---- the run ----------------------------------------------------------------------------------------


def run(sizes: Sizes = FULL, pg_url: str | None = PG_URL, pin: bool = True, base_dir: str | None = None,
        overhead: bool = True) -> Results:
    import aiohttp
    import httpx

    started = time.monotonic()
    env = machine_env(sqlite=sqlite3.sqlite_version, sqlalchemy=sa.__version__, aiohttp=aiohttp.__version__,
                      httpx=httpx.__version__, sizes=sizes)
    tmp = Path(tempfile.mkdtemp(prefix="dg-bench-calibration-", dir=base_dir))
    try:
        phase = time.monotonic()
        recoveries = measure_recovery(sizes, tmp)
        env["recovery_s"] = time.monotonic() - phase
        with pinned(pin) as where:
            env["apply_pinned"] = where
            applies = measure_apply(sizes)
            log_cpu = measure_log_cpu(sizes)
        phase = time.monotonic()
        ingests = measure_ingest(sizes, tmp)
        env["ingest_s"] = time.monotonic() - phase
        reports: list[ReportTiming] = []
        plan: list[str] = []
        if pg_url:
            phase = time.monotonic()
            reports, plan = measure_report(sizes, pg_url, env)
            env["report_phase_s"] = time.monotonic() - phase
        overheads: list[Overhead] = []
        drain: dict[str, float] = {}
        if overhead:
            drain = measure_drain(sizes, tmp)
            phase = time.monotonic()
            overheads, env["overhead_pinned"] = measure_overhead(sizes, tmp, pin)
            env["overhead_s"] = time.monotonic() - phase
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    env["wall_s"] = time.monotonic() - started
    results = Results(recoveries, applies, ingests, reports, overheads, log_cpu, env, plan, drain_us=drain)
    results.notes = judge(results)
    return results



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer fresh requests, rows and rounds (about a minute); the doc is written as well")
    parser.add_argument("--pg-url", default=PG_URL, help="PostgreSQL server for the report ('' to leave it out)")
    parser.add_argument("--no-overhead", action="store_true", help="leave out the decision-log overhead")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the timings and processes to cores")
    parser.add_argument("--dir", default=None, help="where the temporary files go (default: the system's)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    results = run(QUICK if args.quick else FULL, args.pg_url or None, pin=not args.no_pin, base_dir=args.dir,
                  overhead=not args.no_overhead)
    text = section(results)
    print(text)
    print(f"run took {results.env['wall_s']:.0f} s", file=sys.stderr)
    if not args.no_write:
        write_section(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
