"""Redis stopped mid-load under a gateway with keys and limits (a throwaway redis-server on a port of its
own, never the machine's on 6379). The load of an unlimited key goes on, every request answered 200;
rate limits and budgets fall back as ``general_settings.limits_on_redis_failure`` says (unset: rate
limits counted in this process, budgets refused with a 503; ``fail_open``: both counted here;
``fail_closed``: both refused), each answer in the caller's envelope; readiness says Redis is down and
what serves the limits; and when Redis is back everything is served from it again.

(tests/router/test_shared_routing.py stops Redis under routing state alone, without keys or limits.)
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from tests.fakes.typesafe import FakeTypeSafe
from tests.reliability.conftest import OPENAI, S1, Flag, decisions_until
from tests.reliability.processes import GatewayProcess
from tests.reliability.wire_checks import OPENAI as OPENAI_WIRE
from tests.reliability.wire_checks import SYSTEMONE, Answer, bad, drive, problem
from tests.shared_state.conftest import RedisServer

MASTER = "sk-master-redis-outage-0123456789"
UPSTREAM_KEY = "ts-redis-outage-key"
RPM = 5


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def new_key(gw: GatewayProcess, **fields) -> str:
    r = httpx.post(gw.url + "/key/generate", json=fields, headers=bearer(MASTER), timeout=20)
    assert r.status_code == 200, r.text
    return r.json()["key"]


def call(gw: GatewayProcess, key: str, n: int) -> httpx.Response:
    """One decision, the wires in turn; the answer checked for its envelope."""
    path, body = ("/v1/decisions", OPENAI) if n % 2 else ("/v1/systemone", S1)
    r = httpx.post(gw.url + path, json={**body, "model": "jev"}, headers=bearer(key), timeout=20)
    why = problem(OPENAI_WIRE if n % 2 else SYSTEMONE, r.status_code, r.headers, r.content)
    assert why is None, why
    return r


def readiness(gw: GatewayProcess) -> dict:
    r = httpx.get(gw.url + "/health/readiness", headers=bearer(MASTER), timeout=10)
    assert r.status_code == 200, r.text  # Redis down keeps the gateway ready (degraded) by default
    return r.json()


def wait_for(what: str, condition, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


@pytest.mark.parametrize("policy, rate_served, budget_served", [
    (None, "local", "refused"), ("fail_open", "local", "local"), ("fail_closed", "refused", "refused")])
def test_redis_stopped_mid_load_limits_fall_back_as_configured_and_readiness_says_so(
        redis_server: RedisServer, tmp_path: Path, policy, rate_served, budget_served) -> None:
    general = {"master_key": MASTER, "database_url": f"sqlite:///{tmp_path / 'gateway.db'}",
               "redis_url": redis_server.url}
    if policy is not None:
        general["limits_on_redis_failure"] = policy
    with FakeTypeSafe(UPSTREAM_KEY) as upstream:
        config = {"model_list": [{"model_name": "jev", "litellm_params": {
            "model": "typesafe/jev-latest", "api_key": UPSTREAM_KEY, "api_base": upstream.url,
            "input_cost_per_token": 0.000001}}],
            "general_settings": general, "router_settings": {"num_retries": 0}}
        with GatewayProcess(config, tmp_path / "gateway") as gw:
            gw.start()
            unlimited, limited, budgeted = new_key(gw), new_key(gw, rpm_limit=RPM), new_key(gw, max_budget=100.0)
            assert [call(gw, key, 0).status_code for key in (limited, budgeted)] == [200, 200]
            assert readiness(gw)["checks"]["redis"]["state"] == "up"

            async def scenario() -> list[Answer]:
                stop = Flag()
                load = asyncio.ensure_future(drive(gw.url, decisions_until(stop, "jev", bearer(unlimited)),
                                                   concurrency=8))
                await asyncio.sleep(0.7)
                await asyncio.to_thread(redis_server.kill)  # mid-load
                await asyncio.sleep(1.5)
                stop.set()
                return await load

            answers = asyncio.run(scenario())
            assert bad(answers) == [] and {a.status for a in answers} == {200}, bad(answers) or gw.log_tail()
            assert len(answers) > 20

            rated = [call(gw, limited, n) for n in range(2 * RPM + 2)]
            statuses = [r.status_code for r in rated]
            if rate_served == "local":  # still limited, per process: the counter here started when Redis left
                # a fixed one-minute window: a run that straddles two of them may be admitted RPM in each
                assert 1 <= statuses.count(200) <= 2 * RPM and statuses.count(429) >= 2, statuses
                refused = next(r for r in rated if r.status_code == 429)
                assert int(refused.headers["retry-after"]) >= 1
                assert refused.headers["x-ratelimit-limit-requests"] == str(RPM)
            else:
                assert set(statuses) == {503}, statuses
                assert "rate_limits_unavailable" in rated[0].text and rated[0].headers["retry-after"] == "1"
            spent = [call(gw, budgeted, n) for n in range(4)]
            if budget_served == "local":
                assert {r.status_code for r in spent} == {200}
            else:
                assert {r.status_code for r in spent} == {503}
                assert "budgets_unavailable" in spent[0].text and "Redis" in spent[1].json()["error"]["message"]

            ready = readiness(gw)
            assert ready["status"] == "degraded" and "redis" in ready["degraded"]
            assert ready["checks"]["redis"]["state"] == "down"
            assert ready["limits"]["rate_limits"]["serving"] == rate_served
            assert ready["limits"]["budgets"]["serving"] == budget_served
            assert any("limits_on_redis_failure" in note for note in ready["warnings"])

            redis_server.start()  # same port: the gateway finds it again by itself
            wait_for("readiness healthy again", lambda: readiness(gw)["status"] == "healthy")
            wait_for("budgets served from Redis again", lambda: call(gw, budgeted, 0).status_code == 200)
            assert readiness(gw)["limits"]["budgets"]["serving"] == "shared"
            assert call(gw, unlimited, 1).status_code == 200
