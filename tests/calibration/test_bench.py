"""bench/calibration.py at a tiny scale: every part measured (recovery through a gateway, apply, ingest, the
report on PostgreSQL, left out when the server does not answer, and the decision-log overhead), the table
printed and only its own section of a doc in tmp_path rewritten. No timing or accuracy assertions: the sizes
are far too small for either."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench import calibration as bench
from tests.bench_doc import check_rewrites_only_its_section
from tests.db.conftest import PG_SERVER


def test_the_benchmark_measures_every_part_and_rewrites_only_its_section(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    results = bench.run(bench.TINY, pg_url=PG_SERVER, pin=False, base_dir=str(tmp_path))  # no server: no report
    assert list(tmp_path.iterdir()) == []  # its temporary files are gone

    assert [r.scenario.group for r in results.recoveries] == ["over", "flat", "yesno"]
    for r in results.recoveries:
        assert r.fit["train_n"] + r.fit["held_out_n"] == bench.TINY.train
        assert r.method == ("platt" if r.scenario.kind == "yes_no" else "temperature")
        assert r.raw["n"] == r.calibrated["n"] == bench.TINY.fresh  # the fresh set only (start=)
        assert r.applied == bench.TINY.fresh  # every fresh answer served calibrated
        assert math.isfinite(r.fitted_temperature) and r.fitted_temperature > 0
        assert len(r.spread) == bench.TINY.spread_seeds and math.isfinite(r.truth["ece"])
    assert [a.questions for a in results.applies] == [1, 8, 32]
    assert all(a.apply_us > 0 and a.step_hashing_us > 0 and a.step_cached_us > 0 for a in results.applies)
    assert set(results.log_cpu_us) == {"none", "digest", "full"}
    assert set(results.drain_us) == {"spend rows only", "with decision rows (digest)"}
    assert all(r.what_if["fit"] >= 0 for r in results.recoveries)
    assert [i.outcomes for i in results.ingests] == [bench.TINY.ingest // 2] * 3
    if not results.env.get("pg_missing"):
        assert [r.label.split(" (")[0] for r in results.reports] == ["everything", "one group", "one site", "one day"]
        assert results.reports[0].outcomes == bench.TINY.pg_rows and results.plan
    else:
        assert results.reports == [] and not results.plan
    assert [len(o.latencies) for o in results.overheads] == [bench.TINY.overhead_requests] * 5
    assert len(results.notes) >= 3 + 1 + 3 + len(results.reports) + 4

    text = bench.section(results)
    print(text)
    assert "| choice of 4, overconfident (sharpen 2.5) | " in capsys.readouterr().out
    rows = [r.scenario.label for r in results.recoveries] + [i.how for i in results.ingests] + \
        [o.label for o in results.overheads] + ["1", "8", "32"]
    check_rewrites_only_its_section(bench, results, tmp_path, bench.SECTION.removeprefix("## "), rows)
    for line in bench.tables(results):
        assert line in text
