"""The calibration bench's cost timings (bench/calibration.py, parts 2 to 4): ``apply`` and the calibrate
step in process, outcomes ingest on SQLite (directly and over HTTP), and the report on PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import math
import os
import random
import statistics
import time
import timeit
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from bench import calibration_load as load
from bench.calibration_recovery import LABELS, SCENARIOS, TS_KEY, data_dir, outcome_of

if TYPE_CHECKING:
    from bench.calibration import Sizes

PG_ADMIN_DB = "test"
INGEST_BATCH = 500


@dataclass
class ApplyTiming:
    questions: int
    apply_us: float  # per call
    step_hashing_us: float  # the calibrate step per request, sites hashed from the questions
    step_cached_us: float  # with the cache's digests
    apply_best_us: float  # the fastest repeat's (a loaded machine moves the median)


@dataclass
class Ingest:
    how: str
    outcomes: int
    seconds: float

    @property
    def per_s(self) -> float:
        return self.outcomes / self.seconds if self.seconds > 0 else math.nan


@dataclass
class ReportTiming:
    label: str
    runs_s: list[float]
    sites: int
    outcomes: float  # the report's n (every site's raw n together)
    sql_s: float  # totals (one scan), once
    python_s: float  # build (the bootstrap intervals), once
    models: int = 0  # the report's per-model rows (each with two intervals, as each site)


# ---- 2. apply and the calibrate step ----------------------------------------------------------------


@contextlib.contextmanager
def pinned(enabled: bool) -> Iterator[str]:
    """This process on one core for the block (the last one it may use), then back; says which."""
    if not enabled or not hasattr(os, "sched_setaffinity"):
        yield "not pinned"
        return
    before = os.sched_getaffinity(0)
    core = max(before)
    os.sched_setaffinity(0, {core})
    try:
        yield f"pinned to core {core}"
    finally:
        os.sched_setaffinity(0, before)


def _time(call: Callable[[], Any], number: int, repeat: int, best: list[float] | None = None) -> float:
    """Median seconds per call over ``repeat`` runs of ``number`` calls (the fastest run's into ``best``)."""
    call()
    runs = timeit.Timer(call).repeat(repeat, number)
    if best is not None:
        best.append(min(runs) / number)
    return statistics.median(runs) / number


def _run_sync(coro: Any) -> None:
    """Run a coroutine that never awaits anything pending (the calibrate step) to its end."""
    try:
        coro.send(None)
    except StopIteration:
        return
    raise RuntimeError("the coroutine awaited something")


def measure_apply(sizes: Sizes, counts: tuple[int, ...] = (1, 8, 32)) -> list[ApplyTiming]:
    rng = random.Random(2)
    return [_apply_case(n, sizes, rng) for n in counts]


def _apply_case(n: int, sizes: Sizes, rng: random.Random) -> ApplyTiming:
    from gateway.calibration.apply import Active, CalibratorSet, apply
    from gateway.calibration.fitting import Calibrator
    from gateway.calibration.site import sites
    from gateway.calibration.step import calibrate
    from gateway.context import RequestContext
    from gateway.decisionlog.settings import DecisionLogSettings
    from translators import systemone
    from translators.ir import Answer, DecisionResult

    questions = {f"q{i}": {"type": "choice", "instructions": f"Question {i}: the message's tone?", "criteria": LABELS}
                 for i in range(n)}
    req = systemone.parse_request({"model": "jev", "state": "A message to judge.", "questions": questions})
    site_list = list(sites(req))
    answers = []
    for q in req.questions:
        p = load.random_probabilities(rng, len(LABELS))
        answers.append(Answer(q.id, "choice", p, max(p)))
    result = DecisionResult("jev-1.13-20260917", tuple(answers))
    calibrators = CalibratorSet([("jev", s, Active(i + 1, 1, Calibrator("temperature", {"beta": 0.4})))
                                 for i, s in enumerate(site_list)])
    _, applied = apply(result, site_list, "jev", calibrators)
    assert applied is not None and all(i is not None for i in applied.calibrators)
    number = max(10, sizes.apply_number // n)
    fastest: list[float] = []
    apply_s = _time(lambda: apply(result, site_list, "jev", calibrators), number, sizes.apply_repeat, fastest)
    pipeline = SimpleNamespace(calibrators=calibrators, decision_log=DecisionLogSettings(calibrate=True))
    ctx = RequestContext("bench", "/v1/systemone", systemone, req=req, result=result, model_group="jev")

    def step() -> None:
        ctx.result = result
        _run_sync(calibrate(pipeline, ctx))

    step()
    assert ctx.headers["x-decisions-calibration"].startswith(f"applied; questions={n}/{n}")
    hashing_s = _time(step, number, sizes.apply_repeat)
    ctx.cache = SimpleNamespace(shas={q.id: bytes.fromhex(s) for q, s in zip(req.questions, site_list, strict=True)})
    cached_s = _time(step, number, sizes.apply_repeat)
    return ApplyTiming(n, apply_s * 1e6, hashing_s * 1e6, cached_s * 1e6, fastest[0] * 1e6)


# ---- 3. outcomes ingest on SQLite -------------------------------------------------------------------


def measure_ingest(sizes: Sizes, tmp: Path) -> list[Ingest]:
    path = tmp / "ingest.db"
    n = sizes.ingest
    ids = [f"ingest-{i:07d}" for i in range(n)]
    states = [f"ingest message {i}" for i in range(n)]
    scenario = SCENARIOS[0]
    rng = random.Random(3)
    values = [outcome_of(scenario, state, rng) for state in states]
    direct = asyncio.run(_ingest_direct(path, ids, values))
    half = n // 2
    warm = [{"request_id": rid, "question": "tone", "outcome": value}
            for rid, value in zip(ids[:INGEST_BATCH], values[:INGEST_BATCH], strict=True)]  # recorded already
    over_http = _ingest_http(path, tmp, ids[half:], values[half:], warm)
    return [*direct, over_http]


async def _ingest_direct(path: Path, ids: list[str], values: list[Any]) -> list[Ingest]:
    from gateway.db.engine import open_database
    from gateway.db.outcomes import OutcomeIn, Scope, record_outcomes

    db = await open_database(f"sqlite:///{path}")
    try:
        now = dt.datetime.now(dt.UTC)
        rng = random.Random(4)
        site = load.site_of("ingest-site")
        requests = []
        for i, rid in enumerate(ids):
            p = load.random_probabilities(rng, len(LABELS))
            row = load.decision_row(question="tone", site=site, kind="choice", options=list(LABELS), probabilities=p,
                                    served=None, calibrator_id=None, model_group="jev")
            requests.append((rid, now - dt.timedelta(seconds=len(ids) - i), [row]))
        for start in range(0, len(requests), 5000):
            await load.insert_logged(db, requests[start:start + 5000])
        half = len(ids) // 2
        items = [OutcomeIn(rid, "tone", value) for rid, value in zip(ids[:half], values[:half], strict=True)]
        out = []
        for how in ("record_outcomes, batches of 500 (new)", "record_outcomes, batches of 500 (replacing)"):
            began = time.perf_counter()
            for start in range(0, len(items), INGEST_BATCH):
                await record_outcomes(db, items[start:start + INGEST_BATCH], Scope(everything=True))
            out.append(Ingest(how, len(items), time.perf_counter() - began))
        return out
    finally:
        await db.close()


def _ingest_http(path: Path, tmp: Path, ids: list[str], values: list[Any], warm: list[dict[str, Any]]) -> Ingest:
    import httpx

    from tests.conftest import start_gateway

    with data_dir(tmp / "ingest-data"):
        gateway = start_gateway({"model_list": [{"model_name": "jev", "litellm_params": {
            "model": "typesafe/jev-latest", "api_key": TS_KEY, "api_base": "http://127.0.0.1:9", "timeout": 1}}],
            "general_settings": {"database_url": f"sqlite:///{path}"}})
    try:
        items = [{"request_id": rid, "question": "tone", "outcome": value}
                 for rid, value in zip(ids, values, strict=True)]
        with httpx.Client(timeout=60) as client:
            client.post(gateway.url + "/v1/outcomes", json={"outcomes": warm}).raise_for_status()  # unrecorded
            began = time.perf_counter()
            for start in range(0, len(items), INGEST_BATCH):
                batch = items[start:start + INGEST_BATCH]
                response = client.post(gateway.url + "/v1/outcomes", json={"outcomes": batch})
                if response.status_code != 200:
                    raise RuntimeError(f"POST /v1/outcomes answered {response.status_code}: {response.text[:300]}")
            seconds = time.perf_counter() - began
    finally:
        gateway.stop()
    return Ingest("POST /v1/outcomes, batches of 500 (new)", len(items), seconds)


# ---- 4. the report on PostgreSQL --------------------------------------------------------------------


async def pg_create(server: str) -> tuple[str, str] | None:
    """A ``dg_bench_<random>`` database made through the ``test`` database, and the server's version; None when
    the server cannot be reached."""
    import asyncpg  # type: ignore[import-untyped]

    name = f"dg_bench_{uuid.uuid4().hex[:10]}"
    try:
        conn = await asyncpg.connect(f"{server.rstrip('/')}/{PG_ADMIN_DB}", timeout=5)
    except (OSError, asyncpg.PostgresError, TimeoutError):
        return None
    try:
        version = str(await conn.fetchval("SHOW server_version"))
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return name, version


async def pg_drop(server: str, name: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(f"{server.rstrip('/')}/{PG_ADMIN_DB}", timeout=10)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def report_cases(layout: load.Layout, now: dt.datetime) -> list[tuple[str, Any]]:
    from gateway.db.calibration_report import Filters

    day = (now - dt.timedelta(days=3)).replace(hour=0, minute=0, second=0, microsecond=0)
    return [("everything", Filters()), (f"one group ({layout.groups[0]})", Filters(model_group=layout.groups[0])),
            ("one site", Filters(site=layout.site_names()[3])),
            ("one day", Filters(start=day, end=day + dt.timedelta(days=1)))]


def measure_report(sizes: Sizes, pg_url: str, env: dict[str, Any]) -> tuple[list[ReportTiming], list[str]]:
    created = asyncio.run(pg_create(pg_url))
    if created is None:
        env["pg_missing"] = pg_url
        return [], []
    name, env["postgresql"] = created
    try:
        return asyncio.run(_report(sizes, f"{pg_url.rstrip('/')}/{name}", env))
    finally:
        asyncio.run(pg_drop(pg_url, name))


async def _report(sizes: Sizes, url: str, env: dict[str, Any]) -> tuple[list[ReportTiming], list[str]]:
    from gateway.calibration import service
    from gateway.calibration.report import build
    from gateway.db.calibration_report import totals
    from gateway.db.engine import open_database

    db = await open_database(url)
    try:
        layout = load.Layout()
        now = dt.datetime.now(dt.UTC).replace(microsecond=0)
        began = time.perf_counter()
        await load.copy_logged(db, sizes.pg_rows, layout, now)
        env["pg_load_s"] = time.perf_counter() - began
        async with db.engine.connect() as conn:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql("VACUUM ANALYZE decisions")
            env["pg_table_mib"] = int((await conn.exec_driver_sql(
                "SELECT pg_total_relation_size('decisions')")).scalar() or 0) / 2**20
            env["pg_work_mem"] = (await conn.exec_driver_sql("SHOW work_mem")).scalar()
            env["pg_shared_buffers"] = (await conn.exec_driver_sql("SHOW shared_buffers")).scalar()
        out = []
        for label, filters in report_cases(layout, now):
            runs = []
            shown: dict[str, Any] = {}
            for _ in range(sizes.report_runs):
                began = time.perf_counter()
                shown = await service.report(db, filters, {})
                runs.append(time.perf_counter() - began)
            began = time.perf_counter()
            found = await totals(db, filters)
            sql_s = time.perf_counter() - began
            began = time.perf_counter()
            build(found.rows, found.labels, {}, {})
            python_s = time.perf_counter() - began
            out.append(ReportTiming(label, runs, len(shown["sites"]), sum(s["raw"]["n"] for s in shown["sites"]),
                                    sql_s, python_s, len(shown["models"])))
        plan = await _plan(db)
        return out, plan
    finally:
        await db.close()


async def _plan(db: Any) -> list[str]:
    """EXPLAIN ANALYZE of the report's one query over everything."""
    from gateway.db.calibration_report import Filters, totals_query

    query = totals_query(Filters())
    from sqlalchemy.dialects import postgresql

    text = str(query.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
    async with db.engine.connect() as conn:
        rows = (await conn.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + text)).all()
    return [str(r[0]) for r in rows]


