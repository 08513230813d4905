"""The decision log's SQL on SQLite and PostgreSQL: decisions ride with their spend rows (idempotently), outcomes
land on them, and the report's SQL aggregates equal the pure measures computed from the decisions themselves."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from prometheus_client import generate_latest

from gateway.calibration import measures
from gateway.calibration.report import measures_of
from gateway.calibration.service import gauge_figures, report
from gateway.db.calibration_report import Filters, bin_totals
from gateway.db.decision_export import export_rows, purge_inputs
from gateway.db.outcomes import OutcomeIn, Scope, record_outcomes
from gateway.db.spend import insert_spend_rows, normalise_row
from gateway.decisionlog.rows import figures
from gateway.observability.metrics import Metrics
from tests.db.rows import DAY, scalar, spend_row

SITES = ("a" * 32, "b" * 32)


def decision(index: int, probabilities: list[float], site: str, *, served: list[float] | None = None) -> dict:
    best, confidence, bin_, sum_sq = figures(probabilities)
    cal = figures(served) if served is not None else (best, confidence, bin_, sum_sq)
    return {"question_index": index, "question": f"q{index}", "question_name": None, "site": site, "kind": "choice",
            "options": ["x", "y", "z"], "probabilities": probabilities, "top_index": best, "confidence": confidence,
            "bin": bin_, "sum_sq": sum_sq, "served": served, "calibrator_id": 1 if served else None,
            "cal_top_index": cal[0], "cal_confidence": cal[1], "cal_bin": cal[2], "cal_sum_sq": cal[3],
            "cached": False, "model_group": "jev", "model_id": None, "model": "typesafe/jev-latest",
            "model_version": "jev-1", "api_key": "hash-a", "team_id": "team-a", "user": None,
            "input_digest": "sha256:" + "0" * 64}


def world(n: int, seed: int = 3) -> tuple[list[dict], list[OutcomeIn], list[measures.Decision]]:
    rng = random.Random(seed)
    rows, outcomes, truth = [], [], []
    for i in range(n):
        weights = [rng.random() ** 3 + 0.01 for _ in range(3)]
        p = [w / sum(weights) for w in weights]
        served = [v ** 0.5 for v in p]
        served = [v / sum(served) for v in served] if i % 2 else None
        row = spend_row(i, team_id="team-a", decisions=[decision(0, p, SITES[i % 2], served=served)])
        if i % 5 == 0:
            row["decision_input"] = {"content": f'{{"state": "input {i}"}}'}
        rows.append(normalise_row(row))
        outcome = rng.randrange(3)
        weight = 1.0 + (i % 3)
        outcomes.append(OutcomeIn(f"req-{i}", "q0", ["x", "y", "z"][outcome], weight))
        truth.append(measures.Decision(tuple(p), outcome, weight))
    return rows, outcomes, truth


@pytest.mark.asyncio(loop_scope="function")
async def test_the_reports_sql_equals_the_measures_of_the_decisions(db):
    rows, outcomes, truth = world(200)
    assert await insert_spend_rows(db, rows) == 200
    assert await insert_spend_rows(db, rows) == 0  # a replayed batch: nothing twice
    assert await scalar(db, "SELECT count(*) FROM decisions") == 200
    recorded = await record_outcomes(db, outcomes, Scope(team_id="team-a"))
    assert (recorded.written, recorded.replaced) == (200, 0)
    assert (await record_outcomes(db, outcomes[:10], Scope(everything=True))).replaced == 10
    expected = measures.measures(truth)
    got = measures_of([r for r in await bin_totals(db, Filters()) if not r.calibrated])
    assert got["n"] == pytest.approx(expected.n)
    for name in ("accuracy", "brier", "log_loss", "ece"):
        assert got[name] == pytest.approx(getattr(expected, name), rel=1e-9), name
    assert [b["n"] for b in got["bins"]] == pytest.approx([b.n for b in expected.bins])
    body = await report(db, Filters(model_group="jev"), {SITES[0]: "refund"})
    assert [s["site"] for s in body["sites"]] == list(SITES) and body["sites"][0]["name"] == "refund"
    assert sum(s["raw"]["n"] for s in body["sites"]) == pytest.approx(expected.n)
    (model,) = body["models"]
    assert model["model_version"] == "jev-1" and model["raw"]["ece"] == pytest.approx(expected.ece)
    assert model["calibrated"]["ece"] != pytest.approx(model["raw"]["ece"])  # half were served calibrated
    low, high = model["raw"]["ece_interval"]
    assert low <= model["raw"]["ece"] <= high
    other = await report(db, Filters(scope=Scope(team_id="team-b")), {})
    assert other["sites"] == []  # another team's report holds none of these


@pytest.mark.asyncio(loop_scope="function")
async def test_time_filters_export_purge_and_the_gauges(db):
    rows, outcomes, _ = world(40)
    await insert_spend_rows(db, rows)
    await record_outcomes(db, outcomes[:30], Scope(everything=True))
    early = await report(db, Filters(end=DAY + dt.timedelta(seconds=20)), {})
    assert sum(s["raw"]["n"] for s in early["sites"]) == pytest.approx(sum(o.weight for o in outcomes[:20]))
    exported = [r async for r in export_rows(db, Filters())]
    assert [r["request_id"] for r in exported] == [f"req-{i}" for i in range(40)]
    assert exported[0]["input"] == '{"state": "input 0"}' and exported[1]["input"] is None
    assert exported[35]["outcome"] is None and exported[0]["outcome"] in ("x", "y", "z")
    assert len([r async for r in export_rows(db, Filters(), with_outcomes_only=True)]) == 30
    assert await purge_inputs(db, DAY + dt.timedelta(seconds=12)) == 3  # inputs 0, 5, 10
    assert await scalar(db, "SELECT count(*) FROM decision_inputs") == 5
    figures_now = await gauge_figures(db, {SITES[0]: "refund"}, now=DAY)
    assert {(g, s, p) for g, s, p, _, _ in figures_now} == {
        ("jev", "all", "raw"), ("jev", "all", "calibrated"), ("jev", "refund", "raw"), ("jev", "refund", "calibrated")}

    class Registry:  # the labeller's view of the config: one group, jev
        names = ("jev",)
        deployments = ()

        def group(self, name):
            return ()

    metrics = Metrics(Registry())
    metrics.calibration(figures_now)
    text = generate_latest(metrics.registry).decode()
    assert 'decisions_gateway_calibration_ece{model_group="jev",probabilities="raw",site="refund"}' in text
