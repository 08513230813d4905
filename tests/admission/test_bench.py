"""bench/admission.py on a tiny count: every identity measured on both backends, only its own section
of the doc rewritten. No timing assertions."""

from __future__ import annotations

from bench import admission as bench
from tests.bench_doc import check_rewrites_only_its_section
from tests.shared_state.conftest import REDIS_URL

BACKENDS = ["memory", "failover over redis"]
IDENTITIES = ["key: rpm + budget", "key + team: rpm, tpm, parallel, budget", "master key (unlimited)"]


def test_the_benchmark_measures_every_identity_and_rewrites_only_its_own_section(tmp_path):
    results = bench.run(n=20, warmup=2, redis_url=REDIS_URL, timeout_s=2)  # the Redis tests' timeouts
    assert [(c.backend, c.call) for c in results.cases] == [(b, i) for b in BACKENDS for i in IDENTITIES]
    assert all(len(c.latencies_us) == 20 and min(c.latencies_us) > 0 for c in results.cases)
    assert results.env["degraded"] is False

    check_rewrites_only_its_section(bench, results, tmp_path, "Admission", IDENTITIES, before="Shared state",
                                    after="Spend outbox")
