"""Normalisation (sums, confidence, 502s) and rendering for callers of both wires, checked by real clients."""

from __future__ import annotations

import math

import httpx2
import pytest
from typesafe_sdk._core.response_types import SystemOneResponse as SdkResponse

from tests.translators.helpers import assert_nimble_accepts, openai_body, systemone_body
from translators import openai, systemone
from translators.errors import UpstreamError
from translators.ir import Answer, DecisionResult, Usage
from translators.normalize import normalise_result
from translators.openai_wire import DecisionResponse as OpenAIResponseSchema
from translators.systemone_wire import SystemOneResponse as SystemOneResponseSchema

STARS = {"stars": {"type": "score", "criteria": ["1", "2", "3", "4", "5"]}}


def s1_req(questions=None):
    return systemone.parse_request(systemone_body(**({"questions": questions} if questions else {})), None)


def result(*answers, usage=Usage(input_tokens=10, output_tokens=1)):
    return DecisionResult(model="jev-1.13", answers=answers, usage=usage)


def test_published_jev_values():
    req = s1_req(STARS)
    out = normalise_result(result(Answer("stars", "score", (0.005, 0.005, 0.04, 0.25, 0.7))), req)
    (stars,) = out.answers
    assert stars.score == pytest.approx(3.635, abs=1e-12)
    assert stars.confidence == pytest.approx(0.6958333333333333, abs=1e-12)
    genre = normalise_result(result(Answer("g", "choice", (0.88, 0.12))),
                             s1_req({"g": {"type": "choice", "criteria": {"rock": None, "jazz": None}}}))
    assert genre.answers[0].confidence == pytest.approx(0.76, abs=1e-12)
    urgency = normalise_result(result(Answer("u", "score", (0.1, 0.1, 0.8))),
                               s1_req({"u": {"type": "score", "criteria": ["a", "b", "c"]}}))
    assert urgency.answers[0].confidence == pytest.approx(0.55, abs=1e-12)


@pytest.mark.parametrize("rounded", [(0.33, 0.33, 0.33), (0.1, 0.2, 0.3), (0.3334, 0.3333, 0.3334), (0.0, 0.0, 0.0)])
def test_rounded_probabilities_are_renormalised(rounded):
    req = s1_req({"c": {"type": "choice", "criteria": {"a": None, "b": None, "c": None}}})
    (answer,) = normalise_result(result(Answer("c", "choice", rounded)), req).answers
    assert abs(math.fsum(answer.probabilities) - 1.0) <= 1e-9
    total = math.fsum(rounded)
    expected = [p / total for p in rounded] if total else [1 / 3] * 3
    assert answer.probabilities == pytest.approx(expected, abs=1e-12)
    assert 0.0 <= answer.confidence <= 1.0


def test_confidence_kept_when_given_and_in_range_else_recomputed():
    req = s1_req({"c": {"type": "choice", "criteria": {"a": None, "b": None}}})
    kept = normalise_result(result(Answer("c", "choice", (0.2, 0.8), confidence=0.42)), req).answers[0]
    assert kept.confidence == 0.42
    for bad_confidence in (1.5, -0.1, float("nan"), None):
        fixed = normalise_result(result(Answer("c", "choice", (0.2, 0.8), confidence=bad_confidence)), req)
        assert fixed.answers[0].confidence == pytest.approx(0.6)


def test_yes_no_is_stored_as_p_and_one_minus_p():
    req = s1_req({"n": {"type": "noul", "instructions": "x"}})
    (answer,) = normalise_result(result(Answer("n", "yes_no", (0.3, 0.6))), req).answers
    assert answer.probabilities == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert answer.probabilities[0] + answer.probabilities[1] == 1.0 and answer.confidence is None


def test_tiny_negative_rounding_is_clamped():
    req = s1_req({"c": {"type": "choice", "criteria": {"a": None, "b": None}}})
    (answer,) = normalise_result(result(Answer("c", "choice", (-1e-12, 1.0))), req).answers
    assert answer.probabilities == (0.0, 1.0)


@pytest.mark.parametrize("answers, words", [
    ((Answer("c", "choice", (-0.01, 1.0)),), "negative probability"),
    ((Answer("c", "choice", (float("nan"), 1.0)),), "not a finite number"),
    ((Answer("c", "choice", (0.5,)),), "gave 1 probabilities"),
    ((Answer("c", "score", (0.5, 0.5)),), "score answer, expected choice"),
    ((), "no answer for question 'c'"),
    ((Answer("c", "choice", (0.5, 0.5)), Answer("c", "choice", (0.5, 0.5))), "more than once"),
    ((Answer("c", "choice", (0.5, 0.5)), Answer("zz", "yes_no", (1.0, 0.0))), "not asked: zz"),
])
def test_unusable_results_are_a_502(answers, words):
    req = s1_req({"c": {"type": "choice", "criteria": {"a": None, "b": None}}})
    with pytest.raises(UpstreamError) as caught:
        normalise_result(result(*answers), req)
    assert caught.value.status == 502 and words in caught.value.message


def full_result():
    return result(
        Answer("billing", "yes_no", (0.98, 0.02)),
        Answer("billing2", "refusal"),
        Answer("tone", "choice", (0.2, 0.8), extra={"evidence": "shouting"}, label_mass=0.9),
        Answer("urgency", "score", (0.1, 0.1, 0.8)),
        usage=Usage(input_tokens=120, output_tokens=None, cached_tokens=5),
    )


def test_system_one_rendering():
    body = systemone_body()
    req = systemone.parse_request(body, None)
    rendered = systemone.render_response(normalise_result(full_result(), req), req)
    assert rendered["refusals"] == ["billing2"] and "billing2" not in rendered["answers"]
    assert rendered["answers"]["billing"] == {"type": "noul", "noul": 0.98}
    assert rendered["answers"]["tone"] == {"type": "choice", "choice": "angry", "confidence": pytest.approx(0.6),
                                           "probabilities": {"calm": 0.2, "angry": 0.8},
                                           "x_label_mass": 0.9, "evidence": "shouting"}
    urgency = rendered["answers"]["urgency"]
    assert urgency["legend"] == {"0": "Can wait", "1": "This week", "2": {"lvl": "Today"}}
    assert urgency["score"] == pytest.approx(1.7) and urgency["confidence"] == pytest.approx(0.55)
    assert rendered["usage"] == {"input_tokens": 120, "output_tokens": 0, "input_tokens_details": {"cached_tokens": 5}}
    assert_nimble_accepts(rendered, body)
    SystemOneResponseSchema.model_validate(rendered)
    sdk = SdkResponse.from_http_response(httpx2.Response(
        200, json=rendered, request=httpx2.Request("POST", "http://gateway/v1/systemone")))
    assert sdk.scores["urgency"].legend and sdk.choices["tone"].choice == "angry"


def test_system_one_rendering_without_refusals_has_no_refusals_key():
    req = s1_req(STARS)
    out = normalise_result(result(Answer("stars", "score", (0.2,) * 5)), req)
    assert "refusals" not in systemone.render_response(out, req)


def test_openai_rendering():
    from openai.types import Decision

    req = openai.parse_request(openai_body(questions=openai_body()["questions"] + [
        {"type": "predicate", "instructions": "unnamed"}]), None)
    ids = [q.id for q in req.questions]
    raw = result(Answer(ids[0], "yes_no", (0.93, 0.07)),
                 Answer(ids[1], "choice", (0.1, 0.9), confidence=0.8),
                 Answer(ids[2], "score", (0.1, 0.0, 0.9)),
                 Answer(ids[3], "refusal"),
                 usage=Usage(input_tokens=100, output_tokens=3, cached_tokens=4, reasoning_tokens=1))
    rendered = openai.render_response(normalise_result(raw, req), req)
    assert rendered["answers"][0] == {"type": "predicate", "name": "dup", "probability": 0.93}
    assert rendered["answers"][1] == {"type": "choice", "name": "category", "choice": True, "confidence": 0.8,
                                      "probabilities": [{"value": "billing", "probability": 0.1},
                                                        {"value": True, "probability": 0.9}]}
    score = rendered["answers"][2]
    assert score["score"] == pytest.approx(1.8) and score["confidence"] == pytest.approx(0.7)
    assert [p["label"] for p in score["probabilities"]] == ["low", "med", "high"]
    assert [p["value"] for p in score["probabilities"]] == [0, 1, 2]
    assert rendered["answers"][3] == {"type": "refusal", "name": None}
    assert rendered["usage"] == {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 0},
                                 "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 1},
                                 "total_tokens": 103}
    OpenAIResponseSchema.model_validate(rendered)
    decision = Decision.model_validate(rendered)
    assert decision.usage.total_tokens == 103


def test_openai_caller_answered_by_a_system_one_upstream_gets_booleans_and_names():
    req = openai.parse_request(openai_body(), None)
    upstream = systemone.render_request(req, "jev")
    assert upstream["questions"]["category"]["criteria"] == {"billing": "Payments", "true": None}
    answer = {"model": "jev-1.14.0", "answers": {
        "dup": {"type": "noul", "noul": 0.61},
        "category": {"type": "choice", "choice": "true", "confidence": 0.5, "probabilities": {"billing": 0.25, "true": 0.75}},
        "urgency": {"type": "score", "score": 1, "confidence": 0.1, "legend": {}, "probabilities": {"0": 0.33, "1": 0.33, "2": 0.33}}},
        "usage": {"input_tokens": 9, "output_tokens": 0}}
    out = normalise_result(systemone.parse_response(answer, req), req)
    rendered = openai.render_response(out, req)
    assert rendered["model"] == "jev-1.14.0"
    assert rendered["answers"][1]["choice"] is True and rendered["answers"][1]["name"] == "category"
    assert rendered["answers"][2]["score"] == pytest.approx(1.0) and rendered["answers"][2]["confidence"] == 0.1
    assert math.fsum(p["probability"] for p in rendered["answers"][2]["probabilities"]) == pytest.approx(1.0, abs=1e-9)
