"""Spend outbox benchmark: what an append costs the request path, and how fast the outbox drains.

    python -m bench.outbox [--rows 20000] [--full-rows 2000] [--pg-url postgresql://postgres@127.0.0.1:5432]
                           [--dir /tmp] [--no-write]

``append`` is ``SpendOutbox.append`` of a typical spend row (normalised, encoded as JSON, one autocommit
INSERT into the process's WAL file), one at a time, each timed on its own, with ``synchronous=NORMAL``
(the default: durable against a process kill) and ``FULL`` (an fsync per append: durable against a power
cut); ``encode only`` is the normalising and JSON part alone. ``drain`` is ``drain_once`` of ``--rows``
rows in batches of 500 into a fresh database: a SQLite file (WAL, synchronous=FULL) and a PostgreSQL
database of the benchmark's own on the server at ``--pg-url`` (created and dropped; left out when the
server cannot be reached); ``replay`` drains the same rows again, all of them already present (what a
restart after a crash between commit and delete costs). Files go to a temporary folder under
``--dir``. Prints a table and rewrites the "Spend outbox" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import shutil
import sqlite3
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy
from sqlalchemy.ext.asyncio import create_async_engine

from bench.docs_section import machine_env, replace_section
from bench.shared_state import Case as Timing  # a label and its latencies, with percentiles
from gateway.db.engine import async_url, open_database
from gateway.db.outbox import SpendOutbox, encode_row

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Spend outbox"
PG_URL = "postgresql://postgres@127.0.0.1:5432"
START = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)


def spend_row(i: int, run: str) -> dict[str, Any]:
    return {"request_id": f"{run}-{i}", "api_key": "9f" * 32, "key_alias": "bench", "team_id": None,
            "model_group": "jev", "model": "typesafe/jev-latest", "model_id": "dep-1",
            "custom_llm_provider": "typesafe", "call_type": "asystemone", "prompt_tokens": 812,
            "completion_tokens": 6, "cached_tokens": 0,
            "spend": 0.0000341, "startTime": START + dt.timedelta(milliseconds=i),
            "endTime": START + dt.timedelta(milliseconds=i + 180), "status": 200, "retries": 0, "fallbacks": 0,
            "cache_hits": 0, "cache_misses": 3, "metadata": {"route": "/v1/systemone", "questions": 3}}


@dataclass
class Drain:
    database: str
    rows: int
    drain_s: float
    replay_s: float


@dataclass
class Results:
    appends: list[Timing]
    drains: list[Drain]
    env: dict[str, Any]


def measure_appends(directory: Path, synchronous: str, n: int, warmup: int) -> Timing:
    outbox = SpendOutbox(directory, synchronous=synchronous)
    run = uuid.uuid4().hex[:8]
    timing = Timing("outbox", f"append, synchronous={synchronous}")
    clock = time.perf_counter
    for i in range(warmup + n):
        row = spend_row(i, run)
        start = clock()
        outbox.append(row)
        elapsed = clock() - start
        if i >= warmup:
            timing.latencies_us.append(elapsed * 1e6)
    outbox.own.close(remove_if_empty=False)
    return timing


def measure_encode(n: int, warmup: int) -> Timing:
    timing = Timing("outbox", "encode only (normalise + JSON)")
    clock = time.perf_counter
    for i in range(warmup + n):
        row = spend_row(i, "enc")
        start = clock()
        encode_row(row)
        elapsed = clock() - start
        if i >= warmup:
            timing.latencies_us.append(elapsed * 1e6)
    return timing


async def measure_drain(name: str, url: str, directory: Path, n: int) -> Drain:
    db = await open_database(url)
    try:
        outbox = SpendOutbox(directory, batch_size=500)
        run = uuid.uuid4().hex[:8]
        for i in range(n):
            outbox.append(spend_row(i, run))
        start = time.perf_counter()
        moved = await outbox.drain_once(db)
        drain_s = time.perf_counter() - start
        for i in range(n):
            outbox.append(spend_row(i, run))
        start = time.perf_counter()
        replayed = await outbox.drain_once(db)
        replay_s = time.perf_counter() - start
        assert moved == replayed == n and outbox.inserted_total == n and outbox.duplicates_total == n
        await outbox.close(db)
    finally:
        await db.close()
    return Drain(name, n, drain_s, replay_s)


async def admin(server: str, sql: str) -> str | None:
    """Run one statement on the server's ``postgres`` database outside a transaction; its first value."""
    engine = create_async_engine(async_url(f"{server.rstrip('/')}/postgres"), isolation_level="AUTOCOMMIT",
                                 connect_args={"timeout": 5})
    try:
        async with engine.connect() as conn:
            result = await conn.exec_driver_sql(sql)
            return str(result.scalar()) if result.returns_rows else None
    finally:
        await engine.dispose()


async def pg_database(server: str) -> tuple[str, str] | None:
    """A database of the benchmark's own and the server's version; None when the server cannot be reached."""
    name = f"dg_bench_{uuid.uuid4().hex[:10]}"
    try:
        version = await admin(server, "SHOW server_version")
    except (OSError, sqlalchemy.exc.SQLAlchemyError, TimeoutError):
        return None
    await admin(server, f'CREATE DATABASE "{name}"')
    return name, str(version)


async def drop_pg_database(server: str, name: str) -> None:
    await admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run(rows: int = 20000, full_rows: int = 2000, warmup: int = 500, pg_url: str | None = PG_URL,
        base_dir: str | None = None) -> Results:
    tmp = Path(tempfile.mkdtemp(prefix="dg-bench-outbox-", dir=base_dir))
    env = machine_env(sqlite=sqlite3.sqlite_version, sqlalchemy=sqlalchemy.__version__, rows=rows,
                      full_rows=full_rows, warmup=warmup, filesystem=_filesystem(tmp))
    try:
        appends = [measure_encode(rows, warmup),
                   measure_appends(tmp / "normal", "NORMAL", rows, warmup),
                   measure_appends(tmp / "full", "FULL", full_rows, min(warmup, full_rows // 10))]
        drains = [asyncio.run(measure_drain("SQLite file", f"sqlite:///{tmp / 'bench.db'}", tmp / "drain-sqlite",
                                            rows))]
        if pg_url:
            created = asyncio.run(pg_database(pg_url))
            if created is None:
                env["pg_missing"] = pg_url
            else:
                name, env["postgresql"] = created
                try:
                    drains.append(asyncio.run(measure_drain(
                        f"PostgreSQL {env['postgresql'].split()[0]}", f"{pg_url.rstrip('/')}/{name}",
                        tmp / "drain-pg", rows)))
                finally:
                    asyncio.run(drop_pg_database(pg_url, name))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Results(appends, drains, env)


def _filesystem(path: Path) -> str:
    best, kind = "", "?"
    try:
        with open("/proc/mounts") as mounts:
            for line in mounts:
                _dev, point, fstype, *_ = line.split()
                if str(path).startswith(point) and len(point) > len(best):
                    best, kind = point, fstype
    except OSError:
        pass
    return kind


def section(results: Results) -> str:
    env = results.env
    load1, load5, _ = env["load_start"]
    method = (
        f"`python -m bench.outbox` ({env['rows']:,} appends with synchronous=NORMAL and {env['full_rows']:,} with "
        f"FULL, one at a time, each timed on its own after {env['warmup']} unrecorded ones; drains of "
        f"{env['rows']:,} rows in batches of 500; {env['python']}, {env['cpus']} CPUs ({env['machine']}), SQLite "
        f"{env['sqlite']}, SQLAlchemy {env['sqlalchemy']}, outbox files on {env['filesystem']}, {env['date']}; "
        f"load average {load1:.2f} (1 min) / {load5:.2f} (5 min) at the start). An append is what the settle "
        "step pays per request before the response leaves: the row normalised, encoded as JSON and committed "
        "to the process's WAL file (NORMAL survives a kill of the process, FULL also a power cut, at an "
        "fsync per row). A drain inserts with `ON CONFLICT (request_id) DO NOTHING` and adds the new rows to "
        "the daily roll-ups in the same transaction; *replay* sends the same rows again, all already present."
        + (f" PostgreSQL was not reachable at {env['pg_missing']}: its row is missing." if env.get("pg_missing")
           else " PostgreSQL is the local server over loopback TCP; it shares the machine's cores.")
    )
    table = ["| append | p50 µs | p99 µs |", "|---|---:|---:|"]
    for timing in results.appends:
        table.append(f"| {timing.call} | {timing.percentile(50):,.1f} | {timing.percentile(99):,.1f} |")
    drains = ["| drain into | rows/s | replay rows/s |", "|---|---:|---:|"]
    for drain in results.drains:
        drains.append(f"| {drain.database} | {drain.rows / drain.drain_s:,.0f} | {drain.rows / drain.replay_s:,.0f} |")
    return "\n".join([SECTION, "", method, "", *table, "", *drains, ""])


def write_section(text: str, doc: Path | None = None) -> None:
    """Replace the "Spend outbox" section of ``doc`` (append it when absent); keep the rest."""
    replace_section(doc or DOC, SECTION, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20000, help="appends (NORMAL) and rows per drain")
    parser.add_argument("--full-rows", type=int, default=2000, help="appends with synchronous=FULL")
    parser.add_argument("--warmup", type=int, default=500, help="unrecorded appends before each case")
    parser.add_argument("--pg-url", default=PG_URL, help="PostgreSQL server for the drain ('' to leave it out)")
    parser.add_argument("--dir", default=None, help="where the temporary outbox files go (default: the system's)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    text = section(run(args.rows, args.full_rows, args.warmup, args.pg_url or None, args.dir))
    print(text)
    if not args.no_write:
        write_section(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
