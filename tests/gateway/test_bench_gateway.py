"""bench/gateway.py on a tiny count: real upstream and gateway processes, every row measured, only its own
section of the doc rewritten. No timing assertions (a shared machine makes them meaningless)."""

from __future__ import annotations

import re

from bench import gateway as bench

ROWS = [
    ("upstream alone: POST /v1/systemone", 1),
    ("upstream alone: POST /v1/decisions", 1),
    ("gateway /v1/systemone -> typesafe (same wire)", 1),
    ("gateway /v1/decisions -> typesafe (translated)", 1),
    ("gateway /v1/systemone -> openai (translated)", 1),
    ("upstream alone: POST /v1/systemone", 4),
    ("gateway /v1/systemone -> typesafe (same wire)", 4),
]


def test_the_benchmark_measures_every_case_and_rewrites_only_its_own_section(tmp_path):
    results = bench.run(sequential=20, concurrent=20, concurrency=4, timeout=120, warmup=2)
    assert [(c.name, c.concurrency) for c in results.cases] == ROWS
    for case in results.cases:
        assert case.errors == 0, case.first_error
        assert len(case.latencies) == 20 and not case.cut_short
    env = results.env
    assert env["gateway_alive"] and env["rss_after_mib"] > 0 and env["cpus"] == __import__("os").cpu_count()

    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Upstream client\n\nkept\n\n## Gateway overhead\n\nold rows\n\n"
                   "## Bundled backend\n\nkept too\n")
    text = bench.section(results)
    bench.write_section(text, doc)
    bench.write_section(text, doc)  # a re-run replaces the section again, nothing doubles
    out = doc.read_text()
    assert "old rows" not in out and out.count("## Gateway overhead") == 1
    assert "## Upstream client\n\nkept\n" in out and "## Bundled backend\n\nkept too\n" in out
    assert out.index("## Upstream client") < out.index("## Gateway overhead") < out.index("## Bundled backend")
    for name, concurrency in ROWS:
        assert re.search(rf"^\| {re.escape(name)} \| {concurrency} \| 20 \| 0 \|", out, re.MULTILINE), name
    assert "load average" in out and "share the" in out and "MiB after the run" in out


def test_a_missing_section_is_appended(tmp_path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Upstream client\n\nkept\n")
    bench.write_section("## Gateway overhead\n\nnew\n", doc)
    assert doc.read_text() == "# Benchmarks\n\n## Upstream client\n\nkept\n\n## Gateway overhead\n\nnew\n"


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert bench.percentile(values, 50) == 50.0 and bench.percentile(values, 99) == 99.0
    assert bench.percentile([3.0], 99) == 3.0
