"""bench/backend.py on a tiny grid: it runs both ways on the real model and rewrites only its own section."""

from __future__ import annotations

import argparse

from bench import backend as bench


def test_the_benchmark_measures_both_ways_and_rewrites_only_its_own_subsection(tmp_path, monkeypatch):
    args = argparse.Namespace(model="default", device="cpu", dtype="float32", inputs=[20], questions=[1, 3],
                              repeats=1, naive_repeats=1)
    rows, env = bench.run(args)
    assert [(r["input_tokens"], r["questions"]) for r in rows] == [(20, 1), (20, 3)]
    one, three = rows
    assert one["shared_prefix"] == 0 and three["shared_prefix"] > 20  # the template head and the input
    for r in rows:
        assert r["ours_ms"] > 0 and r["naive_ms"] > 0 and r["ours_gflops"] > 0 and r["naive_gflops"] > 0
        assert r["ours_qps"] == r["questions"] / r["ours_ms"] * 1000.0
    assert env["peak_gflops"] > 0 and env["device"] == "cpu" and env["dtype"] == "float32"

    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Upstream client\n\nkept\n\n## Bundled backend\n\nintro\n\n"
                   "### cuda, bfloat16\n\ngpu rows\n\n### cpu, float32\n\nold cpu rows\n\n## Later\n\nkept too\n")
    monkeypatch.setattr(bench, "DOC", doc)
    bench.write_section(bench.subsection(rows, env), bench.device_kind(env))
    text = doc.read_text()
    assert "old cpu rows" not in text and "| 20 | 3 |" in text
    assert "gpu rows" in text and "kept\n" in text and "## Later\n\nkept too" in text
    assert text.index("### cuda, bfloat16") < text.index("### cpu, float32") < text.index("## Later")
