"""Make an upstream result safe to render: one answer per question, finite probabilities summing to 1.

Upstreams round to 2 or 4 decimals, so probabilities are renormalised (sum 1 within 1e-9); a missing,
negative or non-finite probability is the upstream's fault (``UpstreamError`` 502), never replaced by a
made-up number. Confidence is kept when the upstream gave a finite one in [0, 1], else the published Jev
formula (translators.confidence) is used. Choice and expected score are IR properties, so they always
agree with the probabilities that are rendered.
"""

from __future__ import annotations

import math
from dataclasses import replace

from translators.confidence import confidence_or_jev, normalise
from translators.ir import Answer, DecisionRequest, DecisionResult, Question
from translators.upstream_values import answers_in_order, bad, describe_question

NEGATIVE_SLACK = 1e-9  # rounding noise below zero that is clamped to 0


def normalise_result(result: DecisionResult, req: DecisionRequest) -> DecisionResult:
    """The result in question order with every answer checked and normalised. Raises ``UpstreamError`` 502."""
    by_id: dict[str, Answer] = {}
    for answer in result.answers:
        if answer.question_id in by_id:
            raise bad(f"The upstream answered question '{answer.question_id}' more than once.")
        by_id[answer.question_id] = answer
    unknown = sorted(set(by_id) - {q.id for q in req.questions})
    if unknown:
        raise bad(f"The upstream answered questions that were not asked: {', '.join(unknown)}.")
    return replace(result, answers=tuple(normalise_answer(q, a) for q, a in answers_in_order(result, req)))


def normalise_answer(question: Question, answer: Answer) -> Answer:
    what = describe_question(question.id, question.name)
    label_mass = _finite_or_none(answer.label_mass)
    if answer.kind == "refusal":
        return answer
    if answer.kind != question.kind:
        raise bad(f"The upstream answered {what} with a {answer.kind} answer, expected {question.kind}.")
    if answer.kind == "box":
        confidence = _unit_or_none(answer.confidence)
        return _with(answer, (), confidence, label_mass)
    if len(answer.probabilities) != question.size:
        raise bad(f"The upstream gave {len(answer.probabilities)} probabilities for {what}, "
                  f"expected {question.size}.")
    cleaned = [_clean(p, what) for p in answer.probabilities]
    if answer.kind == "yes_no":
        p_yes = min(1.0, max(0.0, normalise(cleaned)[0]))
        return _with(answer, (p_yes, 1.0 - p_yes), None, label_mass)
    probabilities = tuple(normalise(cleaned))
    confidence = confidence_or_jev(answer.kind, probabilities, _unit_or_none(answer.confidence))
    return _with(answer, probabilities, confidence, label_mass)


def _with(answer: Answer, probabilities: tuple[float, ...], confidence: float | None,
          label_mass: float | None) -> Answer:
    """The answer with its checked numbers (built directly: ``dataclasses.replace`` costs several
    times more, on every answer of every request)."""
    return Answer(answer.question_id, answer.kind, probabilities, confidence, answer.box, label_mass, answer.extra)


def _clean(p: float, what: str) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p):
        raise bad(f"The upstream answer for {what} has a probability that is not a finite number ({p!r}).")
    if p < 0:
        if p < -NEGATIVE_SLACK:
            raise bad(f"The upstream answer for {what} has a negative probability ({p}).")
        return 0.0
    return float(p)


def _unit_or_none(value: float | None) -> float | None:
    if value is None or isinstance(value, bool) or not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return None
    return float(value)


def _finite_or_none(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)
