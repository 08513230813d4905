"""bench/shared_state.py on a tiny count: every row measured on every backend, only its own section
of the doc rewritten. No timing assertions."""

from __future__ import annotations

from bench import shared_state as bench
from tests.bench_doc import check_rewrites_only_its_section
from tests.shared_state.conftest import REDIS_URL

BACKENDS = ["memory", "redis", "failover over redis"]
CALLS = ["incr (ttl)", "window_add (limit)", "get_many (4 keys)"]


def test_the_benchmark_measures_every_call_and_rewrites_only_its_own_section(tmp_path):
    results = bench.run(n=20, warmup=2, redis_url=REDIS_URL, timeout_s=2)  # the Redis tests' timeouts
    assert [(c.backend, c.call) for c in results.cases] == [(b, c) for b in BACKENDS for c in CALLS]
    assert all(len(c.latencies_us) == 20 and min(c.latencies_us) > 0 for c in results.cases)
    assert results.env["failover_degraded"] is False

    check_rewrites_only_its_section(bench, results, tmp_path, "Shared state", CALLS, before="Upstream client",
                                    after="Gateway overhead")
