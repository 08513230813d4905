"""bench/observability.py on a tiny count: every setup measured in its own process, only its own
section of the doc rewritten. No timing assertions."""

from __future__ import annotations

from bench import observability as bench
from tests.bench_doc import check_rewrites_only_its_section


def test_the_benchmark_measures_every_setup_and_rewrites_only_its_own_section(tmp_path):
    results = bench.run(calls=20, repeats=2, rounds=1)
    assert list(results["us"]) == list(bench.SETUPS) and all(v > 0 for v in results["us"].values())
    check_rewrites_only_its_section(bench, results, tmp_path, "Observability", list(bench.SETUPS),
                                    before="Admission", after="Spend outbox")
