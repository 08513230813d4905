"""``decisions-gateway outcomes|calibration|decision-log`` as a shell runs them, on a config's SQLite database: import
outcomes from JSONL, export JSONL and parquet, report, fit, thresholds, a CI check that exits 1 when a site falls
short, rollback and purge."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from gateway.db.engine import open_database
from gateway.db.spend import insert_spend_rows, normalise_row
from tests.calibration.test_report_db import decision
from tests.db.rows import spend_row

SITE = "c" * 32
N = 300


def yes_no(i: int, rng: random.Random) -> tuple[dict, bool]:
    """A yes/no decision whose P(yes) is right: the outcome is yes with that probability."""
    p = rng.random()
    row = decision(0, [p, 1 - p], SITE)
    row.update(kind="yes_no", options=[True, False], question="refund")
    return row, rng.random() < p


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    db_path = tmp_path / "gw.db"
    config = tmp_path / "config.yaml"
    jev = {"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": "ts-unused"}}
    config.write_text(yaml.safe_dump({"model_list": [jev], "general_settings": {
        "database_url": f"sqlite:///{db_path}", "decision_log": {"capture": "full", "full_retention": "1d"}}}))
    rng = random.Random(11)
    rows, lines = [], []
    for i in range(N):
        made, outcome = yes_no(i, rng)
        row = spend_row(i, decisions=[made], decision_input={"content": json.dumps({"state": f"word {i}"})})
        rows.append(normalise_row(row))
        lines.append(json.dumps({"request_id": f"req-{i}", "question": "refund", "outcome": outcome}))
    (tmp_path / "outcomes.jsonl").write_text("\n".join(lines) + "\n")

    async def load() -> None:
        db = await open_database(f"sqlite:///{db_path}")
        try:
            await insert_spend_rows(db, rows)
        finally:
            await db.close()

    asyncio.run(load())
    return config, tmp_path


def cli(config: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway.cli", *argv, "--config", str(config)], capture_output=True,
                          text=True, timeout=120)


def test_import_export_report_fit_check_rollback_and_purge(world):
    config, folder = world
    imported = cli(config, "outcomes", "import", str(folder / "outcomes.jsonl"), "--batch", "100")
    assert imported.returncode == 0, imported.stderr
    assert f"{N} outcomes recorded (0 replaced" in imported.stdout
    again = cli(config, "outcomes", "import", str(folder / "outcomes.jsonl"))
    assert f"({N} replaced" in again.stdout  # idempotent: the same outcomes replace themselves

    exported = cli(config, "outcomes", "export", "--output", str(folder / "out.jsonl"))
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in (folder / "out.jsonl").read_text().splitlines()]
    assert len(rows) == N and rows[0]["request_id"] == "req-0" and rows[0]["outcome"] in (True, False)
    assert json.loads(rows[0]["input"]) == {"state": "word 0"} and rows[0]["model_version"] == "jev-1"
    parquet = cli(config, "outcomes", "export", "--format", "parquet", "--output", str(folder / "out.parquet"))
    assert parquet.returncode == 0, parquet.stderr
    table = pq.read_table(folder / "out.parquet")
    assert table.num_rows == N and "probabilities" in table.column_names

    report = cli(config, "calibration", "report", "--json")
    body = json.loads(report.stdout)
    (site,) = body["sites"]
    assert site["site"] == SITE and site["raw"]["n"] == N and site["kind"] == "yes_no"
    table_text = cli(config, "calibration", "report").stdout
    assert SITE in table_text and "ECE" in table_text

    assert cli(config, "calibration", "check", "--site", SITE, "--min-precision", "0.75").returncode == 0
    short = cli(config, "calibration", "check", "--site", SITE, "--min-accuracy", "0.99")  # calibrated, not sure
    assert short.returncode == 1 and "short: accuracy 0.99" in short.stderr
    assert cli(config, "calibration", "check", "--site", SITE, "--max-ece", "0.0001").returncode == 1
    thresholds = cli(config, "calibration", "thresholds", "--model-group", "jev", "--site", SITE, "--target", "0.8")
    found = json.loads(thresholds.stdout)
    assert 0 < found["threshold"] < 1 and found["train"]["precision"] >= 0.8
    low, high = found["held_out"]["precision_interval"]
    assert low <= found["held_out"]["precision"] <= high

    fitted = cli(config, "calibration", "fit", "--model-group", "jev", "--site", SITE)
    assert fitted.returncode == 0, fitted.stderr
    fit = json.loads(fitted.stdout)
    assert fit["method"] == "platt" and fit["calibrator"]["version"] == 1
    assert cli(config, "calibration", "rollback", "--model-group", "jev", "--site", SITE).returncode == 0
    nothing = cli(config, "calibration", "rollback", "--model-group", "jev", "--site", SITE)
    assert nothing.returncode == 1 and "no active calibrator" in nothing.stderr
    few = cli(config, "calibration", "fit", "--model-group", "jev", "--site", "d" * 32)
    assert few.returncode == 1 and "has 0 outcomes; a fit needs at least 50" in few.stderr

    purged = cli(config, "decision-log", "purge")  # the rows are from 2026-11-30: past the 1d retention
    assert purged.returncode == 0 and f"{N} captured inputs" in purged.stdout


def test_a_bad_line_stops_the_import_naming_it(world):
    config, folder = world
    bad = folder / "bad.jsonl"
    bad.write_text(json.dumps({"request_id": "req-1", "question": "refund", "outcome": True}) + "\n"
                   + json.dumps({"request_id": "req-2", "question": "refund", "outcome": "perhaps"}) + "\n")
    done = cli(config, "outcomes", "import", str(bad))
    assert done.returncode == 1 and "line 2" in done.stderr and "true or false" in done.stderr
    unknown = folder / "unknown.jsonl"
    unknown.write_text("{not json\n")
    assert "line 1: not JSON" in cli(config, "outcomes", "import", str(unknown)).stderr
