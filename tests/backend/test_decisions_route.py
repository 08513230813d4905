"""``POST /v1/decisions`` and ``/v1/score`` on the real model: the response, the invariants, the refusals."""

from __future__ import annotations

import asyncio
import copy
import gzip
import json
import math
import threading
from dataclasses import replace

import httpx
import pytest
import zstandard

from backend.prompts import QuestionSpec
from backend.server import create_app
from backend.service import DecisionService
from tests.backend.conftest import TICKET, choice_question, score_question, yes_no_question

TOL = 1e-5


async def decide(client, questions, **fields):
    resp = await client.post("/v1/decisions", json={"input": TICKET, "questions": questions, **fields})
    assert resp.status_code == 200, resp.text
    return resp.json()


async def test_response_shape_usage_and_token_ids(client, service):
    body = await decide(client, [choice_question(), yes_no_question(), score_question()],
                        return_prompt_token_ids=True, model="smollm2")
    assert body["object"] == "decisions" and body["model"] == "smollm2" and body["prompt_format_version"] == 1
    team, refund, urgency = body["answers"]["team"], body["answers"]["refund"], body["answers"]["urgency"]
    assert team["type"] == "choice" and set(team["probabilities"]) == {"billing", "technical", "sales"}
    assert team["choice"] == max(team["probabilities"], key=team["probabilities"].get)
    assert refund["type"] == "yes_no" and set(refund["probabilities"]) == {"yes", "no"}
    assert urgency["type"] == "score" and set(urgency["probabilities"]) == {"0", "1", "2", "3"}
    assert urgency["score"] == pytest.approx(sum(int(k) * p for k, p in urgency["probabilities"].items()), abs=1e-12)
    for answer in (team, refund, urgency):
        assert math.fsum(answer["probabilities"].values()) == pytest.approx(1.0, abs=1e-12)
        assert 0 < answer["label_mass"] <= 1
    assert refund["label_token_ids"] == [10407, 4607] and team["label_token_ids"] == [49, 50, 51]
    usage = body["usage"]
    lengths = [len(a["prompt_token_ids"]) for a in (team, refund, urgency)]
    assert usage["prompt_tokens"] == usage["total_tokens"] == sum(lengths) and usage["completion_tokens"] == 0
    shared = 0
    while all(a["prompt_token_ids"][shared] == team["prompt_token_ids"][shared] for a in (refund, urgency)):
        shared += 1
    assert usage["prompt_tokens_details"]["cached_tokens"] == 2 * shared
    assert "prompt_token_ids" not in (await decide(client, [yes_no_question()]))["answers"]["refund"]


async def test_probabilities_equal_a_plain_reference_forward(client, service):
    body = await decide(client, [choice_question(), yes_no_question(), score_question()], return_prompt_token_ids=True)
    for answer in body["answers"].values():
        logprobs = service.scorer.reference_logprobs(answer["prompt_token_ids"])[answer["label_token_ids"]].tolist()
        weights = [math.exp(lp - max(logprobs)) for lp in logprobs]
        expected = [w / sum(weights) for w in weights]
        assert list(answer["probabilities"].values()) == pytest.approx(expected, abs=TOL)
        assert answer["label_mass"] == pytest.approx(math.fsum(math.exp(lp) for lp in logprobs), abs=TOL)


async def test_an_answer_equals_the_same_question_asked_alone_and_ignores_its_neighbours(client):
    questions = [choice_question(), yes_no_question(), score_question(),
                 yes_no_question("bug", question="The customer reports a software bug.")]
    together = (await decide(client, questions))["answers"]
    reordered = (await decide(client, list(reversed(questions))))["answers"]
    fewer = (await decide(client, questions[1:3]))["answers"]
    for q in questions:
        alone = (await decide(client, [q]))["answers"][q["id"]]
        for other in (together, reordered, fewer):
            if q["id"] in other:
                assert other[q["id"]]["probabilities"] == pytest.approx(alone["probabilities"], abs=TOL)
                assert other[q["id"]]["label_mass"] == pytest.approx(alone["label_mass"], rel=1e-4)


async def test_temperature_scales_probabilities_but_not_label_mass(client):
    plain = (await decide(client, [choice_question()]))["answers"]["team"]
    hot = (await decide(client, [choice_question()], temperature=2.0))["answers"]["team"]
    assert hot["label_mass"] == pytest.approx(plain["label_mass"], abs=1e-9)
    weights = {k: math.sqrt(p) for k, p in plain["probabilities"].items()}  # p^(1/T), renormalised
    total = sum(weights.values())
    assert hot["probabilities"] == pytest.approx({k: w / total for k, w in weights.items()}, abs=1e-9)


async def test_score_replay_gives_the_decision_probabilities(client):
    body = await decide(client, [choice_question(), yes_no_question()], return_prompt_token_ids=True, temperature=0.7)
    answers = list(body["answers"].values())
    resp = await client.post("/v1/score", json={
        "query": [], "items": [a["prompt_token_ids"] for a in answers],
        "label_token_ids": [a["label_token_ids"] for a in answers], "apply_softmax": True,
        "return_token_logprobs": True, "temperature": 0.7})
    assert resp.status_code == 200, resp.text
    replay = resp.json()
    for answer, scores, mass in zip(answers, replay["scores"], replay["label_mass"]):
        assert scores == pytest.approx(list(answer["probabilities"].values()), abs=TOL)
        assert mass == pytest.approx(answer["label_mass"], rel=1e-4)
    raw = await client.post("/v1/score", json={"items": [answers[0]["prompt_token_ids"]],
                                                "label_token_ids": answers[0]["label_token_ids"]})
    assert math.fsum(raw.json()["scores"][0]) == pytest.approx(answers[0]["label_mass"], rel=1e-4)


async def test_compressed_bodies_are_read(client):
    payload = json.dumps({"input": TICKET, "questions": [yes_no_question()]}).encode()
    for encoding, data in (("zstd", zstandard.ZstdCompressor().compress(payload)), ("gzip", gzip.compress(payload))):
        resp = await client.post("/v1/decisions", content=data,
                                 headers={"Content-Type": "application/json", "Content-Encoding": encoding})
        assert resp.status_code == 200, resp.text


def q_with(base: dict, **changes) -> dict:
    return {**base, **changes}


REFUSALS = [
    ({"questions": [q_with(yes_no_question(), type="maybe")]}, "does not match any of the expected tags"),
    ({"questions": [q_with(yes_no_question(), colour="red")]}, "questions[0].colour: Extra inputs are not permitted"),
    ({"questions": [yes_no_question()], "stream": True}, "stream: Extra inputs are not permitted"),
    ({"questions": []}, "questions: List should have at least 1 item"),
    ({"questions": [q_with(choice_question(), options=[{"name": "only"}])]}, "questions[0].options: List should have at least 2"),
    ({"questions": [q_with(choice_question(), options=[{"name": f"o{i}"} for i in range(27)])]}, "at most 26 items"),
    ({"questions": [q_with(score_question(), levels=["x"] * 11)]}, "questions[0].levels: List should have at most 10"),
    ({"input": "   ", "questions": [yes_no_question()]}, "input: must not be blank"),
    ({"questions": [q_with(yes_no_question(), question=" ")]}, "questions[0].question: must not be blank"),
    ({"questions": [q_with(yes_no_question(), id="")]}, "questions[0].id: must not be blank"),
    ({"questions": [q_with(score_question(), levels=["a", " "])]}, "level 1 must not be blank"),
    ({"questions": [yes_no_question("x"), yes_no_question("x")]}, "question id 'x' repeats another question"),
    ({"questions": [q_with(choice_question(), options=[{"name": " "}, {"name": "b"}])]}, "question 'team': option names must be nonempty"),
    ({"questions": [q_with(choice_question(), options=[{"name": "a\nb"}, {"name": "b"}])]}, "must not contain control or line break"),
    ({"questions": [q_with(choice_question(), options=[{"name": "Billing"}, {"name": " billing "}])]}, "option name ' billing ' repeats another option"),
    ({"questions": [yes_no_question()], "temperature": 0}, "temperature: Input should be greater than 0"),
    ({"questions": [yes_no_question()], "chat_template_kwargs": {"enable_thinking": True}}, "chat_template_kwargs sets 'enable_thinking' to True, but decisions need it false or unset"),
    ({"questions": [yes_no_question()], "prompt_format_version": 2}, "prompt_format_version 2 is not served, this server uses version 1"),
    ({"questions": [yes_no_question()], "model": "base:my-adapter"}, "model names the LoRA adapter 'my-adapter', which /v1/decisions does not support"),
    ({"questions": [yes_no_question()], "images": [{"url": "http://x/y.png"}]}, "images require a model served with multimodal input"),
    ({"input": "word " * 9000, "questions": [yes_no_question()]}, "question 'refund': the prompt has"),
]


@pytest.mark.parametrize("fields,message", REFUSALS, ids=[m[:40] for _, m in REFUSALS])
async def test_refusals_are_400_naming_the_field_and_rule(client, fields, message):
    resp = await client.post("/v1/decisions", json={"input": TICKET, **fields})
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["object"] == "error" and body["code"] == 400 and body["type"] == "BadRequest"
    assert message in body["message"]


async def test_non_json_bodies_are_400(client):
    resp = await client.post("/v1/decisions", content=b"input=x", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert resp.status_code == 400 and "application/json" in resp.json()["message"]
    resp = await client.post("/v1/decisions", content=b"{nope", headers={"Content-Type": "application/json"})
    assert resp.status_code == 400 and "not valid JSON" in resp.json()["message"]


async def test_a_full_queue_answers_503_with_retry_after(service):
    small = DecisionService(service.loaded, scorer=service.scorer, max_queued_rows=2)  # same model, tiny queue
    transport = httpx.ASGITransport(app=create_app(small))
    async with httpx.AsyncClient(transport=transport, base_url="http://backend", timeout=120) as c:
        body = {"input": TICKET, "questions": [choice_question(), yes_no_question()]}
        first, second = await asyncio.gather(c.post("/v1/decisions", json=body), c.post("/v1/decisions", json=body))
    small.engine.close()
    statuses = sorted([first.status_code, second.status_code])
    assert statuses == [200, 503]
    busy = first if first.status_code == 503 else second
    assert busy.headers["retry-after"] == "1" and "busy" in busy.json()["message"]


@pytest.mark.parametrize("body,message", [
    ({"items": [], "label_token_ids": [1]}, "items must be a nonempty list"),
    ({"items": [[1, 2]], "label_token_ids": [10 ** 9]}, "below the vocabulary size 49152"),
    ({"items": [[1, 2]], "label_token_ids": [[1], [2]]}, "one list per item"),
    ({"items": [[1, 2]], "label_token_ids": [1], "temperature": 0}, "temperature must be a finite number above 0"),
    ({"items": [[1, 2]], "label_token_ids": [1], "text": "x"}, "does not take ['text']"),
])
async def test_score_refusals(client, body, message):
    resp = await client.post("/v1/score", json=body)
    assert resp.status_code == 400 and message in resp.json()["message"]


async def test_prompts_are_rendered_and_tokenized_off_the_event_loop(decider, monkeypatch):
    """64 questions over a ~5,000-token input take most of a second to render, tokenize and label-check:
    that work runs on the planning thread, and the event loop runs other work meanwhile. (Checked by the
    thread the plan runs on, not by the loop's longest gap: a loaded machine stalls any loop.)"""
    specs = [QuestionSpec(f"q{i}", "yes_no", f"The customer mentions item {i}.") for i in range(64)]
    text = TICKET * 250
    planned_on = []
    real_plan = decider.plan

    def plan(*args, **kwargs):
        planned_on.append(threading.get_ident())
        return real_plan(*args, **kwargs)

    monkeypatch.setattr(decider, "plan", plan)
    ticks, done = 0, False

    async def ticker():
        nonlocal ticks
        while not done:
            await asyncio.sleep(0)
            ticks += 1

    ticking = asyncio.ensure_future(ticker())
    await asyncio.sleep(0)  # the ticker is running
    before = ticks
    plans = await decider.prepare(text, specs)
    during = ticks - before
    done = True
    await ticking
    assert len(plans) == 64
    assert planned_on and threading.get_ident() not in planned_on, "the prompts were planned on the event loop"
    assert during > 0, "the event loop ran nothing else while the prompts were planned"


async def test_a_model_without_a_chat_template_refuses_decisions_but_still_scores(service, tokenizer):
    bare = copy.copy(tokenizer)
    bare.chat_template = None
    svc = DecisionService(replace(service.loaded, tokenizer=bare), scorer=service.scorer)
    transport = httpx.ASGITransport(app=create_app(svc))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://backend", timeout=120) as c:
            resp = await c.post("/v1/decisions", json={"input": TICKET, "questions": [yes_no_question()]})
            assert resp.status_code == 400
            assert resp.json()["message"].startswith("question 'refund': decisions require a chat template")
            resp = await c.post("/v1/systemone", json={"state": TICKET, "questions": {
                "refund": {"type": "noul", "instructions": "A refund?"}}})
            assert resp.status_code == 400 and "require a chat template" in resp.json()["message"]
            resp = await c.post("/v1/score", json={"items": [tokenizer.encode("Yes or no?")], "label_token_ids": [49, 50]})
            assert resp.status_code == 200 and len(resp.json()["scores"][0]) == 2
    finally:
        svc.close()
