"""IR -> System One upstream body, and a System One upstream's answer -> IR (502 on anything unusable)."""

from __future__ import annotations

from typing import Any

from translators.content import json_text, parts_text
from translators.errors import Unsupported
from translators.images import base64_text
from translators.ir import Answer, DecisionRequest, DecisionResult, Level, Question
from translators.openai_upstream import read_box
from translators.upstream_values import (
    bad,
    describe_question,
    model_name,
    open_answer,
    optional_number,
    probability,
    usage,
    yes_probability,
)

S1_TYPES = {"yes_no": "noul", "choice": "choice", "score": "score", "box": "box"}
ANSWER_FIELDS = {"type", "noul", "choice", "score", "confidence", "probabilities", "legend", "box",
                 "x_label_mass", "label_mass"}


# ------------------------------------------------------------------------------------- request


def render_request(req: DecisionRequest, model: str) -> dict[str, Any]:
    """``{"model", "state", "questions"}`` plus JSON ``assets`` (``data_base64``) when there are images."""
    body: dict[str, Any] = {
        "model": model,
        "state": req.input.state,
        "questions": {q.id: _question(req, q) for q in req.questions},
    }
    if req.input.images:
        body["assets"] = {}
        for ref, image in req.input.images.items():
            if image.data is None:
                raise Unsupported(f"System One upstreams take inline images only; image {ref} is a URL "
                                  f"({image.url}).", code="unsupported_image")
            body["assets"][ref] = {"type": "image", "format": image.format, "data_base64": base64_text(image)}
    return body


def level_text(level: Level) -> Any:
    """A level as System One criteria: the JSON label as is, or ``"label: description"``."""
    if level.description is None:
        return level.label
    return f"{json_text(level.label)}: {level.description}"


def instructions_text(instructions: Any) -> Any:
    """OpenAI instructions (a string or a list of parts) as System One text."""
    if isinstance(instructions, list):
        return parts_text(instructions)
    return instructions


def _question(req: DecisionRequest, question: Question) -> dict[str, Any]:
    out: dict[str, Any] = {"type": S1_TYPES[question.kind]}
    origin_s1 = req.wire == "systemone"
    instructions = question.instructions if origin_s1 else instructions_text(question.instructions)
    if instructions is not None:
        out["instructions"] = instructions
    if question.kind == "yes_no" and question.criteria is not None:
        out["criteria"] = question.criteria
    elif question.kind == "choice":
        out["criteria"] = {option.key: option.description for option in question.options}
    elif question.kind == "score":
        out["criteria"] = [level_text(level) for level in question.levels]
    for key, value in question.extra.items():
        out.setdefault(key, value)
    return out


# ------------------------------------------------------------------------------------- response


def parse_response(body: Any, req: DecisionRequest) -> DecisionResult:
    """A System One upstream answer -> IR. Answers match questions by key; a missing key is a 502
    unless the top-level ``refusals`` list names it (then it is a refusal)."""
    if not isinstance(body, dict):
        raise bad("The upstream response is not a JSON object.")
    answers = body.get("answers")
    if not isinstance(answers, dict):
        raise bad("The upstream response has no answers object.")
    refusals = body.get("refusals")  # this gateway's own System One output lists refusals apart
    refused = {r for r in refusals if isinstance(r, str)} if isinstance(refusals, list) else set()
    out = []
    for question in req.questions:
        if question.id not in answers:
            if question.id in refused:
                out.append(Answer(question.id, "refusal"))
                continue
            raise bad(f"The upstream returned no answer for {describe_question(question.id, question.name)}.")
        out.append(_answer(question, answers[question.id]))
    return DecisionResult(model=model_name(body, req.model), answers=tuple(out), usage=usage(body.get("usage")))


def _answer(question: Question, raw: Any) -> Answer:
    what, extra, refused = open_answer(question, raw, S1_TYPES[question.kind], ANSWER_FIELDS)
    if refused:
        return Answer(question.id, "refusal", extra=extra)
    confidence = optional_number(raw.get("confidence"))
    label_mass = optional_number(raw.get("x_label_mass", raw.get("label_mass")))
    if question.kind == "yes_no":
        return Answer(question.id, "yes_no", yes_probability(raw.get("noul"), what), label_mass=label_mass,
                      extra=extra)
    if question.kind == "box":
        return Answer(question.id, "box", confidence=confidence, box=read_box(raw.get("box"), what), extra=extra)
    keys = ([option.key for option in question.options] if question.kind == "choice"
            else [str(i) for i in range(len(question.levels))])
    found = raw.get("probabilities")
    if isinstance(found, list) and question.kind == "score":
        found = {str(i): p for i, p in enumerate(found)}
    if not isinstance(found, dict):
        raise bad(f"The upstream answer for {what} has no probabilities object.")
    unknown = sorted(set(found) - set(keys))
    if unknown:
        raise bad(f"The upstream probabilities for {what} name unknown options: {', '.join(unknown)}.")
    probabilities = []
    for key in keys:
        if key not in found:
            raise bad(f"The upstream answer for {what} has no probability for {key!r}.")
        probabilities.append(probability(found[key], f"{what}, option {key!r}"))
    return Answer(question.id, question.kind, tuple(probabilities), confidence=confidence, label_mass=label_mass,
                  extra=extra)
