"""``local/`` deployments go to the bundled backend in process (``local://`` upstream URLs), no HTTP hop."""

from __future__ import annotations

import httpx
import pytest

from tests.gateway.systemone_checks import check_systemone_response

CONFIG = {"model_list": [{"model_name": "smollm2", "litellm_params": {"model": "local/smollm2", "timeout": 300}}]}
QUESTIONS = {
    "billing": {"type": "noul", "instructions": "Is this about billing?"},
    "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset"}},
    "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["Can wait", "This week", "Today"]},
}


@pytest.fixture(scope="module")
def local_gateway(gateway_factory):
    return gateway_factory(CONFIG)


def test_readiness_waits_for_the_local_model_to_load(local_gateway):
    import time

    deadline = time.monotonic() + 300
    # One client for the polls: httpx.get builds a client (and its TLS context) each call, ~60 ms of CPU
    with httpx.Client(base_url=local_gateway.url, timeout=10) as client:
        while (ready := client.get("/health/readiness")).status_code == 503:
            assert ready.json()["local_models"] == "loading" and time.monotonic() < deadline
            time.sleep(0.2)
        assert ready.status_code == 200 and ready.json()["local_models"] == "loaded"
        assert client.get("/health/liveliness").status_code == 200


def test_both_routes_answer_from_the_bundled_model(local_gateway):
    request = {"model": "smollm2", "state": "I was charged twice for my order.", "questions": QUESTIONS}
    s1 = httpx.post(f"{local_gateway.url}/v1/systemone", json=request, timeout=300)
    assert s1.status_code == 200, s1.text
    assert s1.headers["x-decisions-model"] == "local/smollm2" and s1.headers["x-decisions-response-cost"] == "0.0"
    check_systemone_response(request, s1.json())

    oa = httpx.post(f"{local_gateway.url}/v1/decisions", timeout=300, json={
        "model": "smollm2", "input": request["state"],
        "questions": [{"type": "predicate", "name": "billing", "instructions": "Is this about billing?"}]})
    assert oa.status_code == 200, oa.text
    (answer,) = oa.json()["answers"]
    assert answer["name"] == "billing" and 0.0 <= answer["probability"] <= 1.0
    # The same question, same state, same model: the same probability on both wires.
    assert answer["probability"] == pytest.approx(s1.json()["answers"]["billing"]["noul"], abs=1e-3)


def test_a_local_model_that_cannot_load_is_named_by_readiness_and_by_the_answer(gateway_factory, tmp_path):
    import time

    missing = str(tmp_path / "no-such-model")
    gateway = gateway_factory({"model_list": [{"model_name": "broken", "litellm_params": {"model": f"local/{missing}"}}]})
    deadline = time.monotonic() + 60
    with httpx.Client(base_url=gateway.url, timeout=10) as client:
        while (ready := client.get("/health/readiness")).status_code == 503:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    assert missing in ready.json()["local_model_errors"]
    resp = httpx.post(f"{gateway.url}/v1/systemone", timeout=60, json={
        "model": "broken", "state": "x", "questions": {"q": {"type": "noul", "instructions": "Yes?"}}})
    assert resp.status_code == 400 and "cannot be loaded" in resp.json()["detail"]["message"]
