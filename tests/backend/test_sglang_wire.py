"""translators/sglang.py: IR -> SGLang /v1/decisions body, and an upstream's response -> IR (pure, no model)."""

from __future__ import annotations

import pytest

from translators import sglang
from translators.errors import Unsupported, UpstreamError
from translators.ir import DecisionInput, DecisionRequest, Image, Level, Option, Question


def request(*questions: Question, state="the ticket") -> DecisionRequest:
    return DecisionRequest(model="sglang/x", wire="openai", input=DecisionInput(state=state), questions=questions)


PREDICATE = Question(id="refund", kind="yes_no", instructions="Asks for a refund?",
                     criteria={"true": "a refund is asked", "false": None})
ROUTE = Question(id="team", kind="choice", instructions="Which team?",
                 options=(Option("billing", "money"), Option(True), Option("sales", {"k": 1})))
URGENCY = Question(id="urgency", kind="score", instructions="How urgent?",
                   levels=(Level("low"), Level({"n": 2}), Level("high", "needs an answer today")))


def test_render_request_maps_every_kind():
    body = sglang.render_request(request(PREDICATE, ROUTE, URGENCY), "Qwen/Qwen3.8-27B", 1)
    assert body == {
        "model": "Qwen/Qwen3.8-27B",
        "input": "the ticket",
        "prompt_format_version": 1,
        "questions": [
            {"id": "refund", "type": "yes_no", "question": "Asks for a refund?", "yes": "a refund is asked"},
            {"id": "team", "type": "choice", "question": "Which team?",
             "options": [{"name": "billing", "description": "money"}, {"name": "true"},
                         {"name": "sales", "description": {"k": 1}}]},
            {"id": "urgency", "type": "score", "question": "How urgent?",
             "levels": ["low", '{"n":2}', "high: needs an answer today"]},
        ],
    }
    sglang.DecisionsRequest.model_validate(body)  # what we send passes our own server's schema
    assert "prompt_format_version" not in sglang.render_request(request(PREDICATE), "m", None)


def test_render_request_refuses_what_the_wire_cannot_carry():
    with pytest.raises(Unsupported, match="box questions are not supported"):
        sglang.render_request(request(Question(id="b", kind="box", instructions="the dog")), "m", 1)
    with pytest.raises(Unsupported, match="needs question text"):
        sglang.render_request(request(Question(id="n", kind="yes_no", criteria={"true": "x"})), "m", 1)
    with_image = DecisionRequest(model="m", wire="openai", input=DecisionInput(
        state="see <img>", images={"<img>": Image(ref="<img>", data=b"\x89PNG")}), questions=(PREDICATE,))
    with pytest.raises(Unsupported, match="text only"):
        sglang.render_request(with_image, "m", 1)
    parts = Question(id="p", kind="yes_no", instructions=[{"type": "input_text", "text": "a"},
                                                          {"type": "input_text", "text": "b"}])
    assert sglang.render_request(request(parts), "m", 1)["questions"][0]["question"] == "a\n\nb"
    numeric = Question(id="n", kind="choice", instructions="Pick", options=(Option("a", 5), Option("b", True)))
    body = sglang.render_request(request(numeric, state=42), "m", 1)
    assert body["input"] == "42" and [o["description"] for o in body["questions"][0]["options"]] == ["5", "true"]
    sglang.DecisionsRequest.model_validate(body)


def test_blank_ids_travel_by_position_and_come_back():
    blank = Question(id="", kind="yes_no", instructions="q?")
    req = request(blank)
    assert sglang.render_request(req, "m", 1)["questions"][0]["id"] == "question-0"
    result = sglang.parse_response({"object": "decisions", "model": "m", "answers": {
        "question-0": {"type": "yes_no", "probabilities": {"yes": 0.25, "no": 0.75}, "label_mass": 0.5}}}, req)
    assert result.answers[0].question_id == "" and result.answers[0].probabilities == (0.25, 0.75)


def test_parse_response_keeps_label_mass_usage_and_version():
    body = {"object": "decisions", "model": "Qwen/Qwen3.8-27B", "prompt_format_version": 1, "answers": {
        "refund": {"type": "yes_no", "probabilities": {"yes": 0.9, "no": 0.1}, "label_mass": 0.97},
        "team": {"type": "choice", "probabilities": {"billing": 0.7, "true": 0.2, "sales": 0.1}, "choice": "billing",
                 "label_mass": 0.88, "prompt_token_ids": [1, 2], "label_token_ids": [5, 6, 7]},
        "urgency": {"type": "score", "probabilities": {"0": 0.2, "1": 0.3, "2": 0.5}, "score": 1.3, "label_mass": 0.6}},
        "usage": {"prompt_tokens": 412, "total_tokens": 412, "prompt_tokens_details": {"cached_tokens": 100}}}
    result = sglang.parse_response(body, request(PREDICATE, ROUTE, URGENCY))
    refund, team, urgency = result.answers
    assert refund.probabilities == (0.9, 0.1) and refund.label_mass == 0.97
    assert team.probabilities == (0.7, 0.2, 0.1) and team.label_mass == 0.88
    assert team.extra == {"prompt_token_ids": [1, 2], "label_token_ids": [5, 6, 7]}
    assert urgency.probabilities == (0.2, 0.3, 0.5) and urgency.kind == "score"
    assert result.usage.input_tokens == 412 and result.usage.output_tokens == 0 and result.usage.cached_tokens == 100
    assert result.model == "Qwen/Qwen3.8-27B" and result.extra == {"prompt_format_version": 1}


@pytest.mark.parametrize("answers,problem", [
    ({}, "no answer for question 'refund'"),
    ({"refund": {"type": "choice", "probabilities": {"yes": 1.0}}}, "a choice answer to the yes_no question"),
    ({"refund": {"type": "yes_no", "probabilities": {"yes": 1.0}}}, "no probability for 'no'"),
    ({"refund": {"type": "yes_no", "probabilities": {"yes": -0.5, "no": 1.5}}}, "a probability of -0.5"),
    ({"refund": {"type": "yes_no", "probabilities": {"yes": "NaN", "no": 0.5}}}, "a probability of nan"),
])
def test_unusable_answers_are_upstream_errors(answers, problem):
    with pytest.raises(UpstreamError) as err:
        sglang.parse_response({"object": "decisions", "answers": answers}, request(PREDICATE))
    assert err.value.status == 502 and problem in err.value.message


def test_the_request_schema_enforces_sglang_rules():
    ok = {"input": {"ticket": 1}, "questions": [{"id": "a", "type": "yes_no", "question": ["x"]}]}
    sglang.DecisionsRequest.model_validate(ok)
    with pytest.raises(Exception) as err:
        sglang.DecisionsRequest.model_validate({**ok, "questions": [{"id": 1, "type": "yes_no", "question": "x"}]})
    assert "questions[0].id" in sglang.format_validation_error(err.value)
