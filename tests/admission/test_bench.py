"""bench/admission.py on a tiny count: every identity measured on both backends, only its own section
of the doc rewritten. No timing assertions."""

from __future__ import annotations

from bench import admission as bench
from tests.shared_state.conftest import REDIS_URL

BACKENDS = ["memory", "failover over redis"]
IDENTITIES = ["key: rpm + budget", "key + team: rpm, tpm, parallel, budget", "master key (unlimited)"]


def test_the_benchmark_measures_every_identity_and_rewrites_only_its_own_section(tmp_path):
    results = bench.run(n=20, warmup=2, redis_url=REDIS_URL)
    assert [(c.backend, c.call) for c in results.cases] == [(b, i) for b in BACKENDS for i in IDENTITIES]
    assert all(len(c.latencies_us) == 20 and min(c.latencies_us) > 0 for c in results.cases)
    assert results.env["degraded"] is False

    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Shared state\n\nkept\n\n## Admission\n\nold rows\n\n## Spend outbox\n\nkept too\n")
    text = bench.section(results)
    bench.write_section(text, doc)
    bench.write_section(text, doc)
    out = doc.read_text()
    assert "old rows" not in out and out.count("## Admission") == 1
    assert "## Shared state\n\nkept\n" in out and "## Spend outbox\n\nkept too\n" in out
    for name in IDENTITIES:
        assert f"| {name} | " in out
