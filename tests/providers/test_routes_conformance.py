"""Every provider through both proxy routes (real HTTP: client -> gateway -> fake upstream -> gateway -> client).

One gateway serves one model per provider, each pointed at that provider's running fake. Each
case asks on ``/v1/systemone`` and ``/v1/decisions`` and checks the rendered answers against what
the fake computed from the request it received; an upstream 429 reaches the caller as 429 with
Retry-After in the route's own envelope; a request over the question limit is split upstream and
merged into one response; images reach image-taking providers (as System One assets too) and are
refused before any call by text-only ones.
"""

from __future__ import annotations

import base64
import json
import math

import httpx
import pytest

from providers.registry import get_provider
from tests.fakes import answers as fake_answers
from tests.providers import helpers as h
from tests.providers.cases import CASES, IMAGE_CASES, TEXT_ONLY_CASES
from tests.router_settings import NO_RETRIES

IDS = [c.provider for c in CASES]
SPLIT_LIMIT = 2


def model_name(case, split: bool = False) -> str:
    return f"{case.provider}-{'split' if split else 'm'}"


@pytest.fixture(scope="module")
def gateway(fakes, gateway_factory):
    entries = []
    for case in CASES:
        fake = fakes[case.provider]
        params = {"model": f"{case.provider}/{case.model}", "api_base": case.base(fake), "timeout": 10,
                  **case.params}
        if case.api_key:
            params["api_key"] = case.api_key
        entries.append({"model_name": model_name(case), "litellm_params": params})
        entries.append({"model_name": model_name(case, split=True), "litellm_params": params,
                        "model_info": {"max_questions": SPLIT_LIMIT}})
    return gateway_factory({"model_list": entries, "router_settings": NO_RETRIES})


def post(gateway, path: str, body: dict, headers: dict | None = None) -> httpx.Response:
    return httpx.post(gateway.url + path, content=json.dumps(body).encode(), timeout=20,
                      headers={"Content-Type": "application/json", **(headers or {})})


def assert_s1_answers_match(case, fake, answers: dict, recs) -> None:
    expected = h.fake_distributions(case.wire, fake, recs)
    assert set(answers) == {qid for qid, want in expected.items() if want != "refusal"}
    for qid, answer in answers.items():
        want = expected[qid]
        if answer["type"] == "noul":
            got = [answer["noul"], 1 - answer["noul"]]
        elif answer["type"] == "choice":
            got = list(answer["probabilities"].values())
            assert answer["choice"] == list(answer["probabilities"])[got.index(max(got))]
            assert 0.0 <= answer["confidence"] <= 1.0
        else:
            got = [answer["probabilities"][str(i)] for i in range(len(answer["probabilities"]))]
            assert answer["score"] == pytest.approx(math.fsum(i * p for i, p in enumerate(got)), abs=1e-9)
            assert 0.0 <= answer["confidence"] <= 1.0
        assert got == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_systemone_route(case, gateway, fake_for):
    fake = fake_for(case)
    questions = {**h.S1_QUESTIONS, "secret": {"type": "noul", "instructions": "REFUSE: reveal the card number?"}}
    r = post(gateway, "/v1/systemone", {"model": model_name(case), "state": h.STATE, "questions": questions})
    assert r.status_code == 200, r.text
    body = r.json()
    assert len(fake.requests) == 1 and fake.last.path == case.path
    assert body["model"] == (case.answering_model or case.body_model)
    assert_s1_answers_match(case, fake, body["answers"], fake.requests)
    assert "secret" not in body["answers"]  # a refusal has no System One shape: the key is left out
    assert body["answers"]["urgency"]["legend"] == {"0": "can wait", "1": "this week", "2": "today"}
    assert isinstance(body["usage"]["input_tokens"], int) and body["usage"]["input_tokens"] > 0
    assert r.headers["x-typesafe-request-id"] and r.headers["x-request-id"]
    assert r.headers["x-decisions-model"] == f"{case.provider}/{case.model}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_decisions_route(case, gateway, fake_for):
    fake = fake_for(case)
    questions = [*h.OPENAI_QUESTIONS, {"type": "predicate", "name": "secret", "instructions": "REFUSE: the PIN?"}]
    r = post(gateway, "/v1/decisions", {"model": model_name(case), "input": h.STATE, "questions": questions})
    assert r.status_code == 200, r.text
    body = r.json()
    assert len(fake.requests) == 1
    expected = h.fake_distributions(case.wire, fake, fake.requests)
    assert [a["name"] for a in body["answers"]] == ["refund", "human", "frustration", "secret"]
    assert [a["type"] for a in body["answers"]] == ["predicate", "choice", "score", "refusal"]
    refund, human, frustration, _ = body["answers"]
    assert [refund["probability"], 1 - refund["probability"]] == pytest.approx(expected["refund"], abs=1e-9)
    assert [p["value"] for p in human["probabilities"]] == [True, False]  # typed values come back typed
    assert [p["probability"] for p in human["probabilities"]] == pytest.approx(expected["human"], abs=1e-9)
    assert [p["label"] for p in frustration["probabilities"]] == ["calm", "annoyed", "angry"]
    assert [p["probability"] for p in frustration["probabilities"]] == pytest.approx(expected["frustration"],
                                                                                     abs=1e-9)
    usage = body["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] and usage["input_tokens"] > 0


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_rate_limit_keeps_retry_after_on_both_routes(case, gateway, fake_for):
    fake = fake_for(case)
    label = get_provider(case.provider).label
    fake.fail_next(429, "slow down", headers={"Retry-After": "7"})
    r = post(gateway, "/v1/systemone", {"model": model_name(case), "state": h.STATE, "questions": h.S1_QUESTIONS})
    assert r.status_code == 429 and r.headers["retry-after"] == "7"
    message = r.json()["detail"]["message"]
    assert label in message and "slow down" in message
    assert (case.api_key or "no key") not in r.text
    fake.fail_next(429, "slow down", headers={"Retry-After": "7"})
    r = post(gateway, "/v1/decisions", {"model": model_name(case), "input": h.STATE, "questions": h.OPENAI_QUESTIONS})
    assert r.status_code == 429 and r.headers["retry-after"] == "7"
    assert r.json()["error"]["type"] == "rate_limit_error" and label in r.json()["error"]["message"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_split_over_the_question_limit_on_both_routes(case, gateway, fake_for):
    fake = fake_for(case)
    questions = h.noul_questions(5)
    r = post(gateway, "/v1/systemone", {"model": model_name(case, split=True), "state": h.STATE,
                                        "questions": questions})
    assert r.status_code == 200, r.text
    assert sorted(len(rec.json["questions"]) for rec in fake.requests) == [1, 2, 2]
    body = r.json()
    assert list(body["answers"]) == list(questions)  # in the caller's order, whatever order the calls finished in
    assert_s1_answers_match(case, fake, body["answers"], fake.requests)
    assert body["usage"]["input_tokens"] == sum(fake_answers.token_count(rec.body) for rec in fake.requests)
    if case.provider == "openrouter":  # the call's price is the sum of the chunks' usage.cost
        assert float(r.headers["x-decisions-response-cost"]) == pytest.approx(
            sum(fake_answers.token_count(rec.body) * 1e-7 for rec in fake.requests), rel=1e-6)

    fake.reset()
    listed = [{"type": "predicate", "name": f"p{i}", "instructions": f"Is statement {i} true?"} for i in range(5)]
    r = post(gateway, "/v1/decisions", {"model": model_name(case, split=True), "input": h.STATE,
                                        "questions": listed})
    assert r.status_code == 200, r.text
    assert len(fake.requests) == 3
    assert [a["name"] for a in r.json()["answers"]] == [q["name"] for q in listed]


def _asset_body(case, png: bytes = h.PNG) -> dict:
    ref = "<image:5713aa>"
    return {"model": model_name(case), "state": f"The customer's swatch:\n\n{ref}",
            "questions": {"red": {"type": "noul", "instructions": "Is the swatch red?"}},
            "assets": {ref: {"type": "image", "format": "png", "data_base64": base64.b64encode(png).decode()}}}


@pytest.mark.parametrize("case", IMAGE_CASES, ids=[c.provider for c in IMAGE_CASES])
def test_system_one_assets_reach_the_provider_in_its_shape(case, gateway, fake_for):
    fake = fake_for(case)
    body = _asset_body(case)
    [(ref, asset)] = body["assets"].items()
    r = post(gateway, "/v1/systemone", body)
    assert r.status_code == 200, r.text
    assert set(r.json()["answers"]) == {"red"}
    sent = fake.last.json
    if case.images == "openai":
        assert sent["input"] == [{"role": "user", "content": [
            {"type": "input_text", "text": "The customer's swatch:"}, {"type": "input_image",
                                                                           "image_url": h.PNG_DATA_URL}]}]
    elif case.images == "assets":
        assert sent["assets"] == {ref: asset} and sent["state"] == body["state"]
    elif case.images == "state_parts":
        assert sent["state"] == ["The customer's swatch:", {"type": "image_url", "image_url": {"url": h.PNG_DATA_URL}}]
    elif case.images == "images_field":
        assert sent["images"] == [h.PNG_DATA_URL] and sent["state"] == "The customer's swatch:"


@pytest.mark.parametrize("case", TEXT_ONLY_CASES, ids=[c.provider for c in TEXT_ONLY_CASES])
def test_images_to_a_text_only_provider_are_400_before_any_call(case, gateway, fake_for):
    fake = fake_for(case)
    r = post(gateway, "/v1/systemone", _asset_body(case))
    assert r.status_code == 400
    message = r.json()["detail"]["message"]
    assert case.provider in message and "images" in message
    r = post(gateway, "/v1/decisions", {"model": model_name(case), "questions": h.OPENAI_QUESTIONS[:1], "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "see"},
                                     {"type": "input_image", "image_url": h.PNG_DATA_URL}]}]})
    assert r.status_code == 400 and case.provider in r.json()["error"]["message"]
    assert fake.requests == []


def test_models_route_reports_each_providers_limits(gateway):
    r = httpx.get(gateway.url + "/v1/models", timeout=10)
    assert r.status_code == 200
    limits = {entry["id"]: entry["limits"] for entry in r.json()["data"]}
    for case in CASES:
        want = get_provider(case.provider).limits.as_dict()
        assert limits[model_name(case)] == want
        assert limits[model_name(case, split=True)] == {**want, "max_questions": SPLIT_LIMIT}
    assert limits["cloudflare-m"]["max_questions"] == 64 and limits["perplexity-m"]["levels"] == [1, 10]
    assert limits["bespoke-m"]["options"] == [2, 26] and limits["openai-m"]["max_images"] is None


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_danger_zone_client_headers_reach_typesafe_only(case, gateway, fake_for):
    fake = fake_for(case)
    r = post(gateway, "/v1/systemone", {"model": model_name(case), "state": h.STATE, "questions": h.S1_QUESTIONS},
             headers={"TypeSafe-Danger-Zone-Long-Context": "true", "X-Other": "kept-out"})
    assert r.status_code == 200, r.text
    sent = fake.last.headers
    if case.provider == "typesafe":
        assert sent["typesafe-danger-zone-long-context"] == "true"
    else:
        assert not any(name.startswith("typesafe-danger-zone") for name in sent)
    assert "x-other" not in sent  # other client headers are not forwarded upstream
