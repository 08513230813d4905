"""Property tests for OpenAI Decisions results: any valid upstream answer (typed boolean choices,
refusals, rounded numbers, shuffled probability lists) survives OpenAI wire -> IR -> OpenAI wire
unchanged in meaning, and crosses to the System One wire and back."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.translators.helpers import assert_nimble_accepts
from tests.translators.test_roundtrip import SETTINGS, close, oa_bodies
from translators import openai, systemone
from translators.confidence import choice_confidence, normalise, score_confidence
from translators.normalize import normalise_result


@st.composite
def oa_case(draw):
    """An OpenAI request and an upstream answer for it, as an OpenAI server could send it."""
    body = draw(oa_bodies)
    digits = draw(st.sampled_from([2, 4, 12]))
    probability = st.floats(0, 1).map(lambda p: round(p, digits))
    answers = []
    for question in body["questions"]:
        name = question.get("name")
        if draw(st.integers(0, 5)) == 0:
            answers.append({"type": "refusal", "name": name})
            continue
        if question["type"] == "predicate":
            answers.append({"type": "predicate", "name": name, "probability": draw(probability)})
            continue
        if question["type"] == "choice":
            entries = [{"value": c["value"], "probability": draw(probability)} for c in question["choices"]]
        else:
            entries = [{"value": i, "label": lv["label"], "probability": draw(probability)}
                       for i, lv in enumerate(question["levels"])]
        answer: dict[str, Any] = {"type": question["type"], "name": name,
                                  "probabilities": draw(st.permutations(entries))}
        if draw(st.booleans()):
            answer["confidence"] = draw(st.floats(0, 1))
        if question["type"] == "choice":
            answer["choice"] = max(entries, key=lambda e: e["probability"])["value"]
        else:
            answer["score"] = 0.0  # an upstream's own score is recomputed from the probabilities
        answers.append(answer)
    tokens = draw(st.integers(0, 10**6))
    upstream = {"model": "gpt-6-luna", "answers": answers,
                "usage": {"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                          "output_tokens": 0, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": tokens}}
    return body, upstream


def in_question_order(question: dict, answer: dict) -> list[float]:
    """The upstream probabilities in the question's own order, matched by typed value."""
    if question["type"] == "choice":
        by_value = {(type(e["value"]), e["value"]): e["probability"] for e in answer["probabilities"]}
        return [by_value[(type(c["value"]), c["value"])] for c in question["choices"]]
    by_index = {e["value"]: e["probability"] for e in answer["probabilities"]}
    return [by_index[i] for i in range(len(question["levels"]))]


@SETTINGS
@given(oa_case())
def test_openai_result_survives_the_openai_wire(case):
    body, upstream = case
    req = openai.parse_request(body, None)
    rendered = openai.render_response(normalise_result(openai.parse_response(upstream, req), req), req)
    assert rendered["model"] == "gpt-6-luna" and rendered["usage"] == upstream["usage"]
    for question, sent, got in zip(body["questions"], upstream["answers"], rendered["answers"], strict=True):
        assert got["type"] == sent["type"] and got["name"] == question.get("name")
        if sent["type"] == "refusal":
            assert got == {"type": "refusal", "name": question.get("name")}
            continue
        if sent["type"] == "predicate":
            assert math.isclose(got["probability"], sent["probability"], abs_tol=1e-9)
            continue
        expected = normalise(in_question_order(question, sent))
        assert abs(math.fsum(e["probability"] for e in got["probabilities"]) - 1.0) <= 1e-9
        assert [e["probability"] for e in got["probabilities"]] == [_approx(p) for p in expected]
        formula = choice_confidence if sent["type"] == "choice" else score_confidence
        assert got["confidence"] == sent.get("confidence", formula(expected))
        if sent["type"] == "choice":
            values = [c["value"] for c in question["choices"]]
            assert [e["value"] for e in got["probabilities"]] == values
            best = max(range(len(values)), key=lambda i: (expected[i], -i))
            assert got["choice"] == values[best] and type(got["choice"]) is type(values[best])
        else:
            assert [(e["value"], e["label"]) for e in got["probabilities"]] == [
                (i, lv["label"]) for i, lv in enumerate(question["levels"])]
            assert math.isclose(got["score"], math.fsum(i * p for i, p in enumerate(expected)), abs_tol=1e-9)
    again = normalise_result(openai.parse_response(rendered, req), req)
    assert close(openai.render_response(again, req), rendered)


@SETTINGS
@given(oa_case())
def test_openai_result_crosses_to_system_one_and_back(case):
    body, upstream = case
    req = openai.parse_request(body, None)
    result = normalise_result(openai.parse_response(upstream, req), req)
    s1_request = systemone.render_request(req, "jev-latest")
    s1_rendered = systemone.render_response(result, req)
    assert s1_rendered.get("refusals", []) == [q.id for q, a in zip(req.questions, upstream["answers"])
                                               if a["type"] == "refusal"]
    assert_nimble_accepts(s1_rendered, s1_request)
    back = normalise_result(systemone.parse_response(s1_rendered, req), req)
    assert close(openai.render_response(back, req), openai.render_response(result, req))


class _approx(float):
    """A float equal to any number within 1e-9 (for list equality with a tolerance)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (int, float)) and math.isclose(self, other, abs_tol=1e-9)

    __hash__ = float.__hash__
