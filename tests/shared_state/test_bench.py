"""bench/shared_state.py on a tiny count: every row measured on every backend, only its own section
of the doc rewritten. No timing assertions."""

from __future__ import annotations

from bench import shared_state as bench
from tests.shared_state.conftest import REDIS_URL

BACKENDS = ["memory", "redis", "failover over redis"]
CALLS = ["incr (ttl)", "window_add (limit)", "get_many (4 keys)"]


def test_the_benchmark_measures_every_call_and_rewrites_only_its_own_section(tmp_path):
    results = bench.run(n=20, warmup=2, redis_url=REDIS_URL)
    assert [(c.backend, c.call) for c in results.cases] == [(b, c) for b in BACKENDS for c in CALLS]
    assert all(len(c.latencies_us) == 20 and min(c.latencies_us) > 0 for c in results.cases)
    assert results.env["failover_degraded"] is False

    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Upstream client\n\nkept\n\n## Shared state\n\nold rows\n\n"
                   "## Gateway overhead\n\nkept too\n")
    text = bench.section(results)
    bench.write_section(text, doc)
    bench.write_section(text, doc)
    out = doc.read_text()
    assert "old rows" not in out and out.count("## Shared state") == 1
    assert "## Upstream client\n\nkept\n" in out and "## Gateway overhead\n\nkept too\n" in out
    for name in CALLS:
        assert f"| {name} | " in out
