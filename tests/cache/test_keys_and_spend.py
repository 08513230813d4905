"""With keys and the spend log: ``metadata.cache`` on a key or its team, the spend rows' hits, misses
and cost saved, and budgets reserved only for the misses (a full hit pays nothing)."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.cache.conftest import S1_QUESTIONS, TYPESAFE_KEY, asked, cache_counts, fresh_state, jev, s1_body
from tests.conftest import start_gateway
from tests.fakes.typesafe import FakeTypeSafe
from tests.shared_state.conftest import SETTLE_TIMEOUT_S

MASTER = "sk-master-cache-0123456789"


@pytest.fixture(scope="module")
def upstream():
    with FakeTypeSafe(TYPESAFE_KEY) as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(upstream, tmp_path_factory):
    db = tmp_path_factory.mktemp("cache-db") / "gateway.db"
    running = start_gateway({"model_list": [jev("jev", upstream)], "litellm_settings": {"cache": True},
                             "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"},
                             "router_settings": {"num_retries": 0}})
    yield running
    running.stop()


def admin(gateway, path: str, body: dict | None = None, method: str = "POST") -> httpx.Response:
    response = httpx.request(method, gateway.url + path, json=body, headers={"Authorization": f"Bearer {MASTER}"},
                             timeout=20)
    assert response.status_code == 200, response.text
    return response


def ask(gateway, key: str, body: dict) -> httpx.Response:
    return httpx.post(gateway.url + "/v1/systemone", json=body, headers={"Authorization": f"Bearer {key}"},
                      timeout=20)


def spend_rows(gateway, request_ids: list[str]) -> dict[str, dict]:
    deadline = time.monotonic() + SETTLE_TIMEOUT_S  # the rows drain behind the answers
    while True:
        rows = {}
        for request_id in request_ids:
            data = admin(gateway, f"/spend/logs/v2?request_id={request_id}", method="GET").json()["data"]
            if data:
                rows[request_id] = data[0]
        if len(rows) == len(request_ids) or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def test_spend_rows_record_hits_misses_and_the_cost_saved(gateway, upstream):
    state = fresh_state("spend")
    paid = ask(gateway, MASTER, s1_body(state))
    partial = ask(gateway, MASTER, s1_body(state, {**S1_QUESTIONS, "spam": {"type": "noul", "instructions": "Spam?"}}))
    full = ask(gateway, MASTER, s1_body(state))
    ids = [r.headers["x-request-id"] for r in (paid, partial, full)]
    rows = spend_rows(gateway, ids)
    first, second, third = (rows[i] for i in ids)
    cost = float(paid.headers["x-decisions-response-cost"])
    assert (first["cache_hits"], first["cache_misses"], first["cost_saved"]) == (0, 3, 0.0)
    assert first["spend"] == pytest.approx(cost) and first["prompt_tokens"] > 0
    assert (second["cache_hits"], second["cache_misses"]) == (3, 1)
    assert second["cost_saved"] == pytest.approx(cost, rel=1e-9)
    assert second["spend"] == pytest.approx(float(partial.headers["x-decisions-response-cost"]))
    assert second["prompt_tokens"] == len(upstream.requests[-1].body) // 4  # only the new call's tokens
    assert (third["cache_hits"], third["cache_misses"], third["spend"]) == (3, 0, 0.0)
    assert third["prompt_tokens"] == 0 and third["cost_saved"] == pytest.approx(cost, rel=1e-9)
    assert third["model"] == "typesafe/jev-latest" and third["status"] == 200


def test_metadata_cache_on_a_key_or_its_team_switches_the_cache(gateway, upstream):
    team = admin(gateway, "/team/new", {"team_alias": "no-cache-team", "metadata": {"cache": "off"}}).json()["team_id"]
    in_team = admin(gateway, "/key/generate", {"team_id": team}).json()["key"]
    overrides = admin(gateway, "/key/generate", {"team_id": team, "metadata": {"cache": "on"}}).json()["key"]
    key_off = admin(gateway, "/key/generate", {"metadata": {"cache": False}}).json()["key"]
    state = fresh_state("metadata")
    ask(gateway, overrides, s1_body(state))  # cached for the team (the cache's default scope)
    for key in (in_team, key_off):
        before = len(upstream.requests)
        response = ask(gateway, key, s1_body(state))
        assert response.status_code == 200 and "x-decisions-cache-hits" not in response.headers
        assert len(asked(upstream, before)) == 1
    before = len(upstream.requests)
    response = ask(gateway, overrides, s1_body(state))
    assert cache_counts(response) == (3, 0) and upstream.requests[before:] == []


def test_a_budget_is_reserved_only_for_the_misses(gateway, upstream):
    """A budget too small for the worst case of paying for this input: the first call still gets in
    (its true cost fits, gateway/admission), a full hit gets in and costs nothing, a partial hit
    pays for its miss, the one call past the budget; then the spent budget refuses even a hit."""
    state = fresh_state("budget") + " Details follow." * 500  # a worst case of about 2e-4 USD
    team = admin(gateway, "/team/new", {"team_alias": "budget-team"}).json()["team_id"]
    key = admin(gateway, "/key/generate", {"max_budget": 1e-4, "team_id": team}).json()["key"]
    first = ask(gateway, key, s1_body(state))
    assert first.status_code == 200 and float(first.headers["x-decisions-response-cost"]) < 1e-4
    before = len(upstream.requests)
    hit = ask(gateway, key, s1_body(state))
    assert hit.status_code == 200 and cache_counts(hit) == (3, 0) and upstream.requests[before:] == []
    assert hit.headers["x-decisions-response-cost"] == "0.0"
    assert hit.headers["x-litellm-key-spend"] == first.headers["x-litellm-key-spend"]
    partial = ask(gateway, key, s1_body(state, {**S1_QUESTIONS, "spam": {"type": "noul", "instructions": "Spam?"}}))
    assert partial.status_code == 200 and len(upstream.requests) == before + 1
    assert float(partial.headers["x-litellm-key-spend"]) > 1e-4
    refused = ask(gateway, key, s1_body(state))
    assert refused.status_code == 400 and "budget" in refused.text.lower() and len(upstream.requests) == before + 1
