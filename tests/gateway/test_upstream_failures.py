"""Upstream failures over HTTP: each becomes a clear error in the caller's envelope, never a made-up answer."""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.fakes.typesafe import FakeTypeSafe
from tests.router_settings import NO_RETRIES

KEY = "ts-secret-upstream-key"
S1 = {"state": "I was charged twice.", "questions": {"billing": {"type": "noul", "instructions": "Billing?"}}}
OA = {"input": "I was charged twice.", "questions": [{"type": "predicate", "name": "b", "instructions": "Billing?"}]}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def slow_typesafe():
    with FakeTypeSafe(api_key=KEY) as fake:
        yield fake


@pytest.fixture(scope="module")
def failing_gateway(gateway_factory, slow_typesafe):
    dead = f"http://127.0.0.1:{free_port()}"
    return gateway_factory({"model_list": [
        {"model_name": "dead", "litellm_params": {"model": "typesafe/jev-latest", "api_key": KEY, "api_base": dead}},
        {"model_name": "slow", "litellm_params": {"model": "typesafe/jev-latest", "api_key": KEY,
                                                   "api_base": slow_typesafe.url, "timeout": 0.5}},
    ], "router_settings": NO_RETRIES})


@pytest.mark.parametrize("path, body", [("/v1/systemone", S1), ("/v1/decisions", OA)])
def test_unreachable_upstream_is_a_502_without_the_key(failing_gateway, path, body):
    resp = httpx.post(f"{failing_gateway.url}{path}", json={**body, "model": "dead"}, timeout=30)
    assert resp.status_code == 502
    assert "typesafe" in resp.text and KEY not in resp.text
    assert "x-decisions-response-cost" not in resp.headers


def test_a_slow_upstream_is_a_504(failing_gateway, slow_typesafe):
    slow_typesafe.queue(200, json={"model": "x", "answers": {}, "usage": {}}, delay=3.0)
    resp = httpx.post(f"{failing_gateway.url}/v1/decisions", json={**OA, "model": "slow"}, timeout=30)
    assert resp.status_code == 504 and resp.json()["error"]["message"]
    assert KEY not in resp.text


@pytest.mark.parametrize("status", [429, 503])
def test_upstream_errors_reach_the_caller_in_its_envelope(gateway, fake_typesafe, status):
    fake_typesafe.fail_next(status, "upstream is busy", headers={"Retry-After": "2"})
    resp = httpx.post(f"{gateway.url}/v1/decisions", json={**OA, "model": "jev"}, timeout=30)
    assert resp.status_code == status
    assert set(resp.json()) == {"error"} and resp.json()["error"]["message"]
    assert "probability" not in resp.text
    if status == 429:
        assert resp.headers["retry-after"] == "2"


def test_an_unusable_upstream_answer_is_a_502_not_a_made_up_probability(gateway, fake_typesafe):
    fake_typesafe.queue(200, json={"model": "jev", "answers": {"billing": {"type": "noul", "noul": "NaN"}},
                                   "usage": {"input_tokens": 1, "output_tokens": 0}})
    resp = httpx.post(f"{gateway.url}/v1/systemone", json={**S1, "model": "jev"}, timeout=30)
    assert resp.status_code == 502 and "noul" not in resp.json().get("answers", {})
    assert resp.headers["x-typesafe-request-id"] == resp.headers["x-request-id"]
