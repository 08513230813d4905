"""Keys, the admin API and the spend log through the running gateway: a master key closes every
route, a virtual key made through /key/generate calls the models it may, and every call lands in
/spend/logs with the cost the caller was told."""

from __future__ import annotations

import logging

import httpx
import pytest

from tests.conftest import start_gateway
from tests.fakes.typesafe import FakeTypeSafe
from tests.key_changes import after_change_sync
from tests.shared_state.conftest import wait_for

MASTER = "sk-master-e2e-0123456789"
UPSTREAM_KEY = "ts-e2e-upstream-key"
S1 = {"state": "I was charged twice.", "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}
OPENAI = {"input": "I was charged twice.", "questions": [{"type": "predicate", "name": "refund",
                                                          "instructions": "Refund?"}]}


@pytest.fixture(scope="module")
def upstream():
    with FakeTypeSafe(UPSTREAM_KEY) as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(upstream, tmp_path_factory, monkeypatch_module):
    monkeypatch_module.setenv("TYPESAFE_API_KEY", UPSTREAM_KEY)
    monkeypatch_module.setenv("TYPESAFE_API_BASE", upstream.url)
    db = tmp_path_factory.mktemp("db") / "gateway.db"
    entry = lambda name: {"model_name": name, "litellm_params": {  # noqa: E731
        "model": "typesafe/jev-latest", "api_key": UPSTREAM_KEY, "api_base": upstream.url}}
    running = start_gateway({"model_list": [entry("jev"), entry("luna")],
                             "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"},
                             "router_settings": {"num_retries": 0}})
    yield running
    running.stop()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def admin(gateway, path: str, body: dict | None = None, method: str = "POST") -> httpx.Response:
    return httpx.request(method, gateway.url + path, json=body, headers=bearer(MASTER), timeout=20)


def test_without_a_key_every_route_is_closed_in_its_own_envelope(gateway, upstream):
    before = len(upstream.requests)
    s1 = httpx.post(gateway.url + "/v1/systemone", json={**S1, "model": "jev"}, timeout=10)
    assert s1.status_code == 401 and "message" in s1.json()["detail"]
    oa = httpx.post(gateway.url + "/v1/decisions", json={**OPENAI, "model": "jev"}, timeout=10)
    assert oa.status_code == 401 and oa.json()["error"]["type"] == "authentication_error"
    assert httpx.get(gateway.url + "/v1/models", timeout=10).status_code == 401
    wrong = httpx.post(gateway.url + "/v1/systemone", json={**S1, "model": "jev"}, headers=bearer("sk-nope"),
                       timeout=10)
    assert wrong.status_code == 401
    passthrough = httpx.post(gateway.url + "/typesafe/v1/systemone", json={**S1, "model": "jev-latest"}, timeout=10)
    assert passthrough.status_code == 401
    assert httpx.post(gateway.url + "/key/generate", json={}, timeout=10).status_code == 401
    assert len(upstream.requests) == before  # nothing reached the upstream


def test_a_virtual_key_calls_its_models_and_every_call_is_in_the_spend_log(gateway, caplog):
    caplog.set_level(logging.DEBUG)
    made = admin(gateway, "/key/generate", {"key_alias": "e2e-support", "models": ["jev"]})
    assert made.status_code == 200, made.text
    key = made.json()["key"]
    assert key.startswith("sk-") and len(key) > 40
    answered = []
    for body, path in ((S1, "/v1/systemone"), (OPENAI, "/v1/decisions")):
        r = httpx.post(gateway.url + path, json={**body, "model": "jev"}, headers=bearer(key), timeout=20)
        assert r.status_code == 200, r.text
        assert r.headers["x-litellm-response-cost"] == r.headers["x-decisions-response-cost"]
        answered.append((r.headers["x-request-id"], float(r.headers["x-decisions-response-cost"])))
    refused = httpx.post(gateway.url + "/v1/systemone", json={**S1, "model": "luna"}, headers=bearer(key), timeout=10)
    assert refused.status_code == 403 and "luna" in refused.json()["detail"]["message"]
    models = httpx.get(gateway.url + "/v1/models", headers=bearer(key), timeout=10).json()
    assert [m["id"] for m in models["data"]] == ["jev"]

    def logged() -> list[dict]:
        logs = admin(gateway, "/spend/logs/v2?key_alias=e2e-support", method="GET")
        assert logs.status_code == 200, logs.text
        return logs.json()["data"]

    rows = wait_for(lambda: len(rows := logged()) >= 3 and rows, what="the three calls' spend rows drained")
    by_id = {row["request_id"]: row for row in rows}
    for request_id, cost in answered:
        assert by_id[request_id]["spend"] == pytest.approx(cost) and by_id[request_id]["status"] == 200
        assert by_id[request_id]["model_group"] == "jev" and by_id[request_id]["key_alias"] == "e2e-support"
    assert sorted(row["status"] for row in rows) == [200, 200, 403]
    assert all(key not in row["api_key"] for row in rows)
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert key not in text and MASTER not in text and UPSTREAM_KEY not in text


def test_a_blocked_key_stops_within_a_second(gateway):
    key = admin(gateway, "/key/generate", {"key_alias": "e2e-blocked"}).json()["key"]
    ok = httpx.post(gateway.url + "/v1/systemone", json={**S1, "model": "jev"}, headers=bearer(key), timeout=10)
    assert ok.status_code == 200
    blocked, last = after_change_sync(
        lambda: admin(gateway, "/key/block", {"key": key}),
        lambda: httpx.post(gateway.url + "/v1/systemone", json={**S1, "model": "jev"}, headers=bearer(key), timeout=30),
        lambda r: r.status_code == 403, "the block")
    assert blocked.status_code == 200 and last.status_code == 403


def test_the_master_key_calls_everything_and_the_pass_through(gateway, upstream):
    r = httpx.post(gateway.url + "/v1/systemone", json={**S1, "model": "luna"}, headers=bearer(MASTER), timeout=10)
    assert r.status_code == 200
    relayed = httpx.post(gateway.url + "/typesafe/v1/systemone", json={**S1, "model": "jev-latest"},
                         headers=bearer(MASTER), timeout=10)
    assert relayed.status_code == 200 and upstream.last.header("authorization") == f"Bearer {UPSTREAM_KEY}"
