"""Upstream answers -> IR: matching, refusals, usage, and 502 on anything unusable (never a made-up number)."""

from __future__ import annotations

import math

import pytest

from tests.translators.helpers import openai_body, systemone_body
from translators import openai, systemone
from translators.errors import UpstreamError
from translators.ir import Usage

OA_REQ = openai.parse_request(openai_body(), None)
S1_REQ = systemone.parse_request(systemone_body(), None)


def oa_answers(**changes) -> dict:
    body = {
        "model": "gpt-6-luna-2026",
        "answers": [
            {"type": "predicate", "name": "dup", "probability": 0.93},
            {"type": "choice", "name": "category", "choice": "billing", "confidence": 0.8,
             "probabilities": [{"value": True, "probability": 0.1}, {"value": "billing", "probability": 0.9}]},
            {"type": "score", "name": "urgency", "score": 1.8, "confidence": 0.6, "evidence": ["e1"],
             "probabilities": [{"value": 0, "label": "low", "probability": 0.1},
                               {"value": 1, "label": "med", "probability": 0.0},
                               {"value": 2, "label": "high", "probability": 0.9}]},
        ],
        "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 7, "cache_write_tokens": 3},
                  "output_tokens": 0, "output_tokens_details": {"reasoning_tokens": 2}, "total_tokens": 100},
    }
    body.update(changes)
    return body


def s1_answers(**changes) -> dict:
    body = {
        "model": "jev-1.13-20260917",
        "answers": {
            "billing": {"type": "noul", "noul": 0.98},
            "billing2": {"type": "noul", "noul": 1, "x_label_mass": 0.91},
            "tone": {"type": "choice", "choice": "angry", "confidence": 0.6,
                     "probabilities": {"calm": 0.2, "angry": 0.8}, "evidence": "shouting"},
            "urgency": {"type": "score", "score": 1.7, "confidence": 0.5,
                        "legend": {"0": "Can wait", "1": "This week", "2": {"lvl": "Today"}},
                        "probabilities": {"0": 0.1, "1": 0.1, "2": 0.8}},
        },
        "usage": {"input_tokens": 120, "output_tokens": 12, "cached_tokens": 5, "cost": 0.000003},
    }
    body.update(changes)
    return body


def test_openai_answers_match_by_position_and_value():
    result = openai.parse_response(oa_answers(), OA_REQ)
    assert result.model == "gpt-6-luna-2026"
    dup, category, urgency = result.answers
    assert dup.kind == "yes_no" and dup.probabilities == (0.93, pytest.approx(0.07))
    assert category.probabilities == (0.9, 0.1) and category.confidence == 0.8  # question order, typed values
    assert urgency.probabilities == (0.1, 0.0, 0.9) and urgency.extra == {"evidence": ["e1"]}
    assert result.usage == Usage(input_tokens=100, output_tokens=0, cached_tokens=7, cache_write_tokens=3,
                                 reasoning_tokens=2)


def test_openai_refusal_and_missing_model():
    body = oa_answers()
    body.pop("model")
    body["answers"][1] = {"type": "refusal", "name": "category"}
    result = openai.parse_response(body, OA_REQ)
    assert result.model == "gpt-6-luna" and result.answers[1].kind == "refusal"
    assert result.refusals == ["category"]


@pytest.mark.parametrize("mutate, words", [
    (lambda b: b["answers"].pop(), "2 answers for 3 questions"),
    (lambda b: b["answers"][0].update(type="choice"), "question 'dup' with type 'choice'"),
    (lambda b: b["answers"][0].update(probability=float("nan")), "not a finite number"),
    (lambda b: b["answers"][0].pop("probability"), "is missing"),
    (lambda b: b["answers"][0].update(probability="0.9"), "not a number"),
    (lambda b: b["answers"][0].update(probability=1.5), "outside [0, 1]"),
    (lambda b: b["answers"][1]["probabilities"].pop(0), "no probability for True"),
    (lambda b: b["answers"][1]["probabilities"].pop(), "no probability for 'billing'"),
    (lambda b: b["answers"][1]["probabilities"][0].update(value="true"), "unknown choices: true"),
    (lambda b: b["answers"][1]["probabilities"][1].update(probability=float("inf")), "not a finite number"),
    (lambda b: b["answers"][2]["probabilities"].pop(0), "no probability for 0"),
    (lambda b: b["answers"][2]["probabilities"][0].update(value=7), "level 0..2"),
    (lambda b: b["usage"].update(input_tokens=3.5), "input_tokens must be a non-negative integer"),
    (lambda b: b.update(answers={}), "no answers list"),
])
def test_unusable_openai_answers_are_a_502(mutate, words):
    body = oa_answers()
    mutate(body)
    with pytest.raises(UpstreamError) as caught:
        openai.parse_response(body, OA_REQ)
    assert caught.value.status == 502 and words in caught.value.message
    status, envelope = openai.render_error(caught.value)
    assert status == 502 and envelope["error"]["type"] == "upstream_error" and envelope["error"]["param"] is None


def test_openai_answers_to_partly_named_questions_pair_by_position():
    body = openai_body()
    body["questions"][1].pop("name")  # unnamed: the ids are positions, and the upstream echoes null
    req = openai.parse_request(body, None)
    answers = oa_answers()
    answers["answers"][1]["name"] = None
    result = openai.parse_response(answers, req)
    assert [a.question_id for a in result.answers] == ["0", "1", "2"]
    assert result.answers[1].probabilities == (0.9, 0.1)
    rendered = openai.render_response(result, req)
    assert [a["name"] for a in rendered["answers"]] == ["dup", None, "urgency"]


def test_openai_answers_that_echo_another_questions_name_are_a_502():
    body = oa_answers()
    body["answers"][0]["name"] = "urgency"  # reordered upstream: pairing by position would mix answers up
    with pytest.raises(UpstreamError) as caught:
        openai.parse_response(body, OA_REQ)
    assert caught.value.status == 502 and "'urgency'" in caught.value.message and "question order" in caught.value.message
    s1_req = systemone.parse_request(systemone_body(questions={"a": {"type": "noul", "instructions": "x"}}), None)
    with pytest.raises(UpstreamError):  # a System One caller's keys are the names sent, so they are checked too
        openai.parse_response({"answers": [{"type": "predicate", "name": "b", "probability": 0.5}]}, s1_req)
    ok = openai.parse_response({"answers": [{"type": "predicate", "name": "a", "probability": 0.5}]}, s1_req)
    assert ok.answers[0].question_id == "a"


def test_system_one_answers_match_by_key():
    result = systemone.parse_response(s1_answers(), S1_REQ)
    assert result.model == "jev-1.13-20260917"
    billing, billing2, tone, urgency = result.answers
    assert billing.probabilities == (0.98, pytest.approx(0.02))
    assert billing2.probabilities == (1.0, 0.0) and billing2.label_mass == 0.91
    assert tone.probabilities == (0.2, 0.8) and tone.confidence == 0.6 and tone.extra == {"evidence": "shouting"}
    assert urgency.probabilities == (0.1, 0.1, 0.8)
    assert result.usage == Usage(input_tokens=120, output_tokens=12, cached_tokens=5, cost=0.000003)


def test_system_one_boolean_keys_map_back_to_typed_choices():
    req = openai.parse_request(openai_body(), None)  # category has "billing" and True
    body = {"answers": {"dup": {"type": "noul", "noul": 0.5},
                        "category": {"type": "choice", "choice": "true", "probabilities": {"billing": 0.25, "true": 0.75}},
                        "urgency": {"type": "score", "label_mass": 0.5, "probabilities": {"0": 0.2, "1": 0.3, "2": 0.5}}},
            "usage": {"input_tokens": 1, "output_tokens": 0, "input_tokens_details": {"cached_tokens": 1}}}
    result = systemone.parse_response(body, req)
    assert result.model == "gpt-6-luna"  # absent upstream model -> the requested one
    assert result.answers[1].probabilities == (0.25, 0.75) and result.answers[1].confidence is None
    assert result.answers[2].label_mass == 0.5 and result.usage.cached_tokens == 1
    rendered = openai.render_response(result, req)
    assert rendered["answers"][1]["choice"] is True


def test_system_one_refusal_type_and_box():
    req = systemone.parse_request(systemone_body(questions={"d": {"type": "box", "instructions": "The dog"},
                                                            "n": {"type": "noul", "instructions": "x"}}), None)
    body = {"model": "jev", "answers": {"d": {"type": "box", "box": {"top": 0.1, "bottom": 0.9, "left": 0, "right": 1},
                                              "confidence": None},
                                        "n": {"type": "refusal"}}, "usage": {}}
    box, refusal = systemone.parse_response(body, req).answers
    assert box.box == {"top": 0.1, "bottom": 0.9, "left": 0, "right": 1} and box.confidence is None
    assert refusal.kind == "refusal"


@pytest.mark.parametrize("mutate, words", [
    (lambda b: b["answers"].pop("tone"), "no answer for question 'tone'"),
    (lambda b: b["answers"]["tone"].update(type="score"), "question 'tone' with type 'score'"),
    (lambda b: b["answers"]["tone"]["probabilities"].pop("calm"), "no probability for 'calm'"),
    (lambda b: b["answers"]["tone"]["probabilities"].update(calm=None), "is missing"),
    (lambda b: b["answers"]["tone"]["probabilities"].update(bored=0.1), "unknown options: bored"),
    (lambda b: b["answers"]["tone"].pop("probabilities"), "no probabilities object"),
    (lambda b: b["answers"]["urgency"]["probabilities"].update({"2": float("nan")}), "not a finite number"),
    (lambda b: b["answers"]["urgency"]["probabilities"].pop("0"), "no probability for '0'"),
    (lambda b: b["answers"]["billing"].update(noul=float("-inf")), "not a finite number"),
    (lambda b: b["usage"].update(output_tokens="12"), "output_tokens must be a non-negative integer"),
    (lambda b: b.update(answers=[]), "no answers object"),
])
def test_unusable_system_one_answers_are_a_502(mutate, words):
    body = s1_answers()
    mutate(body)
    with pytest.raises(UpstreamError) as caught:
        systemone.parse_response(body, S1_REQ)
    assert caught.value.status == 502 and words in caught.value.message
    status, envelope = systemone.render_error(caught.value)
    assert status == 502 and envelope == {"detail": {"message": caught.value.message,
                                                     "error_type": "bad_upstream_response"}}


def test_score_probabilities_as_a_list_are_read_by_index():
    body = s1_answers()
    body["answers"]["urgency"]["probabilities"] = [0.1, 0.1, 0.8]
    assert systemone.parse_response(body, S1_REQ).answers[3].probabilities == (0.1, 0.1, 0.8)
    assert math.isclose(sum(systemone.parse_response(body, S1_REQ).answers[3].probabilities), 1.0)


def test_an_integral_float_token_count_is_read_as_an_integer():
    from translators.upstream_values import usage

    read = usage({"input_tokens": 3.0, "output_tokens": 0.0})
    assert read.input_tokens == 3 and type(read.input_tokens) is int and type(read.output_tokens) is int

