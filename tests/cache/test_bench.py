"""bench/cache.py on a tiny count: every case measured, the replay answered wholly from the cache (no
upstream call), and only its own section of the doc rewritten. No timing assertions."""

from __future__ import annotations

from bench import cache as bench
from tests.bench_doc import check_rewrites_only_its_section
from tests.shared_state.conftest import REDIS_URL


def test_the_benchmark_measures_every_case_and_rewrites_only_its_own_section(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "REDIS_URL", REDIS_URL)
    results = bench.run(rounds=5, tickets=4, size=12, warmup=2, timeout=240)
    assert [c.name for c in results.cases] == [spec[0] for spec in bench.CASES]
    assert all(len(c.latencies) == 5 and c.errors == 0 for c in results.cases)
    assert all(len(results.steps[name]) == 5 for name in ("memory", "redis"))
    without, first, replay = results.passes
    assert without.hits == 0 and without.errors == 0 and without.upstream_calls in (12, -1)  # -1: not counted
    assert first.hits + first.misses == replay.hits and replay.misses == 0
    assert replay.upstream_calls in (0, -1) and replay.paid == 0.0
    assert replay.saved > 0 and first.paid > 0

    check_rewrites_only_its_section(bench, results, tmp_path, "Cache", [case.name for case in results.cases])
