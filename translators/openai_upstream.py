"""IR -> OpenAI Decisions upstream body, and an OpenAI upstream's answer -> IR (502 on anything unusable)."""

from __future__ import annotations

import math
from typing import Any

from translators.content import SEGMENT_SEPARATOR, json_text, mentions, split_on_refs
from translators.errors import Loc, Unsupported
from translators.images import data_url
from translators.ir import Answer, DecisionRequest, DecisionResult, Image, Question
from translators.upstream_values import (
    bad,
    model_name,
    open_answer,
    optional_number,
    probability,
    usage,
    yes_probability,
)

OPENAI_TYPES = {"yes_no": "predicate", "choice": "choice", "score": "score", "box": "box"}
DEFAULT_INSTRUCTIONS = {
    "yes_no": "Is this true of the input?",
    "choice": "Which choice best fits the input?",
    "score": "Which level best fits the input?",
    "box": "Where is it in the image?",
}
ANSWER_FIELDS = {"type", "name", "probability", "choice", "confidence", "probabilities", "score", "box"}


# ------------------------------------------------------------------------------------- request


def render_request(req: DecisionRequest, model: str) -> dict[str, Any]:
    """The body for an OpenAI Decisions upstream. ``Unsupported`` (400) for what OpenAI cannot ask."""
    for index, question in enumerate(req.questions):
        _check_supported(req, index, question)
    body: dict[str, Any] = {
        "model": model,
        "input": _input(req),
        "questions": [_question(req, q) for q in req.questions],
    }
    for key in ("safety_identifier", "prompt_cache_key", "prompt_cache_options"):
        value = getattr(req, key)
        if value is not None:
            body[key] = value
    return body


def _check_supported(req: DecisionRequest, index: int, question: Question) -> None:
    where = f"question '{question.name or question.id}'"
    loc: Loc
    if question.kind == "box":
        loc = ("questions", index, "type") if req.wire == "openai" else ("body", "questions", question.id)
        raise Unsupported(f"OpenAI Decisions has no box questions; {where} is a box question.", loc=loc,
                          code="unsupported_question")
    if question.kind in ("choice", "score") and question.size < 2:
        field = "choices" if question.kind == "choice" else "levels"
        loc = (("questions", index, field) if req.wire == "openai"
               else ("body", "questions", question.id, question.kind, "criteria"))
        raise Unsupported(f"OpenAI needs at least 2 {field} on every {question.kind} question; {where} has "
                          f"{question.size}.", loc=loc, code="unsupported_question")


def _image_part(image: Image) -> dict[str, Any]:
    part = {"type": "input_image", "image_url": data_url(image)}
    if image.detail:
        part["detail"] = image.detail
    return part


def _text_with_images(text: str, images: dict[str, Image]) -> str | list[dict[str, Any]]:
    """Plain text, or OpenAI parts when the text mentions image refs (text segments and images in order)."""
    pieces = split_on_refs(text, [ref for ref in images if ref in text])
    if not any(kind == "image" for kind, _ in pieces):
        return text
    return [{"type": "input_text", "text": value} if kind == "text" else _image_part(images[value])
            for kind, value in pieces]


def _input(req: DecisionRequest) -> str | list[dict[str, Any]]:
    if req.input.messages is not None:
        return req.input.messages
    text = json_text(req.input.state)
    images = req.input.images
    if not images or req.wire == "openai":  # an OpenAI string input: its images sit in the instructions
        return text
    content = _text_with_images(text, images)
    parts = content if isinstance(content, list) else [{"type": "input_text", "text": content}]
    # Images that neither the state nor any instructions (noul criteria fold into them) mention
    # still reach the model, after the state.
    instructions = [[q.instructions, q.criteria] for q in req.questions]
    for ref, image in images.items():
        if ref not in text and not mentions(instructions, ref):
            parts.append(_image_part(image))
    return [{"role": "user", "content": parts}]


def _instructions(req: DecisionRequest, question: Question) -> str | list[dict[str, Any]]:
    if req.wire == "openai" and question.instructions is not None:
        sent: str | list[dict[str, Any]] = question.instructions  # as the caller sent it: a string or parts
        return sent
    text = "" if question.instructions is None else json_text(question.instructions)
    if question.kind == "yes_no":
        rules = [f"Answer {side} when: {json_text(rule)}"
                 for side, rule in (("true", question.yes), ("false", question.no)) if rule is not None]
        text = SEGMENT_SEPARATOR.join(t for t in [text, *rules] if t.strip())
    if not text.strip():
        return DEFAULT_INSTRUCTIONS[question.kind]
    return _text_with_images(text, req.input.images)


def upstream_name(req: DecisionRequest, question: Question) -> str | None:
    """The ``name`` an OpenAI upstream sees: from an OpenAI caller, the caller's own name (``None``:
    the question goes unnamed, as sent; positions stay the gateway's internal ids); from a System One
    caller, the question's key."""
    return question.name if req.wire == "openai" else question.id


def _question(req: DecisionRequest, question: Question) -> dict[str, Any]:
    out: dict[str, Any] = {"type": OPENAI_TYPES[question.kind]}
    name = upstream_name(req, question)
    if name is not None:
        out["name"] = name
    out["instructions"] = _instructions(req, question)
    if question.kind == "choice":
        out["choices"] = []
        for option in question.options:
            choice: dict[str, Any] = {"value": option.value}
            if option.description is not None:
                choice["description"] = json_text(option.description)
            out["choices"].append(choice)
    elif question.kind == "score":
        out["levels"] = []
        for level in question.levels:
            entry: dict[str, Any] = {"label": json_text(level.label)}
            if level.description is not None:
                entry["description"] = level.description
            out["levels"].append(entry)
    return out


# ------------------------------------------------------------------------------------- response


def parse_response(body: Any, req: DecisionRequest) -> DecisionResult:
    """An OpenAI Decisions upstream answer -> IR. Answers match questions by position (unnamed
    questions have nothing else to match on); a name an answer echoes must be its question's."""
    if not isinstance(body, dict):
        raise bad("The upstream response is not a JSON object.")
    answers = body.get("answers")
    if not isinstance(answers, list):
        raise bad("The upstream response has no answers list.")
    if len(answers) != len(req.questions):
        raise bad(f"The upstream returned {len(answers)} answers for {len(req.questions)} questions.")
    for index, (question, raw) in enumerate(zip(req.questions, answers)):
        _check_echoed_name(req, index, question, raw)
    return DecisionResult(
        model=model_name(body, req.model),
        answers=tuple(_answer(q, raw) for q, raw in zip(req.questions, answers)),
        usage=usage(body.get("usage")),
    )


def _check_echoed_name(req: DecisionRequest, index: int, question: Question, raw: Any) -> None:
    """Answers pair with questions by position; an answer that echoes another question's name means
    the upstream reordered them, and pairing by position would hand one question another's answer."""
    sent = upstream_name(req, question)
    echoed = raw.get("name") if isinstance(raw, dict) else None
    if isinstance(sent, str) and isinstance(echoed, str) and echoed != sent:
        raise bad(f"The upstream's answer {index} is named {echoed!r} but question {index} was sent as "
                  f"{sent!r}; answers must come back in question order.")


def _answer(question: Question, raw: Any) -> Answer:
    what, extra, refused = open_answer(question, raw, OPENAI_TYPES[question.kind], ANSWER_FIELDS)
    if refused:
        return Answer(question.id, "refusal", extra=extra)
    confidence = optional_number(raw.get("confidence"))
    if question.kind == "yes_no":
        return Answer(question.id, "yes_no", yes_probability(raw.get("probability"), what), extra=extra)
    if question.kind == "box":
        return Answer(question.id, "box", confidence=confidence, box=read_box(raw.get("box"), what), extra=extra)
    entries = _entries(raw.get("probabilities"), what)
    found: dict[Any, dict[str, Any]]  # answer entries by choice (type, value) or level index
    keys: list[Any]
    if question.kind == "choice":
        found = {(type(e.get("value")), e.get("value")): e for e in entries if isinstance(e.get("value"), (str, bool))}
        if len(found) != len(entries):
            raise bad(f"The upstream probabilities for {what} have missing, repeated or non-text values.")
        wanted = {(type(o.value), o.value) for o in question.options}
        if set(found) - wanted:
            unknown = sorted(str(v) for _, v in set(found) - wanted)
            raise bad(f"The upstream probabilities for {what} name unknown choices: {', '.join(unknown)}.")
        keys = [(type(o.value), o.value) for o in question.options]
    else:
        found = {e.get("value"): e for e in entries if isinstance(e.get("value"), int)
                 and not isinstance(e.get("value"), bool)}
        keys = list(range(len(question.levels)))
        if len(found) != len(entries) or set(found) - set(keys):
            raise bad(f"The upstream probabilities for {what} must be indexed by level 0..{len(keys) - 1}.")
    probabilities = []
    for key in keys:
        label = key[1] if isinstance(key, tuple) else key
        if key not in found:
            raise bad(f"The upstream answer for {what} has no probability for {label!r}.")
        probabilities.append(probability(found[key].get("probability"), f"{what}, option {label!r}"))
    return Answer(question.id, question.kind, tuple(probabilities), confidence=confidence, extra=extra)


def _entries(value: Any, what: str) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
        raise bad(f"The upstream answer for {what} has no probabilities list.")
    return value


def read_box(value: Any, what: str) -> dict[str, Any]:
    """{top, bottom, left, right} as finite numbers."""
    if not isinstance(value, dict):
        raise bad(f"The upstream answer for {what} has no box.")
    box = {}
    for side in ("top", "bottom", "left", "right"):
        number = value.get(side)
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
            raise bad(f"The upstream box for {what} has no finite {side}.")
        box[side] = number
    return box
