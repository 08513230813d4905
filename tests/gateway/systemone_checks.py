"""The strict checks the Nimble client makes on a System One response (wire-formats.md 2.1), reusable.

``check_systemone_response(request_body, response_body)`` raises AssertionError naming the question
and the rule. When the request fits Nimble's own (stricter) request schema, the response is also
run through ``bespokelabs.nimble``'s validation.
"""

from __future__ import annotations

import math

from bespokelabs.nimble import SystemOneResponse as NimbleResponse
from bespokelabs.nimble._schema import SystemOneRequest as NimbleRequest
from pydantic import ValidationError

SUM_TOLERANCE = 1e-5
ARGMAX_TOLERANCE = 1e-6
SCORE_TOLERANCE = 1e-5


def check_systemone_response(request: dict, response: dict) -> None:
    questions = request["questions"]
    assert isinstance(response.get("model"), str), "model must be a string"
    usage = response.get("usage")
    assert isinstance(usage, dict), "usage must be an object"
    for key in ("input_tokens", "output_tokens"):
        assert type(usage.get(key)) is int and usage[key] >= 0, f"usage.{key} must be an integer >= 0"
    answers = response.get("answers")
    assert isinstance(answers, dict) and set(answers) == set(questions), (
        f"answer keys {sorted(answers or {})} differ from question keys {sorted(questions)}")
    for qid, question in questions.items():
        check_answer(qid, question, answers[qid])
    check_with_nimble(request, response)


def check_answer(qid: str, question: dict, answer: dict) -> None:
    kind = question["type"]
    assert answer.get("type") == kind, f"{qid}: answer type {answer.get('type')} != question type {kind}"
    if kind == "noul":
        assert _is_probability(answer.get("noul")), f"{qid}: noul must be a probability"
        return
    if kind == "box":
        assert set(answer["box"]) == {"top", "bottom", "left", "right"}, f"{qid}: box needs four edges"
        return
    probabilities = answer.get("probabilities")
    assert isinstance(probabilities, dict) and len(probabilities) >= 1, f"{qid}: probabilities missing"
    assert all(_is_probability(p) for p in probabilities.values()), f"{qid}: probabilities must be in [0, 1]"
    assert math.isclose(math.fsum(probabilities.values()), 1.0, abs_tol=SUM_TOLERANCE), (
        f"{qid}: probabilities sum to {math.fsum(probabilities.values())}, not 1")
    assert _is_probability(answer.get("confidence")), f"{qid}: confidence must be a number in [0, 1]"
    if kind == "choice":
        criteria = question["criteria"]
        assert list(probabilities) == list(criteria), f"{qid}: probability keys differ from the criteria"
        assert answer["choice"] in criteria, f"{qid}: choice is not one of the criteria"
        best = max(probabilities.values())
        assert probabilities[answer["choice"]] >= best - ARGMAX_TOLERANCE, f"{qid}: choice is not the argmax"
    elif kind == "score":
        criteria = question["criteria"]
        assert list(probabilities) == [str(i) for i in range(len(criteria))], f"{qid}: keys must be '0'..'N-1'"
        assert answer["legend"] == {str(i): c for i, c in enumerate(criteria)}, f"{qid}: legend != criteria"
        expected = math.fsum(int(k) * p for k, p in probabilities.items())
        assert math.isclose(answer["score"], expected, abs_tol=SCORE_TOLERANCE), (
            f"{qid}: score {answer['score']} != sum of i * p_i = {expected}")


def check_with_nimble(request: dict, response: dict) -> bool:
    """Nimble's own validation, when the request is one Nimble itself could have sent."""
    try:
        nimble_request = NimbleRequest.model_validate(
            {"model": request.get("model") or "m", "state": request["state"], "questions": request["questions"]})
    except ValidationError:
        return False
    NimbleResponse.model_validate(response).validate_against(nimble_request)
    return True


def _is_probability(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0
