"""On the same wire the upstream receives the caller's request unchanged in meaning (real HTTP:
client -> gateway -> fake upstream). Names, ids, criteria keys, level order and descriptions go
upstream exactly as the caller wrote them; the positions the gateway uses as ids for partly named
OpenAI questions never leak out as names. Across wires the names stay usable: each answer the caller
gets back carries its own question's name.
"""

from __future__ import annotations

import httpx
import pytest

from tests.gateway.conftest import CLIENT_KEY, gateway_config

STATE = "I was charged twice for order #4411 and want one of the charges refunded today."
PARTLY_NAMED = [
    {"type": "predicate", "name": "refund", "instructions": "Is the customer asking for a refund?"},
    {"type": "choice", "instructions": "Tone?",
     "choices": [{"value": "calm"}, {"value": "angry", "description": "upset"}, {"value": True}]},
    {"type": "score", "name": "order", "instructions": "How urgent?",
     "levels": [{"label": "can wait"}, {"label": "this week", "description": "within 7 days"}, {"label": "today"}]},
    {"type": "predicate", "instructions": [{"type": "input_text", "text": "Is an order number given?"}]},
]
NAMES = ["refund", None, "order", None]


def post(gateway, path: str, body: dict) -> httpx.Response:
    return httpx.post(gateway.url + path, json=body, timeout=20)


def test_partly_named_openai_questions_reach_an_openai_upstream_as_written(gateway, fake_openai):
    r = post(gateway, "/v1/decisions", {"model": "luna", "input": STATE, "questions": PARTLY_NAMED,
                                        "safety_identifier": "user-1"})
    assert r.status_code == 200, r.text
    sent = fake_openai.last.json
    assert sent == {"model": "gpt-6-luna", "input": STATE, "questions": PARTLY_NAMED, "safety_identifier": "user-1"}
    assert [q.get("name") for q in sent["questions"]] == NAMES  # not "0", "1", "2", "3"
    assert [a["name"] for a in r.json()["answers"]] == NAMES
    assert [a["type"] for a in r.json()["answers"]] == ["predicate", "choice", "score", "predicate"]


def test_repeated_names_reach_an_openai_upstream_as_written(gateway, fake_openai):
    questions = [{"type": "predicate", "name": "same", "instructions": "First?"},
                 {"type": "predicate", "name": "same", "instructions": "Second?"}]
    r = post(gateway, "/v1/decisions", {"model": "luna", "input": STATE, "questions": questions})
    assert r.status_code == 200, r.text
    assert fake_openai.last.json["questions"] == questions
    upstream = fake_openai.expected_answers(fake_openai.last)
    assert [a["probability"] for a in r.json()["answers"]] == pytest.approx(
        [a["probability"] for a in upstream], abs=1e-12)


def test_the_openai_client_gets_each_answer_under_its_own_name(gateway, fake_openai):
    import openai

    client = openai.OpenAI(api_key=CLIENT_KEY, base_url=f"{gateway.url}/v1", max_retries=0)
    decision = client.decisions.create(model="luna", input=STATE, questions=PARTLY_NAMED)
    sent = fake_openai.last
    assert sent.json["questions"] == PARTLY_NAMED
    upstream = fake_openai.expected_answers(sent)
    assert [a.name for a in decision.answers] == NAMES
    assert decision.answers[0].probability == pytest.approx(upstream[0]["probability"], abs=1e-12)
    assert decision.answers[2].score == pytest.approx(upstream[2]["score"], abs=0.01)


def test_split_chunks_keep_the_callers_names(gateway_factory, fake_typesafe, fake_openai):
    config = gateway_config(fake_typesafe, fake_openai)
    config["model_list"][1]["model_info"]["max_questions"] = 2
    split = gateway_factory(config)
    before = len(fake_openai.requests)
    r = post(split, "/v1/decisions", {"model": "luna", "input": STATE, "questions": PARTLY_NAMED})
    assert r.status_code == 200, r.text
    chunks = fake_openai.requests[before:]
    assert len(chunks) == 2
    def by_text(q: dict) -> str:  # the chunks run concurrently, so they may arrive in either order
        return str(q["instructions"])

    received = sorted((q for rec in chunks for q in rec.json["questions"]), key=by_text)
    assert received == sorted(PARTLY_NAMED, key=by_text)
    assert [a["name"] for a in r.json()["answers"]] == NAMES


def test_system_one_questions_reach_a_system_one_upstream_as_written(gateway, fake_typesafe):
    questions = {
        "Zeta urgency": {"type": "score", "instructions": {"ask": "How urgent?"},
                         "criteria": ["today", {"level": "this week"}, "can wait"]},
        "alpha": {"type": "choice", "criteria": {"b": None, "a": {"why": "json"}, "true": "a text true"}},
        "0": {"type": "noul", "criteria": {"false": "anything else"}},
        "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset"}},
    }
    body = {"model": "jev", "state": {"ticket": STATE, "lines": [1, None]}, "questions": questions}
    r = post(gateway, "/v1/systemone", body)
    assert r.status_code == 200, r.text
    sent = fake_typesafe.last.json
    assert sent == {**body, "model": "jev-latest"}
    assert list(sent["questions"]) == list(questions)
    assert [list(q.get("criteria") or ()) for q in sent["questions"].values()] == [
        list(q.get("criteria") or ()) for q in questions.values()]
    assert set(r.json()["answers"]) == set(questions)


def test_partly_named_openai_questions_to_a_system_one_upstream_come_back_named(gateway, fake_typesafe):
    r = post(gateway, "/v1/decisions", {"model": "jev", "input": STATE, "questions": PARTLY_NAMED})
    assert r.status_code == 200, r.text
    sent = fake_typesafe.last.json
    assert list(sent["questions"]) == ["0", "1", "2", "3"]  # positions: System One needs a key for each
    assert list(sent["questions"]["1"]["criteria"]) == ["calm", "angry", "true"]
    assert [a["name"] for a in r.json()["answers"]] == NAMES


def test_system_one_keys_are_the_names_an_openai_upstream_sees(gateway, fake_openai):
    questions = {"Zeta urgency": {"type": "score", "criteria": ["low", "high"]},
                 "0": {"type": "noul", "instructions": "Billing?"}}
    r = post(gateway, "/v1/systemone", {"model": "luna", "state": STATE, "questions": questions})
    assert r.status_code == 200, r.text
    assert [q["name"] for q in fake_openai.last.json["questions"]] == ["Zeta urgency", "0"]
    assert set(r.json()["answers"]) == set(questions)
