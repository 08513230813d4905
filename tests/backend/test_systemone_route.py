"""``POST /v1/systemone`` (seed 000, "System One compatible API"), and the real typesafe-sdk against it."""

from __future__ import annotations

import math

import pytest
from typesafe_sdk import Choice, Noul, Score, TypeSafeClient, TypeSafeUnprocessableEntityError

from tests.backend.conftest import TICKET

TOL = 1e-5

QUESTIONS = {
    "team": {"type": "choice", "instructions": "Which team should handle this ticket?",
             "criteria": {"billing": "invoices, charges, refunds", "technical": None, "sales": None}},
    "refund": {"type": "noul", "instructions": "The customer asks for a refund."},
    "urgency": {"type": "score", "instructions": "How urgent is this?", "criteria": ["no rush", {"when": "today"}, "now"]},
}


def jev_choice_confidence(p):
    n = len(p)
    return 1.0 if n == 1 else min(1.0, max(0.0, (n * max(p) - 1) / (n - 1)))


def jev_score_confidence(p):
    n = len(p)
    mode = max(range(n), key=lambda i: (p[i], -i))
    d = sum(pi * abs(i - mode) for i, pi in enumerate(p))
    uniform = sum(abs(i - (n - 1) / 2) for i in range(n)) / n
    return max(0.0, 1 - d / uniform)


async def test_answers_match_the_decisions_route_with_jev_confidence(client):
    resp = await client.post("/v1/systemone", json={"state": TICKET, "model": "jev-latest", "questions": QUESTIONS,
                                                     "unknown_top_level": "ignored"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["model"] == "SmolLM2-135M-Instruct"
    team, refund, urgency = (body["answers"][k] for k in ("team", "refund", "urgency"))
    same = (await client.post("/v1/decisions", json={"input": TICKET, "questions": [
        {"id": "team", "type": "choice", "question": "Which team should handle this ticket?",
         "options": [{"name": "billing", "description": "invoices, charges, refunds"}, {"name": "technical"},
                     {"name": "sales"}]},
        {"id": "refund", "type": "yes_no", "question": "The customer asks for a refund."},
        {"id": "urgency", "type": "score", "question": "How urgent is this?",
         "levels": ["no rush", {"when": "today"}, "now"]}]})).json()["answers"]
    assert team["probabilities"] == pytest.approx(same["team"]["probabilities"], abs=TOL)
    assert team["choice"] == same["team"]["choice"]
    assert team["confidence"] == pytest.approx(jev_choice_confidence(list(team["probabilities"].values())), abs=1e-12)
    assert team["x_label_mass"] == pytest.approx(same["team"]["label_mass"], rel=1e-4)
    assert refund == {"type": "noul", "noul": pytest.approx(same["refund"]["probabilities"]["yes"], abs=TOL),
                      "x_label_mass": pytest.approx(same["refund"]["label_mass"], rel=1e-4)}
    assert urgency["legend"] == {"0": "no rush", "1": {"when": "today"}, "2": "now"}
    probs = [urgency["probabilities"][str(i)] for i in range(3)]
    assert urgency["score"] == pytest.approx(sum(i * p for i, p in enumerate(probs)), abs=1e-12)
    assert urgency["confidence"] == pytest.approx(jev_score_confidence(probs), abs=1e-12)
    assert body["usage"]["output_tokens"] == 0 and body["usage"]["input_tokens"] > 100


async def test_system_one_allowances_one_option_empty_state_blank_id_criteria_only_noul(client):
    resp = await client.post("/v1/systemone", json={"state": "", "questions": {
        "": {"type": "noul", "criteria": {"true": "the sky is blue", "false": None}},
        "one": {"type": "choice", "criteria": {"only": None}},
        "single": {"type": "score", "criteria": ["just one"]}}})
    assert resp.status_code == 200, resp.text
    answers = resp.json()["answers"]
    assert 0 <= answers[""]["noul"] <= 1
    assert answers["one"]["probabilities"] == {"only": 1.0} and answers["one"]["confidence"] == 1.0
    assert answers["single"]["score"] == 0.0 and answers["single"]["confidence"] == 1.0


SCHEMA_ERRORS = [
    ({"questions": {"q": {"type": "noul", "instructions": "x", "colour": 1}}}, ["body", "questions", "q", "noul", "colour"]),
    ({"questions": {"q": {"type": "noul", "criteria": {"true": "a", "maybe": "b"}}}}, ["body", "questions", "q", "noul", "criteria", "maybe"]),
    ({"questions": {"q": {"type": "noul"}}}, ["body", "questions", "q", "noul"]),
    ({"questions": {"q": {"type": "nope"}}}, ["body", "questions", "q"]),
    ({"questions": {}}, ["body", "questions"]),
    ({"questions": {"q": {"type": "choice", "criteria": {"a": None, " A": None}}}}, ["body", "questions", "q", "choice", "criteria"]),
    ({"questions": {"q": {"type": "score", "criteria": ["a", None]}}}, ["body", "questions", "q", "score", "criteria", 1]),
    ({"questions": {"q": {"type": "score", "criteria": [str(i) for i in range(11)]}}}, ["body", "questions", "q", "score", "criteria"]),
    ({"questions": {"q": {"type": "score", "criteria": ["a", 5]}}}, ["body", "questions", "q", "score", "criteria", 1]),
    ({"questions": {"q": {"type": "noul", "instructions": "x"}}, "temperature": 0.5}, ["body", "temperature"]),
    ({"questions": {"q": {"type": "noul", "instructions": "x"}}, "prompt_format_version": 1}, ["body", "prompt_format_version"]),
    ({"questions": {"q": {"type": "noul", "instructions": "x"}}, "return_prompt_token_ids": False}, ["body", "return_prompt_token_ids"]),
]


@pytest.mark.parametrize("fields,loc", SCHEMA_ERRORS, ids=[".".join(map(str, loc[1:])) for _, loc in SCHEMA_ERRORS])
async def test_schema_errors_are_422_with_the_location(client, fields, loc):
    resp = await client.post("/v1/systemone", json={"state": TICKET, **fields})
    assert resp.status_code == 422, resp.text
    detail = resp.json()["detail"]
    assert loc in [d["loc"] for d in detail]
    assert all("input" not in d for d in detail)
    if fields["questions"].get("q", {}).get("criteria") == ["a", 5]:
        assert detail[0]["msg"] == "a level should be a string, an object or an array"
    if loc[-1] in ("temperature", "prompt_format_version", "return_prompt_token_ids"):
        assert detail[0]["msg"] == f"{loc[-1]} is not part of this API, use /v1/decisions for it"


async def test_missing_state_is_422_and_refusals_are_400(client):
    resp = await client.post("/v1/systemone", json={"questions": {"q": {"type": "noul", "instructions": "x"}}})
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["body", "state"]
    resp = await client.post("/v1/systemone", json={"state": "x", "model": "base:adapter",
                                                     "questions": {"q": {"type": "noul", "instructions": "x"}}})
    assert resp.status_code == 400 and "LoRA adapter 'adapter'" in resp.json()["message"]
    resp = await client.post("/v1/systemone", json={"state": "x", "questions": {"b": {"type": "box", "instructions": "dog"}}})
    assert resp.status_code == 400 and "question 'b': box questions are not supported" in resp.json()["message"]


async def test_beyond_26_options_two_letter_labels_are_checked_and_refused_clearly(client):
    criteria = {f"option {i}": None for i in range(30)}
    resp = await client.post("/v1/systemone", json={"state": TICKET, "questions": {"wide": {"type": "choice", "criteria": criteria}}})
    assert resp.status_code == 400, resp.text
    assert resp.json()["message"] == ("question 'wide': the answer label 'AJ' is not one distinct token after the chat "
                                      "prompt for this tokenizer, so this model is not supported")


def test_the_real_typesafe_sdk_gets_decisions_from_the_standalone_backend(backend_url):
    long_state = TICKET + " " + "The invoice number is 2026-0042. " * 40  # over 1 KiB: the SDK sends it zstd-compressed
    with TypeSafeClient(base_url=backend_url, api_key="unused", timeout=120) as client:
        result = client.system_one(long_state, {
            "team": Choice(instructions="Which team should handle this ticket?",
                           criteria={"billing": None, "technical": "Bugs or integration problems", "sales": None}),
            "urgent": Noul(instructions="The customer needs an answer today."),
            "frustration": Score(instructions="How frustrated is the customer?",
                                 criteria=["Calm", "Frustrated but civil", "Very angry"]),
        })
        assert result.model == "SmolLM2-135M-Instruct"
        team, urgent, frustration = result.answers["team"], result.answers["urgent"], result.answers["frustration"]
        assert team.choice in {"billing", "technical", "sales"}
        assert math.fsum(team.probabilities.values()) == pytest.approx(1.0)
        assert 0.0 <= urgent.noul <= 1.0
        assert set(frustration.legend) == {0, 1, 2} and 0.0 <= frustration.score <= 2.0
        raw = result.raw_http_response.json()
        assert all(0 < a["x_label_mass"] <= 1 for a in raw["answers"].values())
        with pytest.raises(TypeSafeUnprocessableEntityError):
            client.system_one("x", {"q": Noul(instructions="x")}, extra_body={"temperature": 0.5})
