"""bench/backend.py on a tiny grid: it runs both ways on the real model, prints one table whose shares of the
peak are the ones it writes, and rewrites only its own section. The model is the session's (``service``, the
one the backend tests share) rather than a second load of it, and the peak is taken on small matrices."""

from __future__ import annotations

import re

from bench import backend as bench


def test_the_benchmark_measures_both_ways_prints_one_table_and_rewrites_only_its_own_subsection(
        tmp_path, monkeypatch, capsys, service):
    # The session's model when it is CPU fp32 (the environment may ask the backend tests for another device).
    shared = (service.loaded.device, str(service.loaded.dtype)) == ("cpu", "torch.float32")
    loaded = service.loaded if shared else None
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Upstream client\n\nkept\n\n## Bundled backend\n\nintro\n\n"
                   "### cuda, bfloat16\n\ngpu rows\n\n### cpu, float32\n\nold cpu rows\n\n## Later\n\nkept too\n")
    monkeypatch.setattr(bench, "DOC", doc)
    measured = []
    real_run = bench.run
    monkeypatch.setattr(bench, "run", lambda args: measured.append(real_run(args, loaded)) or measured[-1])  # the real run
    assert bench.main(["--device", "cpu", "--dtype", "float32", "--inputs", "20", "--questions", "1", "3",
                       "--repeats", "1", "--peak-size", "256"]) == 0

    rows, env = measured[0]
    assert [(r["input_tokens"], r["questions"]) for r in rows] == [(20, 1), (20, 3)]
    one, three = rows
    assert one["shared_prefix"] == 0 and three["shared_prefix"] > 20  # the template head and the input
    for r in rows:
        assert r["ours_ms"] > 0 and r["naive_ms"] > 0 and r["ours_gflops"] > 0 and r["naive_gflops"] > 0
        assert r["ours_qps"] == r["questions"] / r["ours_ms"] * 1000.0
    assert env["peak_gflops"] == max(env["peak_before_gflops"], env["peak_after_gflops"]) > 0
    assert env["device"] == "cpu" and env["dtype"] == "float32"

    text = doc.read_text()
    assert "old cpu rows" not in text and "| 20 | 3 |" in text
    assert "gpu rows" in text and "kept\n" in text and "## Later\n\nkept too" in text
    assert text.index("### cuda, bfloat16") < text.index("### cpu, float32") < text.index("## Later")

    # One figure per run: the progress lines carry no share of the peak (it is final only after the grid), and
    # the one table printed is the one written, each share of the single peak it names.
    printed = capsys.readouterr().out
    progress = [line for line in printed.splitlines() if line.startswith("measured: ")]
    assert len(progress) == 2 and "%" not in "".join(progress)
    assert printed.count("| input tokens |") == 1 and text.count("| input tokens |") == 1
    shares = re.findall(r"\| (\d+) \((\d+) %\) \|", printed)
    assert len(shares) == 2 and shares == re.findall(r"\| (\d+) \((\d+) %\) \|", text)
    peak = re.search(r"\*\*(\d+) GFLOP/s\*\*", text)
    assert peak and int(peak.group(1)) == round(env["peak_gflops"]) and "(256² matrices)" in text
    for (gflops, share), r in zip(shares, rows, strict=True):
        assert int(gflops) == round(r["ours_gflops"]) and int(share) == round(100 * r["ours_gflops"] / env["peak_gflops"])
