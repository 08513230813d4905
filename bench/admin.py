"""Admin API latency on PostgreSQL at scale: every admin route a LiteLLM user calls, against a real gateway.

    python -m bench.admin [--keys 1000] [--teams 50] [--rows 100000] [--calls 100] [--warmup 10]
                          [--pg-url postgresql://postgres@127.0.0.1:5432] [--no-pin] [--no-write]

A PostgreSQL database of the benchmark's own on the server at ``--pg-url`` (``dg_bench_<random>``, created
and dropped; the server's other databases are not touched) is migrated (``open_database``: the Alembic
chain) and seeded without the HTTP API: ``--teams`` teams and ``--keys`` virtual keys (core INSERTs; each
key's id is the ``KeyHasher`` hash of a fresh ``sk-`` key, its ``spend`` the sum of its rows), then
``--rows`` spend rows over the last 30 days (``COPY``) and their daily roll-ups (``gateway.db.spend.rollup``,
what the outbox drain adds up, also by ``COPY``); then ``VACUUM ANALYZE`` (what autovacuum
leaves after a bulk insert: without it the counts scan the heap instead of an index). A gateway process
(``decisions-gateway --config ... --workers 1``) serves that database with two model groups (an upstream
that is never called) and the master key; with two or more cores (unless ``--no-pin``) it runs on core 0
and this client on core 1 (``sched_setaffinity``, as ``taskset`` does); PostgreSQL is not pinned. One
``httpx.Client``, one request at a time: per route ``--warmup`` unrecorded requests, then ``--calls``
timed ones, each from the request to its body read (status 200 checked); routes that name a key or a team
cycle through them. Prints a table (n, p50, p95, max, the response size) and rewrites the "Admin API at
... (PostgreSQL)" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

from bench.docs_section import machine_env, replace_section
from bench.gateway import gateway_command
from bench.load import percentile
from bench.outbox import drop_pg_database, pg_database
from bench.processes import HOST, free_port, pinned_to, pinning, stop, this_process_on, wait_for_http
from gateway.auth.keys import KeyHasher, display_prefix, generate_key, is_hash_id
from gateway.db.engine import Database, open_database
from gateway.db.models import Base, DailySpend, SpendLog, Team, VerificationToken
from gateway.db.spend import rollup

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Admin API at 1,000 keys and 100,000 spend rows (PostgreSQL)"
PG_URL = "postgresql://postgres@127.0.0.1:5432"
MASTER = "sk-bench-admin-master-0123456789"
SALT = "bench-admin-salt-0123456789abcdef"
GROUPS = {"jev": "typesafe/jev-latest", "jev-mini": "typesafe/jev-mini"}
DAYS = 30  # the spend rows lie over the last DAYS days (the spend report's default span)
SPAN_DAYS = 7  # /spend/logs?start_date=&end_date=: the last SPAN_DAYS days
TARGET_MS = 50.0
READY_TIMEOUT_S = 120.0
COPY_BATCH = 20_000


@dataclass
class Seeded:
    key_ids: list[str]
    team_ids: list[str]
    today: dt.date
    seconds: float


@dataclass
class Timing:
    route: str
    path: str  # the first path asked (the others differ only in the key or team they name)
    latencies_ms: list[float] = field(default_factory=list)  # from the request to the body read
    first_byte_ms: list[float] = field(default_factory=list)  # from the request to its first body bytes
    bytes: int = 0  # the last response's body

    def p(self, q: float) -> float:
        return percentile(self.latencies_ms, q)


@dataclass
class Results:
    env: dict[str, Any]
    timings: list[Timing]


# ---- seeding --------------------------------------------------------------------------------------


def spend_rows(key_ids: list[str], key_team: dict[str, str], aliases: dict[str, str], rows: int,
               now: dt.datetime, rng: random.Random) -> list[dict[str, Any]]:
    """``rows`` spend rows spread over the keys and the last ``DAYS`` days, newest at ``now``; a few failed."""
    out = []
    span_s = DAYS * 86_400 - 60
    for i in range(rows):
        key = key_ids[rng.randrange(len(key_ids))]
        group = "jev" if i % 3 else "jev-mini"
        start = now - dt.timedelta(seconds=rng.uniform(0, span_s))
        prompt, completion = rng.randint(200, 2000), rng.randint(1, 40)
        failed = i % 50 == 0
        out.append({
            "request_id": f"bench-{i:08d}", "api_key": key, "key_alias": aliases[key], "team_id": key_team[key],
            "model_group": group, "model": GROUPS[group], "model_id": f"dep-{group}",
            "custom_llm_provider": "typesafe", "call_type": "/v1/decisions", "prompt_tokens": prompt,
            "completion_tokens": completion, "total_tokens": prompt + completion,
            "spend": 0.0 if failed else round(prompt * 1e-7 + completion * 4e-7, 9), "startTime": start,
            "endTime": start + dt.timedelta(milliseconds=rng.randint(20, 900)), "status": 500 if failed else 200,
            "error_class": "UpstreamError" if failed else None,
        })
    return out


async def copy_rows(conn: Any, model: type[Base], rows: list[dict[str, Any]]) -> None:
    """COPY ``rows`` (dicts of one shape, column names of ``model``'s table) into that table, in batches."""
    if not rows:
        return
    name, columns = str(model.__tablename__), list(rows[0])
    unknown = set(columns) - {str(c.name) for c in sa.inspect(model).columns}
    if unknown:
        raise ValueError(f"{name}: not a column: {sorted(unknown)}")
    driver = (await conn.get_raw_connection()).driver_connection  # asyncpg's, in this transaction
    for start in range(0, len(rows), COPY_BATCH):
        records = [tuple(row[c] for c in columns) for row in rows[start:start + COPY_BATCH]]
        await driver.copy_records_to_table(name, records=records, columns=columns)


async def seed(db: Database, n_keys: int, n_teams: int, n_rows: int, seed_value: int = 20) -> Seeded:
    """Teams, keys, spend rows and their roll-ups, in one transaction, then VACUUM ANALYZE."""
    started = time.perf_counter()
    rng = random.Random(seed_value)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    hasher = KeyHasher(SALT.encode())
    team_ids = [f"bench-team-{i:03d}" for i in range(n_teams)]
    keys = [generate_key() for _ in range(n_keys)]
    key_ids = [hasher.hash(k) for k in keys]
    assert all(is_hash_id(k) for k in key_ids)
    key_team = {k: team_ids[i % n_teams] for i, k in enumerate(key_ids)}
    aliases = {k: f"bench-key-{i:05d}" for i, k in enumerate(key_ids)}
    logs = spend_rows(key_ids, key_team, aliases, n_rows, now, rng)
    key_spend: dict[str, float] = dict.fromkeys(key_ids, 0.0)
    team_spend: dict[str, float] = dict.fromkeys(team_ids, 0.0)
    for row in logs:
        key_spend[row["api_key"]] += row["spend"]
        team_spend[row["team_id"]] += row["spend"]
    team_values = [{"team_id": t, "team_alias": f"Bench team {i:03d}", "models": [], "spend": team_spend[t],
                    "max_budget": 1000.0, "rpm_limit": 10_000, "created_at": now - dt.timedelta(hours=i),
                    "updated_at": now} for i, t in enumerate(team_ids)]
    key_values = [{"token": k, "key_alias": aliases[k], "key_prefix": display_prefix(keys[i]), "team_id": key_team[k],
                   "models": [], "spend": key_spend[k], "max_budget": 100.0, "rpm_limit": 600, "tpm_limit": 100_000,
                   "metadata": {"owner": f"bench-{i % 7}"}, "tags": ["bench"],
                   "created_at": now - dt.timedelta(minutes=i), "updated_at": now}
                  for i, k in enumerate(key_ids)]
    async with db.engine.begin() as conn:
        await conn.execute(sa.insert(Team), team_values)
        await conn.execute(sa.insert(VerificationToken), key_values)
        await copy_rows(conn, SpendLog, logs)
        await copy_rows(conn, DailySpend, rollup(logs))
    async with db.engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        for model in (Team, VerificationToken, SpendLog, DailySpend):
            await conn.exec_driver_sql(f'VACUUM ANALYZE "{model.__tablename__}"')
    return Seeded(key_ids, team_ids, now.date(), time.perf_counter() - started)


# ---- the routes -----------------------------------------------------------------------------------


def routes(seeded: Seeded, n_keys: int) -> list[tuple[str, Callable[[int], str]]]:
    """(label, the i-th request's path and query) for every route measured."""
    keys, team_ids = seeded.key_ids, seeded.team_ids
    last_page = max(1, -(-n_keys // 10))
    span = f"start_date={seeded.today - dt.timedelta(days=SPAN_DAYS - 1)}&end_date={seeded.today}"
    return [
        ("GET /key/list (page 1)", lambda i: "/key/list"),
        (f"GET /key/list (page {last_page}, the last)", lambda i: f"/key/list?page={last_page}"),
        ("GET /key/list?return_full_object=true (100 a page)",
         lambda i: "/key/list?return_full_object=true&size=100"),
        ("GET /key/info?key=<id>", lambda i: f"/key/info?key={keys[i % len(keys)]}"),
        ("GET /team/list", lambda i: "/team/list"),
        ("GET /v2/team/list", lambda i: "/v2/team/list"),
        ("GET /team/info?team_id=", lambda i: f"/team/info?team_id={team_ids[i % len(team_ids)]}"),
        ("GET /spend/logs (the list, capped at 10,000)", lambda i: "/spend/logs"),
        ("GET /spend/logs?api_key=<id>", lambda i: f"/spend/logs?api_key={keys[i % len(keys)]}"),
        (f"GET /spend/logs?start_date=&end_date= ({SPAN_DAYS} days, summarized)", lambda i: f"/spend/logs?{span}"),
        (f"GET /spend/logs?start_date=&end_date=&summarize=false ({SPAN_DAYS} days)",
         lambda i: f"/spend/logs?{span}&summarize=false"),
        ("GET /spend/logs/v2 (page 1)", lambda i: "/spend/logs/v2"),
        ("GET /spend/logs/ui (page 1)", lambda i: "/spend/logs/ui"),
        ("GET /global/spend/report", lambda i: "/global/spend/report"),
        ("GET /model/info", lambda i: "/model/info"),
        ("GET /v1/model/info", lambda i: "/v1/model/info"),
        ("GET /model_group/info", lambda i: "/model_group/info"),
    ]


def measure(base: str, plan: list[tuple[str, Callable[[int], str]]], calls: int, warmup: int) -> list[Timing]:
    out = []
    clock = time.perf_counter
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {MASTER}"}, timeout=60, trust_env=False) as c:
        for label, path in plan:
            timing = Timing(label, path(0))
            for i in range(warmup + calls):
                started = clock()
                with c.stream("GET", path(i)) as response:
                    chunks = response.iter_bytes()
                    body = next(chunks, b"")
                    first = (clock() - started) * 1000
                    body += b"".join(chunks)
                elapsed = (clock() - started) * 1000
                if response.status_code != 200:
                    raise RuntimeError(f"{label}: HTTP {response.status_code}: {body[:300]!r}")
                if i >= warmup:
                    timing.latencies_ms.append(elapsed)
                    timing.first_byte_ms.append(first)
                timing.bytes = len(body)
            out.append(timing)
    return out


# ---- the gateway process --------------------------------------------------------------------------


def gateway_config(database_url: str) -> dict[str, Any]:
    return {"model_list": [{"model_name": name, "litellm_params": {
                "model": model, "api_key": "ts-bench-not-a-key", "api_base": "http://127.0.0.1:9/v1"}}
                           for name, model in GROUPS.items()],
            "general_settings": {"master_key": MASTER, "salt_key": SALT, "database_url": database_url}}


def start_gateway(folder: Path, database_url: str, cores: set[int] | None) -> tuple[subprocess.Popen[bytes], str]:
    config = folder / "config.yaml"
    config.write_text(json.dumps(gateway_config(database_url), indent=2))  # JSON is YAML
    port = free_port()
    log_path = folder / "gateway.log"
    env = {**os.environ, "DECISIONS_GATEWAY_DATA_DIR": str(folder / "data"), "PYTHONPATH": str(ROOT)}
    for name in ("DECISIONS_GATEWAY_MASTER_KEY", "DECISIONS_GATEWAY_SALT_KEY", "DECISIONS_GATEWAY_CONFIG"):
        env.pop(name, None)
    argv = gateway_command() + ["--config", str(config), "--host", HOST, "--port", str(port), "--workers", "1",
                                "--log-level", "warning"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=folder,
                                env=env, preexec_fn=pinned_to(cores))
    base = f"http://{HOST}:{port}"
    try:
        wait_for_http(f"{base}/health/readiness", proc, time.monotonic() + READY_TIMEOUT_S, log_path)
    except BaseException:
        stop(proc)
        raise
    return proc, base


# ---- the run --------------------------------------------------------------------------------------


async def _prepare(url: str, keys: int, n_teams: int, rows: int) -> Seeded:
    db = await open_database(url)
    try:
        return await seed(db, keys, n_teams, rows)
    finally:
        await db.close()


def run(keys: int = 1000, rows: int = 100_000, n_teams: int | None = None, calls: int = 100, warmup: int = 10,
        pg_url: str = PG_URL, pin: bool = True) -> Results:
    n_teams = n_teams or max(1, round(keys / 20))
    pins = pinning(pin)
    gateway_cores, client_cores = pins if pins else (None, None)
    env = machine_env(keys=keys, teams=n_teams, rows=rows, calls=calls, warmup=warmup, httpx=httpx.__version__,
                      sqlalchemy=sa.__version__,
                      pinned=f"gateway on core {min(gateway_cores)}, client on core {min(client_cores)}"
                      if gateway_cores and client_cores else "")
    created = asyncio.run(pg_database(pg_url))
    if created is None:
        raise RuntimeError(f"PostgreSQL is not reachable at {pg_url}")
    name, env["postgresql"] = created
    url = f"{pg_url.rstrip('/')}/{name}"
    proc = None
    try:
        seeded = asyncio.run(_prepare(url, keys, n_teams, rows))
        env["seed_s"] = seeded.seconds
        with tempfile.TemporaryDirectory(prefix="bench-admin-") as tmp, this_process_on(client_cores):
            proc, base = start_gateway(Path(tmp), url, gateway_cores)
            try:
                timings = measure(base, routes(seeded, keys), calls, warmup)
            finally:
                stop(proc)
    finally:
        asyncio.run(drop_pg_database(pg_url, name))
    return Results(env, timings)


def table(results: Results) -> list[str]:
    rows = ["| route | n | p50 ms | p95 ms | max ms | first byte p95 ms | response bytes |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for t in results.timings:
        flag = " **over 50 ms**" if t.p(95) >= TARGET_MS else ""
        rows.append(f"| {t.route} | {len(t.latencies_ms)} | {t.p(50):.1f} | {t.p(95):.1f}{flag} "
                    f"| {max(t.latencies_ms):.1f} | {percentile(t.first_byte_ms, 95):.1f} | {t.bytes:,} |")
    return rows


def section(results: Results) -> str:
    env = results.env
    load1, load5, _ = env["load_start"]
    teams_label = f"{env['teams']} team{'s' if env['teams'] != 1 else ''}"
    pinned = (f", {env['pinned']} (`sched_setaffinity`, as `taskset` does; PostgreSQL unpinned)" if env["pinned"]
              else "")
    method = (
        f"`python -m bench.admin --keys {env['keys']} --rows {env['rows']}` ({env['keys']:,} virtual keys in "
        f"{teams_label}, {env['rows']:,} spend rows over the last {DAYS} days and their daily roll-ups, seeded "
        f"in {env['seed_s']:.1f} s by INSERT and COPY into a database of the run's own, migrated by the Alembic "
        f"chain, then VACUUM ANALYZE (autovacuum's steady state); PostgreSQL {env['postgresql'].split()[0]} on "
        f"127.0.0.1; {env['python']}, {env['cpus']} CPUs ({env['machine']}, shared), httpx {env['httpx']}, "
        f"SQLAlchemy {env['sqlalchemy']}, {env['date']}; load average {load1:.2f} (1 min) / {load5:.2f} (5 min) "
        "at the start). One gateway process (`--workers 1`, two model groups, the master key) on that database"
        f"{pinned}. One `httpx.Client` with the master key, one request at a time: per route {env['warmup']} "
        f"unrecorded requests, then {env['calls']} timed from the request to the body read (200 checked; and to the "
        "body's first bytes, *first byte*); the "
        "routes naming a key or a team cycle through them. The list routes at their defaults (`/key/list` and "
        "`/v2/team/list` 10 a page, `/spend/logs/v2` 50, `/team/list` every team); the span is the last "
        f"{SPAN_DAYS} days. Target: p95 under 50 ms. `/spend/logs` without a summary is LiteLLM's unpaged list: "
        "up to 10,000 rows (6 MB of JSON) in one response, sent a chunk of 1,000 rows at a time as they are read: "
        "its first bytes come within the target, the whole of it is over it by its size (fetching that many rows "
        "from PostgreSQL alone takes about 45 ms here); the other routes answer in pages or from the roll-ups.")
    return "\n".join([SECTION, "", method, "", *table(results), ""])


def write_section(text: str, doc: Path | None = None) -> None:
    """Replace this bench's section of ``doc`` (append it when absent); keep the rest."""
    replace_section(doc or DOC, SECTION, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=1000, help="virtual keys seeded")
    parser.add_argument("--teams", type=int, default=None, help="teams seeded (default: one per 20 keys)")
    parser.add_argument("--rows", type=int, default=100_000, help="spend rows seeded")
    parser.add_argument("--calls", type=int, default=100, help="timed requests per route")
    parser.add_argument("--warmup", type=int, default=10, help="unrecorded requests before each route")
    parser.add_argument("--pg-url", default=PG_URL, help="PostgreSQL server (the bench makes its own database)")
    parser.add_argument("--no-pin", action="store_true", help="leave the gateway and the client unpinned")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    results = run(args.keys, args.rows, args.teams, args.calls, args.warmup, args.pg_url, pin=not args.no_pin)
    text = section(results)
    if not args.no_write:
        write_section(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
