"""OpenAI Decisions wire: parse/render for callers (``/v1/decisions``) and for OpenAI upstreams.

``parse_request`` lives in ``openai_parse``, the upstream pair in ``openai_upstream``; this module is
the public face the gateway and providers import (see docs/architecture.md).
"""

from __future__ import annotations

from typing import Any

from translators.confidence import confidence_or_jev
from translators.content import json_text
from translators.errors import BODY, DecisionError, Loc, RequestInvalid, Where, format_param
from translators.ir import Answer, DecisionRequest, DecisionResult, Question, Usage
from translators.limits import RequestLimits
from translators.openai_parse import parse_request as parse_openai_request
from translators.openai_upstream import parse_response, render_request
from translators.upstream_values import answers_in_order

Parts = dict[str, tuple[str, bytes]]  # multipart asset parts by name: (content type, bytes)

__all__ = ["parse_request", "render_request", "parse_response", "render_response", "render_error", "locate"]


def parse_request(body: Any, limits: RequestLimits | None = None, parts: Parts | None = None) -> DecisionRequest:
    """Validate a ``/v1/decisions`` body into the IR (400 naming the field). This wire has no asset
    parts: images travel inside ``input`` as ``input_image`` parts, so multipart parts are refused."""
    if parts:
        raise RequestInvalid("Multipart asset parts are accepted on /v1/systemone only; send images to "
                             "/v1/decisions as input_image parts.", loc=BODY, code="invalid_body")
    return parse_openai_request(body, limits)


def render_response(result: DecisionResult, req: DecisionRequest) -> dict[str, Any]:
    """The ``/v1/decisions`` response: answers in question order, each echoing the question's name."""
    answers = [render_answer(question, answer) for question, answer in answers_in_order(result, req)]
    return {"model": result.model or req.model, "answers": answers, "usage": render_usage(result.usage)}


def render_answer(question: Question, answer: Answer) -> dict[str, Any]:
    name = question.name
    if answer.kind == "refusal":
        return {"type": "refusal", "name": name}
    if answer.kind == "yes_no":
        return {"type": "predicate", "name": name, "probability": answer.probability}
    if answer.kind == "box":
        return {"type": "box", "name": name, "box": answer.box, "confidence": answer.confidence}
    if answer.kind == "choice":
        confidence = confidence_or_jev(answer.kind, answer.probabilities, answer.confidence)
        return {
            "type": "choice",
            "name": name,
            "choice": question.options[answer.choice_index].value,
            "confidence": confidence,
            "probabilities": [{"value": option.value, "probability": p}
                              for option, p in zip(question.options, answer.probabilities)],
        }
    confidence = confidence_or_jev(answer.kind, answer.probabilities, answer.confidence)
    return {
        "type": "score",
        "name": name,
        "score": answer.score,
        "confidence": confidence,
        "probabilities": [{"value": i, "label": json_text(level.label), "probability": p}
                          for i, (level, p) in enumerate(zip(question.levels, answer.probabilities))],
    }


def render_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens or 0,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens, "cache_write_tokens": usage.cache_write_tokens},
        "output_tokens": usage.output_tokens or 0,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


# How OpenAI names the neutral fields (translators.errors.Where) and a question's parts.
FIELDS: dict[str, Loc] = {"body": ("request_body",), "images": ("input",)}
QUESTION_PARTS = {"options": "choices"}


def locate(where: Where) -> Loc:
    """A neutral location in OpenAI's terms: ``questions[2].choices``, ``model``, ``request_body``."""
    if where.question is not None:
        return ("questions", where.question.index, QUESTION_PARTS.get(where.field, where.field))
    return FIELDS.get(where.field, (where.field,))


def render_error(err: DecisionError) -> tuple[int, dict[str, Any]]:
    """(status, OpenAI error envelope) with ``param`` naming the field, e.g. ``questions[2].choices``."""
    loc = locate(err.loc) if isinstance(err.loc, Where) else err.loc
    if loc and loc[0] == "body":
        loc = loc[1:]
    status = 400 if isinstance(err, RequestInvalid) and err.schema else err.status
    return status, {"error": {"message": err.message, "type": err.type, "param": format_param(loc),
                              "code": err.code}}
