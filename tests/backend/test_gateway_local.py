"""The gateway with the embedded default (``local/smollm2``, as config.example.yaml has it) answers real
decisions offline with no key, on both of its wires, through the in-process backend."""

from __future__ import annotations

import math
from pathlib import Path

import httpx
import pytest

from gateway.config.loader import load_config
from tests.backend.conftest import TICKET

EXAMPLE = Path(__file__).resolve().parents[2] / "config.example.yaml"  # what the README's `make run` serves


@pytest.fixture(scope="module")
def gateway_url(gateway_factory, service):  # `service` first: the gateway reuses the session's model
    config = load_config(EXAMPLE, {})  # no environment: no key anywhere
    assert [(d.model_name, d.provider, d.model) for d in config.deployments] == [("smollm2", "local", "smollm2")]
    return gateway_factory(config, {}).url


def test_openai_wire_through_local(gateway_url):
    resp = httpx.post(f"{gateway_url}/v1/decisions", timeout=120, json={
        "model": "smollm2", "input": TICKET,
        "questions": [{"type": "predicate", "name": "refund", "instructions": "The customer asks for a refund."},
                      {"type": "choice", "name": "team", "instructions": "Which team?",
                       "choices": [{"value": "billing", "description": "charges"}, {"value": "technical"}]},
                      {"type": "score", "name": "urgency", "instructions": "How urgent?",
                       "levels": [{"label": "low"}, {"label": "high", "description": "today"}]}]})
    assert resp.status_code == 200, resp.text
    answers = resp.json()["answers"]
    assert [a["type"] for a in answers] == ["predicate", "choice", "score"]
    assert 0 <= answers[0]["probability"] <= 1
    assert math.fsum(p["probability"] for p in answers[1]["probabilities"]) == pytest.approx(1.0)
    assert resp.json()["usage"]["input_tokens"] > 0


def test_systemone_wire_through_local(gateway_url):
    resp = httpx.post(f"{gateway_url}/v1/systemone", timeout=120, json={
        "state": TICKET, "model": "smollm2",
        "questions": {"refund": {"type": "noul", "instructions": "The customer asks for a refund."},
                      "team": {"type": "choice", "instructions": "Which team?", "criteria": {"billing": None, "sales": None}},
                      "raw": {"type": "choice", "criteria": {"a": None, "b": None}}}})  # no instructions: System One allows it
    assert resp.status_code == 200, resp.text
    answers = resp.json()["answers"]
    assert 0 <= answers["refund"]["noul"] <= 1 and answers["team"]["choice"] in {"billing", "sales"}
    assert answers["raw"]["choice"] in {"a", "b"}
    assert all(0 < a["x_label_mass"] <= 1 for a in answers.values())  # the backend's label_mass, carried through


def test_a_backend_refusal_reaches_the_caller_with_its_reason(gateway_url):
    resp = httpx.post(f"{gateway_url}/v1/decisions", timeout=120, json={
        "model": "smollm2", "input": "word " * 9000,
        "questions": [{"type": "predicate", "name": "refund", "instructions": "A refund?"}]})
    assert resp.status_code == 400, resp.text
    assert "the prompt has" in resp.text and "refund" in resp.text
