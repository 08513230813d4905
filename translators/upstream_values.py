"""Reading numbers and usage out of an upstream answer: anything unusable is an ``UpstreamError`` (502).

A failure never turns into a made-up probability: a missing, non-numeric or non-finite value stops here.
"""

from __future__ import annotations

import math
from typing import Any

from translators.errors import UpstreamError
from translators.ir import Answer, DecisionRequest, DecisionResult, Question, Usage


def bad(message: str) -> UpstreamError:
    return UpstreamError(502, message, type="upstream_error", code="bad_upstream_response")


def probability(value: Any, what: str) -> float:
    """A finite number (int or float, not bool, not a string)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        shown = "missing" if value is None else f"not a number ({type(value).__name__})"
        raise bad(f"The upstream answer for {what} is {shown}.")
    number = float(value)
    if not math.isfinite(number):
        raise bad(f"The upstream answer for {what} is not a finite number ({value}).")
    return number


def yes_probability(value: Any, what: str) -> tuple[float, float]:
    """(P(yes), P(no)) from a P(yes) that must lie in [0, 1] (1e-6 rounding slack is clamped)."""
    p = probability(value, what)
    if p < -1e-6 or p > 1 + 1e-6:
        raise bad(f"The upstream answer for {what} is {p}, outside [0, 1].")
    p = min(1.0, max(0.0, p))
    return p, 1.0 - p


def optional_number(value: Any) -> float | None:
    """A finite number, or None when absent or unusable (confidence, label mass: recomputed or dropped)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def token_count(value: Any, what: str) -> int | None:
    """A non-negative integer; an integral float such as ``3.0`` is read as 3 (we always emit ints)."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise bad(f"The upstream usage field {what} must be a non-negative integer, got {value!r}.")
    return value


def usage(raw: Any) -> Usage:
    """IR usage from an OpenAI- or System One-shaped ``usage`` object (absent -> unknown counts)."""
    if raw is None:
        return Usage()
    if not isinstance(raw, dict):
        raise bad("The upstream usage is not an object.")
    details = raw.get("input_tokens_details") or {}
    out_details = raw.get("output_tokens_details") or {}
    if not isinstance(details, dict) or not isinstance(out_details, dict):
        raise bad("The upstream usage token details are not objects.")
    cached = details.get("cached_tokens", raw.get("cached_tokens", raw.get("cached_input_tokens")))
    cost = raw.get("cost")
    return Usage(
        input_tokens=token_count(raw.get("input_tokens"), "input_tokens"),
        output_tokens=token_count(raw.get("output_tokens"), "output_tokens"),
        cached_tokens=token_count(cached, "cached_tokens") or 0,
        cache_write_tokens=token_count(details.get("cache_write_tokens", raw.get("cache_write_tokens")),
                                       "cache_write_tokens") or 0,
        reasoning_tokens=token_count(out_details.get("reasoning_tokens"), "reasoning_tokens") or 0,
        cost=optional_number(cost),
    )


def model_name(body: dict[str, Any], requested: str) -> str:
    model = body.get("model")
    return model if isinstance(model, str) and model else requested


def describe_question(qid: str, name: str | None = None) -> str:
    return f"question '{name}'" if name else f"question '{qid}'"


def open_answer(question: Question, raw: Any, expected_type: str,
                known_fields: set[str]) -> tuple[str, dict[str, Any], bool]:
    """Check one upstream answer's envelope: (how messages name the question, unknown fields, refused?).

    An answer that is not an object, or whose type is neither the question's nor ``refusal``, is a 502.
    """
    what = describe_question(question.id, question.name)
    if not isinstance(raw, dict):
        raise bad(f"The upstream answer for {what} is not an object.")
    kind = raw.get("type")
    extra = {k: v for k, v in raw.items() if k not in known_fields}
    if kind != "refusal" and kind != expected_type:
        raise bad(f"The upstream answered {what} with type {kind!r}, expected {expected_type!r}.")
    return what, extra, kind == "refusal"


def answers_in_order(result: DecisionResult, req: DecisionRequest) -> list[tuple[Question, Answer]]:
    """Each question with its answer, in question order; a question without one is a 502, never made up."""
    by_id = {answer.question_id: answer for answer in result.answers}
    pairs = []
    for question in req.questions:
        answer = by_id.get(question.id)
        if answer is None:
            raise bad(f"The upstream returned no answer for {describe_question(question.id, question.name)}.")
        pairs.append((question, answer))
    return pairs

