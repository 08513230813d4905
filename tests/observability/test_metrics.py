"""``GET /metrics`` of a running gateway (real HTTP both ways): what each request adds, by bounded
labels; no key material; the master key guards it unless ``public_metrics``."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.conftest import start_gateway
from tests.fakes.harness import FakeServer, Recorded, Scripted
from tests.fakes.typesafe import FakeTypeSafe
from tests.observability.helpers import S1, bearer, decide, scrape, typesafe_entry
from tests.settled import tasks_of, wait_settled
from tests.shared_state.conftest import wait_for

MASTER = "sk-master-metrics-0123456789"
UPSTREAM_KEY = "ts-metrics-upstream-key-0001"
PRICE = 0.001  # USD per input token
REQUESTS = "decisions_gateway_requests_total"


class AlwaysLimited(FakeServer):
    """An upstream that answers every call 429 (cooled at once by the router)."""

    def handle(self, rec: Recorded) -> Scripted:
        return Scripted.of_json(429, {"detail": {"message": "slow down"}})


class Slow(FakeTypeSafe):
    def handle(self, rec: Recorded) -> Scripted:
        time.sleep(0.4)
        return super().handle(rec)


@pytest.fixture(scope="module")
def upstreams():
    with FakeTypeSafe(UPSTREAM_KEY) as good, AlwaysLimited() as limited, Slow(UPSTREAM_KEY) as slow:
        yield good, limited, slow


@pytest.fixture(scope="module")
def gateway(upstreams, tmp_path_factory):
    good, limited, slow = upstreams
    db = tmp_path_factory.mktemp("metrics") / "gateway.db"
    entry = typesafe_entry
    config = {
        "model_list": [
            entry("jev", UPSTREAM_KEY, good.url, input_cost_per_token=PRICE),
            {**entry("pair", UPSTREAM_KEY, limited.url), "model_info": {"id": "pair-a"}},
            {**entry("pair", UPSTREAM_KEY, good.url), "model_info": {"id": "pair-b"}},
            entry("lead", UPSTREAM_KEY, limited.url),
            {**entry("hedge", UPSTREAM_KEY, slow.url), "model_info": {"id": "hedge-slow"}},
            {**entry("hedge", UPSTREAM_KEY, good.url), "model_info": {"id": "hedge-fast"}},
        ],
        "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"},
        "router_settings": {"num_retries": 1, "cooldown_time": 120, "fallbacks": [{"lead": ["jev"]}],
                            "model_group_settings": {"hedge": {"hedge_after_ms": 100}, "lead": {"num_retries": 0}}},
    }
    with pytest.MonkeyPatch.context() as env:  # the TypeSafe pass-through, read at start
        env.setenv("TYPESAFE_API_KEY", UPSTREAM_KEY)
        env.setenv("TYPESAFE_API_BASE", good.url)
        running = start_gateway(config)
    yield running
    running.stop()


def admin(gateway, path: str, body: dict) -> dict:
    r = httpx.post(gateway.url + path, json=body, headers=bearer(MASTER), timeout=20)
    assert r.status_code == 200, r.text
    return r.json()


def new_key(gateway, **fields) -> str:
    return admin(gateway, "/key/generate", fields)["key"]


def test_each_request_is_counted_with_its_latencies_tokens_and_cost(gateway):
    team = admin(gateway, "/team/new", {"team_alias": "obs-team"})["team_id"]
    key = new_key(gateway, key_alias="obs-alice", team_id=team)
    before = scrape(gateway.url, MASTER)
    costs = []
    for path in ("/v1/systemone", "/v1/systemone", "/v1/systemone", "/v1/decisions"):
        r = decide(gateway.url, key=key, path=path)
        assert r.status_code == 200, r.text
        costs.append(float(r.headers["x-decisions-response-cost"]))
    after = scrape(gateway.url, MASTER)

    def delta(name, **labels):
        return after.value(name, **labels) - before.value(name, **labels)

    mine = {"model_group": "jev", "deployment": "typesafe/jev-latest", "provider": "typesafe", "team": "obs-team",
            "key_alias": "obs-alice", "status": "200"}
    assert delta(REQUESTS, route="/v1/systemone", **mine) == 3
    assert delta(REQUESTS, route="/v1/decisions", **mine) == 1
    assert delta("decisions_gateway_request_duration_seconds_count", route="/v1/systemone", model_group="jev") == 3
    assert delta("decisions_gateway_upstream_duration_seconds_count", model_group="jev",
                 deployment="typesafe/jev-latest", provider="typesafe") == 4
    assert delta("decisions_gateway_overhead_duration_seconds_count", route="/v1/systemone") == 3
    total = delta("decisions_gateway_request_duration_seconds_sum", model_group="jev")
    upstream = delta("decisions_gateway_upstream_duration_seconds_sum", model_group="jev")
    overhead = delta("decisions_gateway_overhead_duration_seconds_sum", route="/v1/systemone") + \
        delta("decisions_gateway_overhead_duration_seconds_sum", route="/v1/decisions")
    assert 0 < upstream < total and overhead == pytest.approx(total - upstream, abs=1e-6)
    input_tokens = delta("decisions_gateway_tokens_total", token_type="input", key_alias="obs-alice")
    assert input_tokens > 0
    assert input_tokens * PRICE == pytest.approx(sum(costs))  # the price is per input token only
    assert delta("decisions_gateway_spend_usd_total", key_alias="obs-alice", team="obs-team") == \
        pytest.approx(sum(costs))


def test_a_caller_never_makes_a_label_value(gateway):
    before = scrape(gateway.url, MASTER)
    unknown = decide(gateway.url, model="no-such-model-Zq9x", key=MASTER)
    assert unknown.status_code == 400
    relayed = httpx.post(gateway.url + "/typesafe/v1/systemone", json={**S1, "model": "made-up-model-Zq9x"},
                         headers=bearer(MASTER), timeout=20)
    assert relayed.status_code in (200, 400, 404, 422)
    odd_path = httpx.get(gateway.url + "/typesafe/v1/Zq9x-anything", headers=bearer(MASTER), timeout=20)
    assert odd_path.status_code < 500
    after = scrape(gateway.url, MASTER)
    assert "Zq9x" not in after.text
    assert after.value(REQUESTS, model_group="none", status="400") == before.value(REQUESTS, model_group="none",
                                                                                   status="400") + 1
    assert after.value(REQUESTS, route="/typesafe/{path}", model_group="unknown") >= 1
    routes = after.labels(REQUESTS, "route")
    assert routes <= {"/v1/systemone", "/v1/decisions", "/systemone", "/decisions", "/typesafe/{path}",
                      "/laya/v1/systemone", "/bespoke/v1/systemone", "other"}
    assert after.labels(REQUESTS, "model_group") <= {"jev", "pair", "lead", "hedge", "none", "unknown"}
    assert after.labels(REQUESTS, "deployment") <= {"typesafe/jev-latest", "pair-a", "pair-b", "hedge-slow",
                                                    "hedge-fast", "none", "unknown"}


def test_no_key_material_is_in_the_metrics(gateway):
    key = new_key(gateway, key_alias="obs-secret-check")
    assert decide(gateway.url, key=key).status_code == 200
    assert decide(gateway.url, key="sk-not-a-real-key-0123456789").status_code == 401
    text = scrape(gateway.url, MASTER).text
    assert "obs-secret-check" in text
    for secret in (MASTER, key, key[3:], UPSTREAM_KEY, "sk-not-a-real-key-0123456789"):
        assert secret not in text
    assert "key_hash" not in text and "hashed" not in text


def test_metrics_need_the_master_key(gateway):
    assert httpx.get(gateway.url + "/metrics", timeout=10).status_code == 401
    wrong = httpx.get(gateway.url + "/metrics", headers=bearer("sk-wrong-0123456789"), timeout=10)
    assert wrong.status_code == 401 and wrong.json()["error"]["type"] == "authentication_error"
    virtual = httpx.get(gateway.url + "/metrics", headers=bearer(new_key(gateway, key_alias="obs-reader")),
                        timeout=10)
    assert virtual.status_code == 403 and "master key" in virtual.json()["error"]["message"]
    assert httpx.get(gateway.url + "/metrics", headers=bearer(MASTER), timeout=10).status_code == 200


def test_public_metrics_need_no_key(upstreams, tmp_path):
    good = upstreams[0]
    running = start_gateway({"model_list": [typesafe_entry("jev", UPSTREAM_KEY, good.url)],
                             "general_settings": {"master_key": MASTER, "public_metrics": True,
                                                  "database_url": f"sqlite:///{tmp_path / 'g.db'}"}})
    try:
        assert decide(running.url, key=MASTER).status_code == 200
        assert scrape(running.url).value(REQUESTS, model_group="jev", key_alias="master", status="200") == 1
    finally:
        running.stop()


def test_retries_cooldowns_fallbacks_and_hedges_are_counted(gateway):
    before = scrape(gateway.url, MASTER)
    retried = 0
    for _ in range(12):  # pair-a (429 each time) is picked first about every other time, then cooled
        r = decide(gateway.url, model="pair", key=MASTER)
        assert r.status_code == 200, r.text
        retried += int(r.headers["x-decisions-attempted-retries"])
    fell_back = decide(gateway.url, model="lead", key=MASTER)
    assert fell_back.status_code == 200 and fell_back.headers["x-decisions-attempted-fallbacks"] == "1"
    hedged = 0
    for _ in range(24):  # hedge-slow is picked first about every other time; then a hedge is sent
        hedged += decide(gateway.url, model="hedge", key=MASTER).headers.get("x-decisions-hedged") == "true"
        if hedged:
            break
    after = scrape(gateway.url, MASTER)
    assert retried >= 1
    assert after.value("decisions_gateway_retries_total", model_group="pair") - \
        before.value("decisions_gateway_retries_total", model_group="pair") == retried
    assert after.value("decisions_gateway_deployment_cooling_down", deployment="pair-a", model_group="pair") == 1
    assert after.value("decisions_gateway_deployment_cooling_down", deployment="pair-b", model_group="pair") == 0
    assert after.value("decisions_gateway_fallbacks_total", model_group="lead") - \
        before.value("decisions_gateway_fallbacks_total", model_group="lead") == 1
    assert hedged == 1
    assert after.value("decisions_gateway_hedges_total", model_group="hedge") - \
        before.value("decisions_gateway_hedges_total", model_group="hedge") == hedged


def test_rate_limit_and_budget_refusals_and_what_is_left_of_the_budgets(gateway):
    resting = tasks_of(gateway)
    limited = new_key(gateway, key_alias="obs-rpm", rpm_limit=2)
    statuses = [decide(gateway.url, key=limited).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    team = admin(gateway, "/team/new", {"team_alias": "obs-budget-team", "max_budget": 10.0})["team_id"]
    budgeted = new_key(gateway, key_alias="obs-budget", team_id=team, max_budget=0.2)
    ok, refused = [], 0
    for _ in range(12):
        r = decide(gateway.url, key=budgeted)
        if r.status_code == 200:
            ok.append(float(r.headers["x-decisions-response-cost"]))
        else:
            assert r.status_code == 400 and "budget" in r.json()["detail"]["message"], r.text
            refused += 1
    assert ok and refused
    wait_settled(gateway, resting, "the settling behind each response ended")
    after = scrape(gateway.url, MASTER)
    assert after.value("decisions_gateway_rate_limited_total", scope="key", limit="rpm_limit",
                       key_alias="obs-rpm") == 1
    assert after.value("decisions_gateway_budget_exceeded_total", scope="key", key_alias="obs-budget") == refused
    assert after.value("decisions_gateway_key_budget_remaining_usd", key_alias="obs-budget") == \
        pytest.approx(0.2 - sum(ok), abs=1e-6)
    assert after.value("decisions_gateway_team_budget_remaining_usd", team="obs-budget-team") == \
        pytest.approx(10.0 - sum(ok), abs=1e-6)


def test_requests_in_flight(gateway, upstreams):
    good = upstreams[0]
    good.hang_next(30)
    answered: list[int] = []
    caller = threading.Thread(target=lambda: answered.append(decide(gateway.url, key=MASTER).status_code))
    caller.start()
    wait_for(lambda: good.hanging >= 1, what="the request reached the upstream")
    assert scrape(gateway.url, MASTER).value("decisions_gateway_requests_in_flight") == 1
    good.release()
    caller.join(timeout=20)
    assert answered and scrape(gateway.url, MASTER).value("decisions_gateway_requests_in_flight") == 0


def test_the_spend_outbox_depth_while_the_database_is_away(upstreams):
    good = upstreams[0]
    running = start_gateway({"model_list": [typesafe_entry("jev", UPSTREAM_KEY, good.url)],
                             "general_settings": {"database_url": "postgresql://127.0.0.1:9/nowhere",
                                                  "public_metrics": True}})
    try:
        start = scrape(running.url).value("decisions_gateway_spend_outbox_depth")
        for _ in range(3):
            assert decide(running.url).status_code == 200
        assert scrape(running.url).value("decisions_gateway_spend_outbox_depth") == start + 3
    finally:
        running.stop()


def test_cache_hits_misses_and_savings(upstreams, tmp_path):
    good = upstreams[0]
    running = start_gateway({"model_list": [typesafe_entry("jev", UPSTREAM_KEY, good.url, input_cost_per_token=PRICE)],
                             "litellm_settings": {"cache": True},
                             "general_settings": {"public_metrics": True,
                                                  "database_url": f"sqlite:///{tmp_path / 'g.db'}"}})
    try:
        body = {**S1, "state": f"Ticket {time.time_ns()}: I was charged twice."}
        paid = decide(running.url, body=body)
        cached = decide(running.url, body=body)
        assert paid.status_code == cached.status_code == 200
        assert paid.headers["x-decisions-cache-misses"] == "1" and cached.headers["x-decisions-cache-hits"] == "1"
        after = scrape(running.url)
        assert after.value("decisions_gateway_cache_hits_total", model_group="jev") == 1
        assert after.value("decisions_gateway_cache_misses_total", model_group="jev") == 1
        assert after.value("decisions_gateway_cache_saved_usd_total", model_group="jev") == \
            pytest.approx(float(paid.headers["x-decisions-response-cost"]))
        # only the paid call's tokens count, and a full hit never reaches the upstream
        assert after.value("decisions_gateway_tokens_total", token_type="input") * PRICE == \
            pytest.approx(float(paid.headers["x-decisions-response-cost"]))
        assert after.value("decisions_gateway_upstream_duration_seconds_count") == 1
        assert after.value(REQUESTS, model_group="jev", status="200") == 2
    finally:
        running.stop()
