"""``--workers 2``: a scrape of either worker reports every worker's requests (prometheus-client's
multiprocess mode in a folder the CLI makes before the workers start and removes when it stops)."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.typesafe import FakeTypeSafe
from tests.observability.helpers import GatewayProcess, decide, scrape, typesafe_entry

UPSTREAM_KEY = "ts-workers-upstream-key-0001"
REQUESTS = 60


def test_two_workers_counts_add_up_in_every_scrape(tmp_path):
    with FakeTypeSafe(UPSTREAM_KEY) as upstream:
        config = {"model_list": [typesafe_entry("jev", UPSTREAM_KEY, upstream.url)],
                  "general_settings": {"public_metrics": True,
                                       "database_url": f"sqlite:///{tmp_path / 'gateway.db'}"}}
        gateway = GatewayProcess(tmp_path, config, "--workers", "2", "--log-level", "warning")
        try:
            folder = Path(gateway.wait_line(r"the metrics of the 2 workers are kept in (\S+)").group(1))
            gateway.wait_ready()
            for _ in range(REQUESTS):  # a new connection each: the two workers share them out
                assert decide(gateway.url).status_code == 200
            scrapes = [scrape(gateway.url) for _ in range(8)]
            writers = {path.name for path in folder.glob("counter_*.db")}
        finally:
            gateway.stop()
    assert len(writers) == 2, f"the requests did not reach both workers: {writers}"
    for each in scrapes:
        assert each.value("decisions_gateway_requests_total", model_group="jev", status="200") == REQUESTS
        assert each.value("decisions_gateway_request_duration_seconds_count", model_group="jev") == REQUESTS
        assert each.value("decisions_gateway_requests_in_flight") == 0
    assert not folder.exists()
