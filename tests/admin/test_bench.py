"""bench/admin.py at a tiny scale against PostgreSQL: every admin route measured, with numbers, and only its own
section of the doc rewritten. No timing assertions."""

from __future__ import annotations

import math
from pathlib import Path

from bench import admin as bench
from tests.bench_doc import check_rewrites_only_its_section
from tests.db.conftest import PG_SERVER

PATHS = ["/key/list", "/key/list?page=", "/key/list?return_full_object=true", "/key/info?key=", "/team/list",
         "/v2/team/list", "/team/info?team_id=", "/spend/logs", "/spend/logs?api_key=", "/spend/logs?start_date=",
         "&summarize=false", "/spend/logs/v2", "/spend/logs/ui", "/global/spend/report", "/model/info",
         "/v1/model/info", "/model_group/info"]


def test_the_benchmark_times_every_admin_route_and_rewrites_only_its_section(tmp_path: Path) -> None:
    results = bench.run(keys=20, rows=500, calls=3, warmup=1, pg_url=PG_SERVER, pin=False)
    assert results.env["keys"] == 20 and results.env["rows"] == 500 and results.env["teams"] == 1
    asked = [t.path for t in results.timings]
    for path in PATHS:
        assert any(path in p for p in asked), path
    assert len(results.timings) == len(PATHS)
    for timing in results.timings:
        assert len(timing.latencies_ms) == 3, timing.route
        assert all(math.isfinite(v) and v > 0 for v in timing.latencies_ms), timing.route
        assert all(0 < first <= whole for first, whole in zip(timing.first_byte_ms, timing.latencies_ms, strict=True))
        assert timing.bytes > 2, timing.route  # a body, not an empty list

    rows = [t.route for t in results.timings]
    check_rewrites_only_its_section(bench, results, tmp_path, bench.SECTION.removeprefix("## "), rows)
    text = bench.section(results)
    for line in bench.table(results)[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[1] == "3" and all(float(c.split()[0].replace(",", "")) >= 0 for c in cells[2:]), line
        assert line in text
