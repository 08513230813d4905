"""System One wire: parse/render for callers (``/v1/systemone``) and for System One upstreams.

``parse_request`` lives in ``systemone_parse``, the upstream pair in ``systemone_upstream``; this
module is the public face the gateway and providers import (see docs/architecture.md).
"""

from __future__ import annotations

from typing import Any

from translators.confidence import confidence_or_jev
from translators.errors import DecisionError, Loc, RequestInvalid, Where
from translators.ir import Answer, DecisionRequest, DecisionResult, Question, Usage
from translators.systemone_parse import parse_request
from translators.systemone_upstream import level_text, parse_response, render_request
from translators.upstream_values import answers_in_order

__all__ = ["parse_request", "render_request", "parse_response", "render_response", "render_error", "locate"]


def render_response(result: DecisionResult, req: DecisionRequest) -> dict[str, Any]:
    """The ``/v1/systemone`` response: answers keyed by question id; refusals listed apart, never made up."""
    answers: dict[str, dict[str, Any]] = {}
    refusals: list[str] = []
    for question, answer in answers_in_order(result, req):
        if answer.kind == "refusal":
            refusals.append(question.id)
        else:
            answers[question.id] = render_answer(question, answer)
    body: dict[str, Any] = {"model": result.model or req.model, "answers": answers,
                            "usage": render_usage(result.usage)}
    if refusals:
        body["refusals"] = refusals
    return body


def render_answer(question: Question, answer: Answer) -> dict[str, Any]:
    out: dict[str, Any]
    if answer.kind == "yes_no":
        out = {"type": "noul", "noul": answer.probability}
    elif answer.kind == "box":
        out = {"type": "box", "box": answer.box, "confidence": answer.confidence}
    elif answer.kind == "choice":
        keys = [option.key for option in question.options]
        confidence = confidence_or_jev(answer.kind, answer.probabilities, answer.confidence)
        out = {"type": "choice", "choice": keys[answer.choice_index], "confidence": confidence,
               "probabilities": dict(zip(keys, answer.probabilities))}
    else:
        confidence = confidence_or_jev(answer.kind, answer.probabilities, answer.confidence)
        out = {"type": "score", "score": answer.score, "confidence": confidence,
               "legend": {str(i): level_text(level) for i, level in enumerate(question.levels)},
               "probabilities": {str(i): p for i, p in enumerate(answer.probabilities)}}
    if answer.label_mass is not None:
        out["x_label_mass"] = answer.label_mass
    for key, value in answer.extra.items():
        out.setdefault(key, value)
    return out


def render_usage(usage: Usage) -> dict[str, Any]:
    return {"input_tokens": usage.input_tokens or 0, "output_tokens": usage.output_tokens or 0,
            "input_tokens_details": {"cached_tokens": usage.cached_tokens}}


# How System One names the neutral fields (translators.errors.Where) and a question's parts.
FIELDS: dict[str, Loc] = {"body": ("body",), "input": ("body", "state"), "images": ("body", "assets")}
QUESTION_PARTS = {"options": "criteria", "levels": "criteria"}


def locate(where: Where) -> Loc:
    """A neutral location in System One's terms: ``("body", "questions", "tone", "criteria")``."""
    if where.question is not None:
        return ("body", "questions", where.question.id, QUESTION_PARTS.get(where.field, where.field))
    return FIELDS.get(where.field, ("body", where.field))


def render_error(err: DecisionError) -> tuple[int, dict[str, Any]]:
    """422 with a FastAPI ``detail`` list for schema errors; otherwise ``{"detail": {message, error_type}}``."""
    if isinstance(err, RequestInvalid) and (err.status == 422 or err.schema):
        detail = [{"loc": list(_loc(e.loc) or ("body",)), "msg": e.message, "type": e.code or "value_error"}
                  for e in [err, *err.errors]]
        return 422, {"detail": detail}
    return err.status, {"detail": {"message": err.message, "error_type": err.code or err.type}}


def _loc(loc: Loc | Where | None) -> Loc | None:
    return locate(loc) if isinstance(loc, Where) else loc
