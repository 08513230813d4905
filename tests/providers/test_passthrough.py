"""The pass-through routes through the gateway app (real HTTP): Laya, Bespoke Nimble and TypeSafe."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from tests.conftest import start_gateway
from tests.fakes.selfhosted import FakeLaya, FakeNimble
from tests.fakes.typesafe import FakeTypeSafe

CONFIG = {"model_list": [{"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": "cfg"}}]}
BODY = {"model": "english", "state": "Payouts failing for 3 days",
        "questions": {"urgent": {"type": "noul", "instructions": "Is this urgent?"},
                      "team": {"type": "choice", "criteria": {"billing": None, "tech": None}}}}
ENV_NAMES = ("LAYA_API_BASE", "LAYA_API_KEY", "BESPOKE_API_BASE", "BESPOKE_API_KEY", "TYPESAFE_API_KEY",
             "TYPESAFE_API_BASE")


@pytest.fixture
def start(monkeypatch):
    """A gateway started with these pass-through settings (read once, at start) in its environment."""
    started = []

    def start_with(**env: str):
        for name in ENV_NAMES:
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        started.append(start_gateway(CONFIG))
        return started[-1]

    yield start_with
    for running in started:
        running.stop()


@pytest.fixture
def gateway(start):
    return start()


def send(gateway, path: str, body=BODY, headers: dict | None = None, method: str = "POST") -> httpx.Response:
    content = json.dumps(body).encode() if body is not None else None
    return httpx.request(method, gateway.url + path, content=content, timeout=10,
                         headers={"Content-Type": "application/json", **(headers or {})})


@pytest.mark.parametrize("route, setting", [("/laya/v1/systemone", "LAYA_API_BASE"),
                                            ("/bespoke/v1/systemone", "BESPOKE_API_BASE")])
def test_unconfigured_self_hosted_route_is_503_naming_the_setting(gateway, route, setting):
    r = send(gateway, route)
    assert r.status_code == 503
    assert setting in r.json()["detail"]["message"]


def test_laya_route_relays_with_the_configured_key(start):
    with FakeLaya("laya-secret") as laya:
        gateway = start(LAYA_API_BASE=laya.url + "/v1", LAYA_API_KEY="laya-secret")
        r = send(gateway, "/laya/v1/systemone", headers={"Authorization": "Bearer caller-key"})
        assert r.status_code == 200
        rec = laya.last
        assert rec.path == "/v1/systemone"
        assert rec.header("authorization") == "Bearer laya-secret"  # never the caller's own key
        assert rec.json == BODY
        assert r.json()["routing"]["head"] == "laya-rl-agent"  # relayed as the server sent it
        laya.fail_next(503, "too many concurrent requests")
        busy = send(gateway, "/laya/v1/systemone")
        assert busy.status_code == 503 and busy.json() == {"detail": "too many concurrent requests"}


def test_bespoke_route_without_a_key_sends_no_authorization(start):
    with FakeNimble() as nimble:
        gateway = start(BESPOKE_API_BASE=nimble.url)
        r = send(gateway, "/bespoke/v1/systemone", headers={"Authorization": "Bearer caller-key"})
        assert r.status_code == 200 and set(r.json()["answers"]) == {"urgent", "team"}
        assert nimble.last.header("authorization") is None
        assert r.headers["x-request-id"]


def test_bespoke_unreachable_is_502(start):
    gateway = start(BESPOKE_API_BASE="http://127.0.0.1:9")
    r = send(gateway, "/bespoke/v1/systemone")
    assert r.status_code == 502 and "message" in r.json()["detail"]


def test_typesafe_passthrough_forwards_and_prices(start, caplog):
    with FakeTypeSafe("ts-env-key") as typesafe:
        gateway = start(TYPESAFE_API_KEY="ts-env-key", TYPESAFE_API_BASE=typesafe.url)
        typesafe.queue(200, json={"model": "jev-1.13-20260917", "answers": {"urgent": {"type": "noul", "noul": 0.9}},
                                  "usage": {"input_tokens": 1000, "output_tokens": 0,
                                            "input_tokens_details": {"cached_tokens": 400}}},
                       headers={"x-typesafe-request-id": "ts-req-1"})
        body = {**BODY, "model": "jev-latest"}
        with caplog.at_level(logging.INFO, logger="gateway.passthrough"):
            r = send(gateway, "/typesafe/v1/systemone?trace=1", body,
                     headers={"Authorization": "Bearer caller-key", "TypeSafe-Danger-Zone-Images": "true"})
        assert r.status_code == 200 and r.headers["x-typesafe-request-id"] == "ts-req-1"
        rec = typesafe.last
        assert (rec.path, rec.query) == ("/v1/systemone", {"trace": ["1"]})
        assert rec.header("authorization") == "Bearer ts-env-key"
        assert rec.header("typesafe-danger-zone-images") == "true"
        assert rec.body == json.dumps(body).encode()
        # jev-latest's price: 4.2e-8 per input token; cached tokens at the cache-read price (= input here).
        assert float(r.headers["x-decisions-response-cost"]) == pytest.approx(1000 * 4.2e-8)
        assert any("cost" in m for m in caplog.messages)


def test_typesafe_passthrough_relays_errors_and_other_methods(start):
    with FakeTypeSafe("ts-env-key") as typesafe:
        gateway = start(TYPESAFE_API_KEY="ts-env-key", TYPESAFE_API_BASE=typesafe.url)
        models = send(gateway, "/typesafe/v1/models", body=None, method="GET")
        assert models.status_code == 200 and models.json()["models"][0]["name"] == "jev-latest"
        assert "x-decisions-response-cost" not in models.headers
        typesafe.fail_next(429, "slow down", headers={"Retry-After": "4"})
        limited = send(gateway, "/typesafe/v1/systemone")
        assert limited.status_code == 429 and limited.headers["retry-after"] == "4"
        assert "x-decisions-response-cost" not in limited.headers


def test_typesafe_passthrough_without_a_key_is_503(gateway):
    r = send(gateway, "/typesafe/v1/systemone")
    assert r.status_code == 503 and "TYPESAFE_API_KEY" in r.json()["detail"]["message"]


@pytest.mark.parametrize("base, path, url", [
    ("https://api.typesafe.ai", "v1/systemone", "https://api.typesafe.ai/v1/systemone"),
    ("https://api.typesafe.ai/v1/", "v1/systemone", "https://api.typesafe.ai/v1/systemone"),
    ("https://api.typesafe.ai/v1", "v1", "https://api.typesafe.ai/v1"),
    ("http://proxy/typesafe", "/v1/models", "http://proxy/typesafe/v1/models"),
    ("http://host/v1", "v2/other", "http://host/v1/v2/other"),
])
def test_typesafe_passthrough_url(base, path, url):
    from gateway.passthrough.policy import upstream_url

    assert upstream_url(base, path) == url


def test_typesafe_passthrough_with_a_v1_base(start):
    with FakeTypeSafe("ts-env-key") as typesafe:
        # the base in the form the typesafe/ provider accepts
        gateway = start(TYPESAFE_API_KEY="ts-env-key", TYPESAFE_API_BASE=typesafe.url + "/v1")
        r = send(gateway, "/typesafe/v1/systemone", {**BODY, "model": "jev-latest"})
        assert r.status_code == 200 and typesafe.last.path == "/v1/systemone"


def test_passthrough_never_relays_the_gateway_key(start):
    with FakeTypeSafe("ts-env-key") as typesafe, FakeLaya("laya-secret") as laya:
        gateway = start(TYPESAFE_API_KEY="ts-env-key", TYPESAFE_API_BASE=typesafe.url, LAYA_API_BASE=laya.url,
                        LAYA_API_KEY="laya-secret")
        typesafe.fail_next(401, "Invalid API key ts-env-key")
        r = send(gateway, "/typesafe/v1/systemone")
        assert r.status_code == 401 and "ts-env-key" not in r.text and "[redacted]" in r.text
        laya.fail_next(401, "bad bearer laya-secret")
        r = send(gateway, "/laya/v1/systemone")
        assert r.status_code == 401 and "laya-secret" not in r.text
