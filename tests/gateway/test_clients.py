"""The real clients over HTTP against the running gateway in front of the fake upstreams.

typesafe-sdk (sync and async; a zstd body; an image as multipart), openai (``decisions.create``)
and Nimble's strict client. Both directions of translation are checked value by value: what the
fake upstream received, field by field, and the answers the client got.
"""

from __future__ import annotations

import base64
import json
import math

import httpx
import pytest
from bespokelabs.nimble import Nimble
from typesafe_sdk import AsyncTypeSafeClient, Image, TypeSafeClient

from tests.gateway.conftest import CLIENT_KEY
from tests.gateway.systemone_checks import check_systemone_response

STATE = "I was charged twice for order #4411 and want one of the charges refunded today."
S1_QUESTIONS = {
    "billing": {"type": "noul", "instructions": "Is this about billing?",
                "criteria": {"true": "mentions a charge", "false": None}},
    "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset"}},
    "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["Can wait", "This week", "Today"]},
    "raw": {"type": "choice", "criteria": {"a": None, "b": None}},
}
OPENAI_QUESTIONS = [
    {"type": "predicate", "name": "dup", "instructions": "The customer reports a duplicate charge."},
    {"type": "choice", "name": "category", "instructions": "Classify",
     "choices": [{"value": "billing", "description": "Payments"}, {"value": True}]},
    {"type": "score", "name": "urgency", "instructions": "How urgent?",
     "levels": [{"label": "low"}, {"label": "med", "description": "m"}, {"label": "high"}]},
]
# A 1x1 PNG.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def normalised(values: list[float]) -> list[float]:
    total = math.fsum(values)
    return [v / total for v in values]


def raw_json(response) -> dict:
    return response.raw_http_response.json()


# ---- System One client -> OpenAI upstream ---------------------------------------------------


def test_typesafe_client_to_an_openai_model_translates_both_ways(gateway, fake_openai):
    with TypeSafeClient(api_key=CLIENT_KEY, base_url=gateway.url, compression=False) as client:
        response = client.system_one(STATE, S1_QUESTIONS, model="luna")
    sent = fake_openai.last
    assert sent.path == "/v1/decisions" and sent.header("authorization") == "Bearer sk-test-openai"
    assert sent.json == {
        "model": "gpt-6-luna",
        "input": STATE,
        "questions": [
            {"type": "predicate", "name": "billing",
             "instructions": "Is this about billing?\n\nAnswer true when: mentions a charge"},
            {"type": "choice", "name": "tone", "instructions": "Tone?",
             "choices": [{"value": "calm"}, {"value": "angry", "description": "upset"}]},
            {"type": "score", "name": "urgency", "instructions": "How urgent?",
             "levels": [{"label": "Can wait"}, {"label": "This week"}, {"label": "Today"}]},
            {"type": "choice", "name": "raw", "instructions": "Which choice best fits the input?",
             "choices": [{"value": "a"}, {"value": "b"}]},
        ],
    }
    upstream = {a["name"]: a for a in fake_openai.expected_answers(sent)}
    body = raw_json(response)
    check_systemone_response({"state": STATE, "questions": S1_QUESTIONS}, body)

    assert response.answers["billing"].noul == pytest.approx(upstream["billing"]["probability"], abs=1e-12)
    for qid in ("tone", "raw"):
        values = [p["value"] for p in upstream[qid]["probabilities"]]
        expected = normalised([p["probability"] for p in upstream[qid]["probabilities"]])
        answer = response.answers[qid]
        assert list(answer.probabilities) == values
        assert list(answer.probabilities.values()) == pytest.approx(expected, abs=1e-12)
        assert answer.choice == upstream[qid]["choice"]
        assert answer.confidence == upstream[qid]["confidence"]
    urgency = response.answers["urgency"]
    expected = normalised([p["probability"] for p in upstream["urgency"]["probabilities"]])
    assert [urgency.probabilities[i] for i in range(3)] == pytest.approx(expected, abs=1e-12)
    assert urgency.score == pytest.approx(sum(i * p for i, p in enumerate(expected)), abs=1e-12)
    assert urgency.confidence == upstream["urgency"]["confidence"]
    assert body["answers"]["urgency"]["legend"] == {"0": "Can wait", "1": "This week", "2": "Today"}
    assert response.model == "gpt-6-luna"
    assert response.usage.input_tokens == len(sent.body) // 4 and response.usage.output_tokens == 0
    assert response.request_id == response.raw_http_response.headers["x-request-id"]
    assert response.raw_http_response.headers["x-decisions-model"] == "openai/gpt-6-luna"


# ---- OpenAI client -> System One (TypeSafe) upstream ----------------------------------------


def test_openai_client_to_a_typesafe_model_translates_both_ways(gateway, fake_typesafe):
    import openai

    client = openai.OpenAI(api_key=CLIENT_KEY, base_url=f"{gateway.url}/v1", max_retries=0)
    decision = client.decisions.create(model="jev", input=STATE, questions=OPENAI_QUESTIONS)
    sent = fake_typesafe.last
    assert sent.path == "/v1/systemone" and sent.header("authorization") == "Bearer ts-test-key"
    assert sent.json == {
        "model": "jev-latest",
        "state": STATE,
        "questions": {
            "dup": {"type": "noul", "instructions": "The customer reports a duplicate charge."},
            "category": {"type": "choice", "instructions": "Classify", "criteria": {"billing": "Payments", "true": None}},
            "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "med: m", "high"]},
        },
    }
    upstream = fake_typesafe.expected_answers(sent)
    dup, category, urgency = decision.answers
    assert (dup.type, dup.name) == ("predicate", "dup")
    assert dup.probability == pytest.approx(upstream["dup"]["noul"], abs=1e-12)

    assert (category.type, category.name) == ("choice", "category")
    expected = normalised(list(upstream["category"]["probabilities"].values()))
    assert [p.value for p in category.probabilities] == ["billing", True]
    assert [p.probability for p in category.probabilities] == pytest.approx(expected, abs=1e-12)
    assert category.choice == {"billing": "billing", "true": True}[upstream["category"]["choice"]]
    assert category.confidence == upstream["category"]["confidence"]

    assert (urgency.type, urgency.name) == ("score", "urgency")
    expected = normalised([upstream["urgency"]["probabilities"][str(i)] for i in range(3)])
    assert [(p.value, p.label) for p in urgency.probabilities] == [(0, "low"), (1, "med"), (2, "high")]
    assert [p.probability for p in urgency.probabilities] == pytest.approx(expected, abs=1e-12)
    assert urgency.score == pytest.approx(sum(i * p for i, p in enumerate(expected)), abs=1e-12)
    assert urgency.confidence == upstream["urgency"]["confidence"]

    assert decision.model == "jev-1.13-20260917"
    assert decision.usage.input_tokens == len(sent.body) // 4 and decision.usage.total_tokens == decision.usage.input_tokens
    assert decision._request_id.startswith("req_")


def test_openai_client_errors_parse_with_param(gateway):
    import openai

    client = openai.OpenAI(api_key=CLIENT_KEY, base_url=f"{gateway.url}/v1", max_retries=0)
    with pytest.raises(openai.BadRequestError) as err:
        client.decisions.create(model="jev", input=STATE, questions=[
            {"type": "choice", "name": "c", "instructions": "?", "choices": [{"value": "only"}]}])
    assert err.value.status_code == 400 and err.value.param == "questions[0].choices"
    with pytest.raises(openai.BadRequestError) as err:
        client.decisions.create(model="gpt-6-luna", input=STATE, questions=OPENAI_QUESTIONS)
    assert err.value.param == "model" and "jev, luna" in err.value.message


# ---- typesafe-sdk: async, zstd, multipart images --------------------------------------------


async def test_async_typesafe_client_sends_zstd_and_the_gateway_decodes_it(gateway, fake_typesafe):
    state = {"ticket": STATE, "history": [f"earlier message {i}: " + "x" * 40 for i in range(40)]}
    async with AsyncTypeSafeClient(api_key=CLIENT_KEY, base_url=gateway.url) as client:
        response = await client.system_one(state, S1_QUESTIONS, model="jev")
    record = gateway.state.find(response.request_id)
    assert record is not None and record.content_encoding == "zstd" and record.path == "/v1/systemone"
    assert response.raw_http_response.headers["x-request-id"] == response.request_id
    sent = fake_typesafe.last
    assert sent.json["state"] == state and sent.json["questions"] == S1_QUESTIONS
    body = raw_json(response)
    check_systemone_response({"state": state, "questions": S1_QUESTIONS}, body)
    upstream = fake_typesafe.expected_answers(sent)
    assert body["answers"]["billing"]["noul"] == pytest.approx(upstream["billing"]["noul"], abs=1e-12)
    assert body["answers"]["tone"]["choice"] == upstream["tone"]["choice"]
    assert response.raw_http_response.headers["x-decisions-model"] == "typesafe/jev-latest"
    cost = float(response.raw_http_response.headers["x-decisions-response-cost"])
    assert cost == pytest.approx(body["usage"]["input_tokens"] * 4.2e-8, rel=1e-9)


def test_the_same_zstd_bytes_sent_with_httpx_get_the_same_answers(gateway):
    from typesafe_sdk._core.compression import COMPRESSORS

    request = {"state": STATE * 20, "model": "jev", "questions": S1_QUESTIONS}
    raw = json.dumps(request).encode()
    assert len(raw) >= 1024
    plain = httpx.post(f"{gateway.url}/v1/systemone", content=raw, headers={"content-type": "application/json"})
    packed = httpx.post(f"{gateway.url}/v1/systemone", content=COMPRESSORS["zstd"](raw),
                        headers={"content-type": "application/json", "content-encoding": "zstd"})
    assert plain.status_code == packed.status_code == 200
    assert plain.json()["answers"] == packed.json()["answers"]
    check_systemone_response(request, packed.json())


def test_an_image_asset_arrives_as_multipart_and_reaches_typesafe(gateway, fake_typesafe):
    image = Image(PNG)
    questions = {"damaged": {"type": "noul", "instructions": "Is the item in the photo damaged?"},
                 "colour": {"type": "choice", "instructions": "Main colour?", "criteria": {"red": None, "blue": None}}}
    with TypeSafeClient(api_key=CLIENT_KEY, base_url=gateway.url,
                        headers={"TypeSafe-Danger-Zone-Images": "true"}) as client:
        response = client.system_one({"photo": image, "caption": "the parcel"}, questions, model="jev")
    record = gateway.state.find(response.request_id)
    assert record.multipart and record.asset_parts == ("asset-0",)
    assert record.content_type.startswith("multipart/form-data")
    sent = fake_typesafe.last
    assert sent.header("typesafe-danger-zone-images") == "true"
    (ref, asset), = sent.json["assets"].items()
    assert ref.startswith("<image:") and sent.json["state"] == {"photo": ref, "caption": "the parcel"}
    assert asset["format"] == "png" and base64.b64decode(asset["data_base64"]) == PNG
    check_systemone_response({"state": sent.json["state"], "questions": questions}, raw_json(response))


# ---- Nimble: the strictest System One client ------------------------------------------------


@pytest.mark.parametrize("model", ["jev", "luna"])
def test_nimble_client_accepts_the_answers(gateway, model):
    questions = {
        "billing": {"type": "noul", "instructions": "Is this about billing?"},
        "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": "calm", "angry": "upset"}},
        "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["Can wait", "This week", "Today"]},
    }
    with Nimble(base_url=gateway.url, model=model, max_retries=0) as client:
        response = client.system_one(STATE, questions)
        models = client.models()
    assert set(response.answers) == set(questions) and response.request_id.startswith("req_")
    assert {m["id"] for m in models.data} == {m["name"] for m in models.models} == {"jev", "luna"}


# ---- refusals, both directions ----------------------------------------------------------------


def test_a_refusal_reaches_the_typesafe_client_as_a_refusals_entry(gateway, fake_openai):
    questions = {"billing": {"type": "noul", "instructions": "Is this about billing?"},
                 "secret": {"type": "choice", "instructions": "REFUSE this one", "criteria": {"a": None, "b": None}}}
    with TypeSafeClient(api_key=CLIENT_KEY, base_url=gateway.url, compression=False) as client:
        response = client.system_one(STATE, questions, model="luna")
    upstream = {a["name"]: a for a in fake_openai.expected_answers(fake_openai.last)}
    assert upstream["secret"] == {"type": "refusal", "name": "secret"}
    body = raw_json(response)
    assert set(response.answers) == {"billing"} and body["refusals"] == ["secret"]
    assert response.answers["billing"].noul == pytest.approx(upstream["billing"]["probability"], abs=1e-12)
    check_systemone_response({"state": STATE, "questions": {"billing": questions["billing"]}}, body)


def test_a_system_one_refusal_reaches_the_openai_client_as_a_refusal_answer(gateway, fake_typesafe):
    import openai

    client = openai.OpenAI(api_key=CLIENT_KEY, base_url=f"{gateway.url}/v1", max_retries=0)
    decision = client.decisions.create(model="jev", input=STATE, questions=[
        {"type": "predicate", "name": "dup", "instructions": "The customer reports a duplicate charge."},
        {"type": "predicate", "instructions": "REFUSE to say"}])
    upstream = fake_typesafe.expected_answers(fake_typesafe.last)
    assert upstream["1"] == {"type": "refusal"}
    dup, refused = decision.answers
    assert (dup.type, dup.name) == ("predicate", "dup")
    assert dup.probability == pytest.approx(upstream["0"]["noul"], abs=1e-12)
    assert (refused.type, refused.name) == ("refusal", None)
