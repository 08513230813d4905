"""One conformance suite for every provider: both caller wires through Dispatcher + the real Upstream
against the provider's fake upstream. Each outgoing request is checked field by field, each answer
against what the fake computed from the question it received."""

from __future__ import annotations

import math

import pytest

from tests.providers import helpers as h
from tests.providers.cases import CASES, IMAGE_CASES, TEXT_ONLY_CASES
from translators import openai as openai_wire
from translators import systemone as systemone_wire
from translators.errors import Unsupported

IDS = [c.provider for c in CASES]


def assert_addressed(case, rec):
    assert rec.method == "POST"
    assert rec.path == case.path
    if case.api_key:
        assert rec.header("authorization") == f"Bearer {case.api_key}"
    else:
        assert rec.header("authorization") is None
    assert rec.header("content-type") == "application/json"
    assert rec.header("accept") == "application/json"
    assert not any(name.startswith("typesafe-danger-zone") for name in rec.headers)  # text only: no gate
    assert rec.json["model"] == case.body_model


def assert_matches_fake(case, fake, result, recs):
    expected = h.fake_distributions(case.wire, fake, recs)
    assert [a.question_id for a in result.answers] == list(expected)
    for answer in result.answers:
        want = expected[answer.question_id]
        if want == "refusal":
            assert answer.kind == "refusal" and answer.probabilities == ()
            continue
        assert math.fsum(answer.probabilities) == pytest.approx(1.0, abs=1e-9)
        assert answer.probabilities == pytest.approx(want, abs=1e-9)
        if answer.kind in ("choice", "score"):
            assert answer.confidence is not None and 0.0 <= answer.confidence <= 1.0


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_systemone_wire_request_and_answers(case, fake_for):
    fake = fake_for(case)
    req = h.s1_request()
    decided = await h.decide(case.deployment(fake), req)

    assert len(fake.requests) == 1
    rec = fake.last
    assert_addressed(case, rec)
    if case.wire == "systemone":
        assert rec.json == {"model": case.body_model, "state": h.STATE, "questions": h.S1_QUESTIONS}
    else:
        assert rec.json["input"] == h.STATE
        assert [q["name"] for q in rec.json["questions"]] == ["refund", "team", "urgency"]
        assert rec.json["questions"][0] == {"type": "predicate", "name": "refund",
                                            "instructions": "Is the customer asking for a refund?"}
        assert rec.json["questions"][1]["choices"] == [
            {"value": "billing", "description": "payments and refunds"}, {"value": "technical"},
            {"value": "sales", "description": "pre-sales questions"}]
        assert rec.json["questions"][2]["levels"] == [{"label": "can wait"}, {"label": "this week"},
                                                      {"label": "today"}]
    assert decided.result.model == (case.answering_model or case.body_model)
    assert decided.deployment.provider == case.provider
    assert_matches_fake(case, fake, decided.result, fake.requests)
    rendered = systemone_wire.render_response(decided.result, req)
    assert set(rendered["answers"]) == {"refund", "team", "urgency"}
    assert rendered["answers"]["urgency"]["legend"] == {"0": "can wait", "1": "this week", "2": "today"}
    assert isinstance(rendered["usage"]["input_tokens"], int) and rendered["usage"]["input_tokens"] > 0


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_openai_wire_request_and_answers(case, fake_for):
    fake = fake_for(case)
    req = h.openai_request()
    decided = await h.decide(case.deployment(fake), req)

    rec = fake.last
    assert_addressed(case, rec)
    if case.wire == "systemone":
        assert rec.json["state"] == h.STATE
        assert rec.json["questions"] == {
            "refund": {"type": "noul", "instructions": "Is the customer asking for a refund?"},
            "human": {"type": "choice", "instructions": "Should a human take over?",
                      "criteria": {"true": "a person is needed", "false": None}},
            "frustration": {"type": "score", "instructions": "How frustrated is the customer?",
                            "criteria": ["calm", "annoyed", "angry: hostile"]},
        }
    else:
        assert rec.json == {"model": "gpt-6-luna", "input": h.STATE, "questions": h.OPENAI_QUESTIONS}
    assert_matches_fake(case, fake, decided.result, fake.requests)
    rendered = openai_wire.render_response(decided.result, req)
    assert [a["name"] for a in rendered["answers"]] == ["refund", "human", "frustration"]
    assert [a["type"] for a in rendered["answers"]] == ["predicate", "choice", "score"]
    assert isinstance(rendered["answers"][1]["choice"], bool)  # typed values come back typed


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_refusal_is_kept_as_a_refusal(case, fake_for):
    fake = fake_for(case)
    questions = {**h.S1_QUESTIONS, "secret": {"type": "noul", "instructions": "REFUSE: reveal the card number?"}}
    req = h.s1_request(questions)
    decided = await h.decide(case.deployment(fake), req)
    by_id = {a.question_id: a for a in decided.result.answers}
    assert by_id["secret"].kind == "refusal"
    assert by_id["refund"].kind == "yes_no"
    assert_matches_fake(case, fake, decided.result, fake.requests)
    assert "secret" not in systemone_wire.render_response(decided.result, req)["answers"]


def _image_request():
    return h.openai_request(
        questions=[{"type": "predicate", "name": "red", "instructions": "Is the swatch red?"}],
        input=[{"role": "user", "content": [{"type": "input_text", "text": "The customer's swatch:"},
                                            {"type": "input_image", "image_url": h.PNG_DATA_URL}]}])


@pytest.mark.parametrize("case", IMAGE_CASES, ids=[c.provider for c in IMAGE_CASES])
async def test_images_reach_the_provider_in_its_shape(case, fake_for):
    fake = fake_for(case)
    req = _image_request()
    [ref] = list(req.input.images)
    decided = await h.decide(case.deployment(fake), req)
    body = fake.last.json
    b64 = h.PNG_DATA_URL.split(",", 1)[1]
    if case.images == "openai":
        assert body["input"] == req.input.messages
    elif case.images == "assets":
        assert body["assets"] == {ref: {"type": "image", "format": "png", "data_base64": b64}}
        assert ref in body["state"]
        if case.provider == "typesafe":
            assert fake.last.header("typesafe-danger-zone-images") == "true"
        else:
            assert fake.last.header("typesafe-danger-zone-images") is None
    elif case.images == "state_parts":
        assert body["state"] == ["The customer's swatch:", {"type": "image_url", "image_url": {"url": h.PNG_DATA_URL}}]
    elif case.images == "images_field":
        assert body["images"] == [h.PNG_DATA_URL]
        assert body["state"] == "The customer's swatch:"
    assert decided.result.answers[0].kind == "yes_no"


@pytest.mark.parametrize("case", TEXT_ONLY_CASES, ids=[c.provider for c in TEXT_ONLY_CASES])
async def test_images_to_a_text_only_provider_are_refused_before_any_call(case, fake_for):
    fake = fake_for(case)
    with pytest.raises(Unsupported) as caught:
        await h.decide(case.deployment(fake), _image_request())
    assert caught.value.status == 400
    assert case.provider in caught.value.message and "images" in caught.value.message
    assert fake.requests == []


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_request_over_the_question_limit_is_split_and_merged(case, fake_for):
    fake = fake_for(case)
    questions = h.noul_questions(5)
    req = h.s1_request(questions)
    dep = case.deployment(fake, model_info={"max_questions": 2})
    decided = await h.decide(dep, req)

    assert sorted(len(r.json["questions"]) for r in fake.requests) == [1, 2, 2]
    for rec in fake.requests:
        assert_addressed(case, rec)
    assert [a.question_id for a in decided.result.answers] == list(questions)
    assert_matches_fake(case, fake, decided.result, sorted(fake.requests, key=lambda r: str(r.json["questions"])))
    upstream_tokens = []
    for rec in fake.requests:
        upstream_tokens.append(max(1, len(rec.body) // 4))
    assert decided.result.usage.input_tokens == sum(upstream_tokens)


@pytest.mark.parametrize("case", [c for c in CASES if c.question_limit], ids=lambda c: c.provider)
async def test_provider_question_limit_splits_without_configuration(case, fake_for):
    fake = fake_for(case)
    questions = h.noul_questions(case.question_limit + 1)
    decided = await h.decide(case.deployment(fake), h.s1_request(questions))
    sizes = sorted(len(r.json["questions"]) for r in fake.requests)
    assert len(sizes) == 2 and sum(sizes) == case.question_limit + 1 and max(sizes) <= case.question_limit
    assert [a.question_id for a in decided.result.answers] == list(questions)
