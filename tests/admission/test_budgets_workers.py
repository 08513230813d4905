"""Budgets on the deployment docs/deploy.md describes: ``--workers 2`` on one Redis and one
PostgreSQL, two teams at once. Fifty concurrent requests per team on a group that has not answered
yet (a slow upstream: all of them in flight at once) end at most one request above each team's
budget, and x-litellm-key-spend counts every worker's calls."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.admission.test_budgets_end_to_end import DEAR, TEMPLATE_TOKENS, CountingTypeSafe, s1
from tests.operations.conftest import KEY, GatewayProcess, auth, entry, write_config
from tests.operations.conftest import pg_url as pg_url  # noqa: F401 - a database of the test's own
from tests.shared_state.conftest import REDIS_URL


def new_key(url: str, team: str, **fields) -> str:
    with httpx.Client(headers=auth(), timeout=20) as client:
        made = client.post(f"{url}/team/new", json={"team_alias": team})
        assert made.status_code == 200, made.text
        key = client.post(f"{url}/key/generate", json={"team_id": made.json()["team_id"], **fields})
        assert key.status_code == 200, key.text
        return key.json()["key"]


async def burst(url: str, keys: list[str], n: int) -> dict[str, list[httpx.Response]]:
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=2 * n)) as client:
        async def call(key: str) -> httpx.Response:
            return await client.post(f"{url}/v1/systemone", json=s1("templated"), headers=auth(key))

        answered = await asyncio.gather(*(call(key) for _ in range(n) for key in keys))
    return {key: [r for i, r in enumerate(answered) if keys[i % len(keys)] == key] for key in keys}


def test_two_teams_on_two_workers_never_overspend_a_cold_group(tmp_path, pg_url):  # noqa: F811
    with CountingTypeSafe(KEY, TEMPLATE_TOKENS, delay=0.3) as upstream:
        config = write_config(tmp_path / "gateway.yaml", [entry("templated", upstream.url, input_cost_per_token=DEAR)],
                              {"num_retries": 0}, redis_url=REDIS_URL, database_url=pg_url)
        gateway = GatewayProcess.start(config, tmp_path, "--workers", "2")
        try:
            keys = [new_key(gateway.url, team, max_budget=1.0) for team in ("workers-a", "workers-b")]
            for answers in asyncio.run(burst(gateway.url, keys, 50)).values():  # each team on its own
                costs = [float(r.headers["x-decisions-response-cost"]) for r in answers if r.status_code == 200]
                refused = [r for r in answers if r.status_code != 200]
                assert costs and sum(costs) <= 1.0 + max(costs)  # at most one request above the budget
                assert refused and all(r.status_code == 400 for r in refused), refused[0].text
                assert "max_budget $1, spent $" in refused[0].json()["detail"]["message"]
            counted = new_key(gateway.url, "workers-header", max_budget=100.0)
            total = 0.0
            with httpx.Client(timeout=60) as client:
                for _ in range(6):  # new connections: the calls spread over both workers
                    r = client.post(f"{gateway.url}/v1/systemone", json=s1("templated"),
                                    headers={**auth(counted), "Connection": "close"})
                    assert r.status_code == 200, r.text
                    total += float(r.headers["x-decisions-response-cost"])
                    assert float(r.headers["x-litellm-key-spend"]) == pytest.approx(total, abs=2e-6)
        finally:
            gateway.stop()
