"""bench/observability.py on a tiny count: every setup measured in its own process, only its own
section of the doc rewritten. No timing assertions."""

from __future__ import annotations

from bench import observability as bench


def test_the_benchmark_measures_every_setup_and_rewrites_only_its_own_section(tmp_path):
    results = bench.run(calls=20, repeats=2, rounds=1)
    assert list(results["us"]) == list(bench.SETUPS) and all(v > 0 for v in results["us"].values())
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Admission\n\nkept\n\n## Observability\n\nold rows\n\n## Spend outbox\n\nkept too\n")
    text = bench.section(results)
    bench.write_section(text, doc)
    bench.write_section(text, doc)
    out = doc.read_text()
    assert "old rows" not in out and out.count("## Observability") == 1
    assert "## Admission\n\nkept\n" in out and "## Spend outbox\n\nkept too\n" in out
    for name in bench.SETUPS:
        assert f"| {name} | " in out
