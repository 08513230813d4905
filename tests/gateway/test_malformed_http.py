"""tests/malformed_cases.py over HTTP against the running gateway.

Each case gets its status and an error naming the field, in the envelope of the route's wire; none
reaches a fake upstream; none is a 500. Bodies name the configured models ("luna", "jev") instead
of the upstream names the table uses, so the model check passes and the case's own rule is hit.
"""

from __future__ import annotations

import httpx
import pytest

from tests.malformed_cases import MALFORMED, OPENAI, Case

CONFIGURED_MODEL = {OPENAI: "luna"}
DEFAULT_SYSTEMONE_MODEL = "jev"


def with_configured_model(case: Case):
    body = case.body
    if isinstance(body, dict) and "model" in body:
        body = {**body, "model": CONFIGURED_MODEL.get(case.route, DEFAULT_SYSTEMONE_MODEL)}
    return body


def error_fields(route: str, payload: dict) -> list[str]:
    if route == OPENAI:
        return [payload["error"]["param"] or ""]
    detail = payload["detail"]
    assert isinstance(detail, list), f"System One schema errors come as a detail list, got {detail!r}"
    return [".".join(str(p) for p in item["loc"]) for item in detail]


@pytest.fixture(scope="module")
def http(gateway):
    with httpx.Client(base_url=gateway.url, timeout=30) as client:
        yield client


@pytest.mark.parametrize("case", MALFORMED, ids=[f"{c.route}:{c.field}:{i}" for i, c in enumerate(MALFORMED)])
def test_malformed_request_is_refused_before_any_upstream(http, fake_typesafe, fake_openai, case):
    before = (len(fake_typesafe.requests), len(fake_openai.requests))
    resp = http.post(case.route, json=with_configured_model(case))
    assert resp.status_code == case.status, resp.text
    fields = error_fields(case.route, resp.json())
    assert any(case.field in field for field in fields), f"{case.field!r} not named in {fields}: {resp.text}"
    assert (len(fake_typesafe.requests), len(fake_openai.requests)) == before
    assert resp.headers["x-request-id"]


def test_configured_decision_limits_are_what_the_running_gateway_enforces(gateway_factory, fake_typesafe, fake_openai):
    from tests.gateway.conftest import gateway_config

    config = gateway_config(fake_typesafe, fake_openai)
    config["general_settings"] = {"decision_limits": {"max_questions": 2, "systemone_min_choices": 2}}
    strict = gateway_factory(config)
    before = (len(fake_typesafe.requests), len(fake_openai.requests))
    noul = {"type": "noul", "instructions": "Is this about billing?"}
    with httpx.Client(base_url=strict.url, timeout=30) as http:
        three = http.post("/v1/decisions", json={"model": "jev", "input": "hi", "questions": [
            {"type": "predicate", "instructions": "x"}] * 3})
        one_label = http.post("/v1/systemone", json={"model": "jev", "state": "hi", "questions": {
            "tone": {"type": "choice", "criteria": {"calm": None}}}})
        two = http.post("/v1/systemone", json={"model": "jev", "state": "hi", "questions": {"a": noul, "b": noul}})
    assert three.status_code == 400 and three.json()["error"]["param"] == "questions"
    assert "between 1 and 2" in three.json()["error"]["message"]
    assert one_label.status_code == 422
    assert one_label.json()["detail"][0]["loc"] == ["body", "questions", "tone", "choice", "criteria"]
    assert (len(fake_typesafe.requests), len(fake_openai.requests)) == (before[0] + 1, before[1])  # only `two`
    assert two.status_code == 200 and set(two.json()["answers"]) == {"a", "b"}
