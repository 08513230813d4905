"""The calibration bench's decision-log overhead (bench/calibration.py, part 5): bench/gateway.py's
processes and load client for five gateway setups at once, the added p50 of each; and the log's own CPU
per request in this process (``decision_rows`` and the outbox row, then the outbox drain's inserts)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.calibration_costs import INGEST_BATCH, _time

if TYPE_CHECKING:
    from bench.calibration import Sizes

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Overhead:
    label: str
    latencies: list[float] = field(default_factory=list)
    paired: list[float] = field(default_factory=list)
    round_added: list[float] = field(default_factory=list)

    @property
    def added_p50(self) -> float:
        return _percentile(self.latencies, 50) - _percentile(self.paired, 50)

def _percentile(values: list[float], q: float) -> float:
    from bench.load import percentile

    return percentile(values, q)


# ---- 5. decision-log overhead on the no-auth p50 ----------------------------------------------------


def measure_log_cpu(sizes: Sizes) -> dict[str, float]:
    """Per request of bench/gateway.py's 3-question body: ``decision_rows`` at each capture level plus what the
    rows add to the outbox's encoding of the spend row (µs)."""
    from bench.zero_delay_upstream import S1_ANSWERS, systemone_body
    from gateway.context import RequestContext
    from gateway.db.outbox import encode_row
    from gateway.decisionlog.rows import decision_rows
    from gateway.spend.log import spend_row
    from providers.base import Deployment
    from translators import systemone
    from translators.systemone_upstream import parse_response

    raw = systemone_body("jev")
    req = systemone.parse_request(json.loads(raw))
    result = parse_response({"answers": S1_ANSWERS, "model": "jev-1.13-20260917"}, req)
    dep = _deployment(Deployment)
    ctx = RequestContext("bench-0001", "/v1/systemone", systemone, raw=raw, req=req, result=result,
                         model_group="jev", deployment=dep, status=200)
    number = max(50, sizes.apply_number)
    plain = spend_row(ctx)
    base = _time(lambda: encode_row(plain), number, sizes.apply_repeat)
    out = {}
    for capture in ("none", "digest", "full"):
        rows, captured = decision_rows(ctx, capture)
        assert len(rows) == 3
        row = {**plain, "decisions": rows, **({"decision_input": captured} if captured else {})}
        build = _time(lambda c=capture: decision_rows(ctx, c), number, sizes.apply_repeat)  # type: ignore[misc]
        encode = _time(lambda r=row: encode_row(r), number, sizes.apply_repeat)  # type: ignore[misc]
        out[capture] = (build + encode - base) * 1e6
    return out


def _deployment(cls: Any) -> Any:
    from gateway.config.loader import build_config

    config = build_config({"model_list": [{"model_name": "jev", "litellm_params": {
        "model": "typesafe/jev-latest", "api_key": "k", "api_base": "http://127.0.0.1:9"}}]}, {}, source="<bench>")
    dep = config.deployments[0]
    assert isinstance(dep, cls)
    return dep


def measure_drain(sizes: Sizes, tmp: Path) -> dict[str, float]:
    """What the outbox drain spends per request (µs), decoding the outbox rows and ``insert_spend_rows`` into a
    SQLite file in batches of 500, for bench/gateway.py's 3-question request with and without its decision rows:
    the drain's thread runs in the gateway's process, on its core."""
    from bench.zero_delay_upstream import S1_ANSWERS, systemone_body
    from gateway.context import RequestContext
    from gateway.db.outbox import encode_row
    from gateway.decisionlog.rows import decision_rows
    from gateway.spend.log import spend_row
    from providers.base import Deployment
    from translators import systemone
    from translators.systemone_upstream import parse_response

    raw = systemone_body("jev")
    req = systemone.parse_request(json.loads(raw))
    result = parse_response({"answers": S1_ANSWERS, "model": "jev-1.13-20260917"}, req)
    dep = _deployment(Deployment)
    n = max(INGEST_BATCH, sizes.ingest // 10)
    out = {}
    for label, with_rows in (("spend rows only", False), ("with decision rows (digest)", True)):
        bodies = []
        for i in range(n):
            ctx = RequestContext(f"drain-{label[:4]}-{i:06d}", "/v1/systemone", systemone, raw=raw, req=req,
                                 result=result, model_group="jev", deployment=dep, status=200)
            row = spend_row(ctx)
            if with_rows:
                row["decisions"] = decision_rows(ctx, "digest")[0]
            bodies.append(encode_row(row)[1])
        out[label] = asyncio.run(_drain_time(tmp / f"drain-{int(with_rows)}.db", bodies)) / n * 1e6
    return out


async def _drain_time(path: Path, bodies: list[str]) -> float:
    from gateway.db.engine import open_database
    from gateway.db.outbox import decode_row
    from gateway.db.spend import insert_spend_rows

    db = await open_database(f"sqlite:///{path}")
    try:
        await insert_spend_rows(db, [decode_row(b) for b in bodies[:10]])  # warm: the statements compiled
        began = time.perf_counter()
        for start in range(10, len(bodies), INGEST_BATCH):
            await insert_spend_rows(db, [decode_row(b) for b in bodies[start:start + INGEST_BATCH]])
        return (time.perf_counter() - began) * len(bodies) / (len(bodies) - 10)
    finally:
        await db.close()



@dataclass(frozen=True)
class Setup:
    label: str
    general_settings: dict[str, Any]
    capture: str = ""  # the decision log's capture level ("": no decision rows)
    stubbed: bool = False  # decision_rows replaced by one that logs nothing (this bench's patch, in that process)


OFF, STUBBED, DEFAULT = "spend log off", "spend log on, no decision rows", "decision log, capture digest (default)"
OVERHEAD_SETUPS = (
    Setup(f"{OFF} (disable_spend_logs: true)", {"disable_spend_logs": True}),
    Setup(f"{STUBBED} (bench-only stub)", {}, stubbed=True),
    Setup("decision log, capture none", {"decision_log": {"capture": "none"}}, "none"),
    Setup(DEFAULT, {}, "digest"),
    Setup("decision log, capture full", {"decision_log": {"capture": "full"}}, "full"),
)
# A gateway whose spend rows carry no decisions: the spend log and its outbox as they are, the decision log's
# rows never built (gateway/spend/log.py imports decision_rows by name; the patch replaces that name only).
STUB = ("import sys; import gateway.spend.log as spend; spend.decision_rows = lambda ctx, capture: ([], None); "
        "from gateway.cli import main; sys.exit(main(sys.argv[1:]))")


def measure_overhead(sizes: Sizes, tmp: Path, pin: bool) -> tuple[list[Overhead], str]:
    import subprocess

    from bench import gateway as gw
    from bench import processes
    from bench.load import Case, run_case
    from bench.zero_delay_upstream import UPSTREAM_KEY, systemone_body

    pins = processes.pinning(pin)
    gateway_cores, other_cores = pins if pins else (None, None)
    deadline = time.monotonic() + 600
    procs: list[subprocess.Popen[bytes]] = []
    upstream = None
    results = [Overhead(setup.label) for setup in OVERHEAD_SETUPS]
    with processes.this_process_on(other_cores):
        try:
            port = processes.free_port()
            upstream = subprocess.Popen([sys.executable, "-m", "bench.zero_delay_upstream", str(port)], cwd=ROOT,
                                        stdin=subprocess.DEVNULL, preexec_fn=processes.pinned_to(other_cores))
            processes.wait_for_port(port, upstream, time.monotonic() + 30)
            upstream_base = f"http://{gw.HOST}:{port}"
            plan = gw.Plan(upstream_base, gateway_cores, deadline, sizes.warmup, str(tmp))
            options = ["--config", "{config}", "--host", gw.HOST, "--port", "{port}", "--workers", "1",
                       "--log-level", "warning"]
            bases = []
            for setup in OVERHEAD_SETUPS:
                config = {"model_list": [{"model_name": "jev", "litellm_params": {
                    "model": "typesafe/jev-latest", "api_key": UPSTREAM_KEY, "api_base": upstream_base,
                    "timeout": 10}}], "general_settings": setup.general_settings}
                command = ([sys.executable, "-c", STUB] if setup.stubbed else gw.gateway_command()) + options
                env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get(
                    "PYTHONPATH")]))}
                proc, base, _ready, _log = gw.start(command, env, config, plan, "calibration")
                procs.append(proc)
                bases.append(base)
            body = systemone_body("jev")
            direct = Case("upstream alone", "upstream", "/v1/systemone", systemone_body("jev-latest"), 1, 0)
            for r in range(sizes.overhead_rounds):
                order = list(range(len(OVERHEAD_SETUPS)))
                order = order[r % len(order):] + order[:r % len(order)]
                for k in order:
                    case = Case(results[k].label, "ours", "/v1/systemone", body, 1, sizes.overhead_requests,
                                direct=direct, route="/v1/systemone")
                    asyncio.run(run_case(bases[k], case, deadline, sizes.warmup, upstream_base))
                    if case.errors:
                        raise RuntimeError(f"{case.name}: {case.errors} errors, the first {case.first_error}")
                    results[k].latencies += case.latencies
                    results[k].paired += case.paired
                    results[k].round_added.append(case.added(50))
        finally:
            for proc in procs:
                processes.stop(proc)
            processes.stop(upstream)
    pinned_text = (f"gateways on core {min(gateway_cores)}, upstream and client on core {min(other_cores)}"
                   if gateway_cores and other_cores else "not pinned")
    return results, pinned_text

