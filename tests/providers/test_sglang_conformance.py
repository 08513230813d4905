"""``sglang/`` against its fake (tests/fakes/sglang.py), as the shared suite does for the System One
providers: both caller wires, the outgoing request field by field, answers against what the fake
computed, a split over the 64-question limit, each error class, images refused before any call, and
both proxy routes over HTTP. (The SGLang wire has no refusal answer.)"""

from __future__ import annotations

import json

import httpx
import pytest

from providers.base import Deployment
from tests.fakes import answers as fake_answers
from tests.fakes.sglang import LABEL_MASS, FakeSGLang
from tests.providers import helpers as h
from tests.router_settings import NO_RETRIES
from translators import openai as openai_wire
from translators import systemone as systemone_wire
from translators.errors import Unsupported, UpstreamError

KEY = "sg-test-key"


@pytest.fixture(scope="module")
def sglang():
    with FakeSGLang(KEY) as fake:
        yield fake


@pytest.fixture
def fake(sglang):
    sglang.reset()
    return sglang


def deployment(fake, **changes) -> Deployment:
    values = dict(model_name="sg", provider="sglang", model="smollm2", api_key=KEY, api_base=fake.url + "/v1",
                  timeout=10.0)
    values.update(changes)
    return Deployment(**values)


def expected(fake, recs) -> dict[str, list[float]]:
    out = {}
    for rec in recs:
        for qid, answer in fake.expected_answers(rec).items():
            out[qid] = list(answer["probabilities"].values())
    return out


def assert_matches(fake, result, recs) -> None:
    want = expected(fake, recs)
    assert [a.question_id for a in result.answers] == list(want)
    for answer in result.answers:
        assert answer.probabilities == pytest.approx(want[answer.question_id], abs=1e-12)
        assert answer.label_mass == LABEL_MASS


async def test_systemone_wire(fake):
    req = h.s1_request()
    decided = await h.decide(deployment(fake), req)
    rec = fake.last
    assert (rec.method, rec.path, rec.header("authorization"), rec.header("content-type")) == (
        "POST", "/v1/decisions", f"Bearer {KEY}", "application/json")
    assert rec.json == {"model": "smollm2", "input": h.STATE, "prompt_format_version": 1, "questions": [
        {"id": "refund", "type": "yes_no", "question": "Is the customer asking for a refund?"},
        {"id": "team", "type": "choice", "question": "Which team should handle this?",
         "options": [{"name": "billing", "description": "payments and refunds"}, {"name": "technical"},
                     {"name": "sales", "description": "pre-sales questions"}]},
        {"id": "urgency", "type": "score", "question": "How urgent is this?",
         "levels": ["can wait", "this week", "today"]}]}
    assert decided.result.model == "smollm2"
    assert_matches(fake, decided.result, [rec])
    rendered = systemone_wire.render_response(decided.result, req)
    assert rendered["answers"]["urgency"]["legend"] == {"0": "can wait", "1": "this week", "2": "today"}
    assert rendered["usage"]["input_tokens"] == fake_answers.token_count(rec.body)


async def test_openai_wire(fake):
    req = h.openai_request()
    decided = await h.decide(deployment(fake), req)
    questions = fake.last.json["questions"]
    assert questions[1]["options"] == [{"name": "true", "description": "a person is needed"}, {"name": "false"}]
    assert questions[2]["levels"] == ["calm", "annoyed", "angry: hostile"]
    assert_matches(fake, decided.result, [fake.last])
    rendered = openai_wire.render_response(decided.result, req)
    assert [a["type"] for a in rendered["answers"]] == ["predicate", "choice", "score"]
    assert isinstance(rendered["answers"][1]["choice"], bool)


async def test_split_over_the_64_question_limit(fake):
    questions = h.noul_questions(65)
    decided = await h.decide(deployment(fake), h.s1_request(questions))
    assert sorted(len(r.json["questions"]) for r in fake.requests) == [32, 33]
    assert [a.question_id for a in decided.result.answers] == list(questions)
    assert decided.result.usage.input_tokens == sum(fake_answers.token_count(r.body) for r in fake.requests)


@pytest.mark.parametrize("status, caller", [(400, 400), (401, 401), (404, 404), (429, 429), (500, 502), (503, 503)])
async def test_error_statuses(fake, status, caller):
    fake.fail_next(status, f"scripted {status}", headers={"Retry-After": "5"} if status == 429 else None)
    with pytest.raises(UpstreamError) as caught:
        await h.decide(deployment(fake), h.s1_request())
    err = caught.value
    assert (err.status, err.provider) == (caller, "sglang")
    assert "SGLang" in err.message and f"scripted {status}" in err.message and KEY not in err.message
    if status == 429:
        assert err.headers["Retry-After"] == "5"


async def test_timeout_connection_and_non_json(fake):
    fake.queue(200, json={"answers": {}}, delay=1.0)
    with pytest.raises(UpstreamError) as caught:
        await h.decide(deployment(fake, timeout=0.2), h.s1_request())
    assert caught.value.status == 504 and "sglang" in caught.value.message
    with pytest.raises(UpstreamError) as caught:
        await h.decide(deployment(fake, api_base="http://127.0.0.1:9"), h.s1_request())
    assert caught.value.status == 502 and "sglang" in caught.value.message
    fake.queue(200, body="<html>oops</html>", headers={"Content-Type": "text/html"})
    with pytest.raises(UpstreamError) as caught:
        await h.decide(deployment(fake), h.s1_request())
    assert caught.value.status == 502 and "SGLang" in caught.value.message


async def test_capacity_and_images_refused_before_any_call(fake):
    many = {"pick": {"type": "choice", "instructions": "Which?", "criteria": {f"o{i}": None for i in range(27)}}}
    with pytest.raises(Unsupported) as caught:
        await h.decide(deployment(fake), h.s1_request(many))
    assert "options per choice" in caught.value.message
    image = h.openai_request(questions=[{"type": "predicate", "name": "p", "instructions": "?"}],
                             input=[{"role": "user", "content": [{"type": "input_image", "image_url": h.PNG_DATA_URL}]}])
    with pytest.raises(Unsupported) as caught:
        await h.decide(deployment(fake), image)
    assert "sglang" in caught.value.message and "images" in caught.value.message
    assert fake.requests == []


def test_both_proxy_routes(fake, gateway_factory):
    gateway = gateway_factory({"model_list": [{"model_name": "sg", "litellm_params": {
        "model": "sglang/smollm2", "api_key": KEY, "api_base": fake.url}}], "router_settings": NO_RETRIES})
    post = lambda path, body: httpx.post(gateway.url + path, content=json.dumps(body).encode(), timeout=20,  # noqa: E731
                                         headers={"Content-Type": "application/json"})
    r = post("/v1/systemone", {"model": "sg", "state": h.STATE, "questions": h.S1_QUESTIONS})
    assert r.status_code == 200, r.text
    want = expected(fake, [fake.last])
    team = r.json()["answers"]["team"]
    assert list(team["probabilities"].values()) == pytest.approx(want["team"], abs=1e-9)
    r = post("/v1/decisions", {"model": "sg", "input": h.STATE, "questions": h.OPENAI_QUESTIONS})
    assert r.status_code == 200, r.text
    assert [a["name"] for a in r.json()["answers"]] == ["refund", "human", "frustration"]
    fake.fail_next(429, "busy", headers={"Retry-After": "2"})
    r = post("/v1/decisions", {"model": "sg", "input": h.STATE, "questions": h.OPENAI_QUESTIONS})
    assert r.status_code == 429 and r.headers["retry-after"] == "2" and "SGLang" in r.json()["error"]["message"]
