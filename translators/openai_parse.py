"""OpenAI Decisions request -> IR, with every check done before any upstream call (400, OpenAI locs)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from translators.content import messages_state
from translators.errors import Loc, RequestInvalid, format_param
from translators.images import image_from_url
from translators.ir import DecisionInput, DecisionRequest, Image, Level, Option, Question, option_key
from translators.limits import DEFAULT_LIMITS, RequestLimits, count_problem
from translators.openai_wire import DecisionCreateRequest
from translators.wire_errors import describe
from translators.wire_types import folded, has_control_character

KINDS = {"predicate": "yes_no", "choice": "choice", "score": "score", "box": "box"}
ACCEPTED_EXTRA = ("metadata", "user")  # accepted at the top level, kept in DecisionRequest.extra
# What an input_json part may hold (openai ``DecisionInputJSON``): container levels, values, compact UTF-8 bytes.
JSON_MAX_DEPTH, JSON_MAX_VALUES, JSON_MAX_BYTES = 32, 10_000, 256 * 1024


def invalid(loc: Loc, message: str, code: str) -> RequestInvalid:
    return RequestInvalid(message, loc=loc or None, status=400, code=code)


def parse_request(body: Any, limits: RequestLimits | None = None) -> DecisionRequest:
    """Validate an OpenAI Decisions body and build the IR. Raises ``RequestInvalid`` (400) naming the field."""
    limits = limits or DEFAULT_LIMITS
    if not isinstance(body, dict):
        raise invalid((), "The request body must be a JSON object.", "object_type")
    try:
        DecisionCreateRequest.model_validate(body)
    except ValidationError as exc:
        loc, message, code = describe(exc, format_param)[0]
        raise invalid(loc, message, code) from None
    _check_model(body["model"])
    _check_input(body["input"])
    _check_questions(body["questions"], limits)
    return _build(body)


def _check_model(model: str) -> None:
    if not model.strip():
        raise invalid(("model",), "model must not be blank.", "blank")


def _check_input(value: str | list[Any]) -> None:
    if isinstance(value, str):
        if not value.strip():
            raise invalid(("input",), "input must not be empty or blank.", "blank")
        return
    if not value:
        raise invalid(("input",), "input must contain at least one message.", "too_short")
    substance = False
    for i, message in enumerate(value):
        content = message["content"]
        if isinstance(content, list) and not content:
            raise invalid(("input", i, "content"), f"input[{i}].content must not be an empty list.", "too_short")
        parts = [content] if isinstance(content, str) else content
        for j, part in enumerate(parts):
            if isinstance(part, str):
                substance = substance or bool(part.strip())
            else:
                substance = substance or _has_substance(part)
                if part["type"] == "input_json":
                    _check_json(("input", i, "content", j, "data"), part["data"])
    if not substance:
        raise invalid(("input",), "input must contain some text, JSON or an image; every message is blank.", "blank")


def _has_substance(part: dict[str, Any]) -> bool:
    """A part that says something: non-blank text, an image, or JSON."""
    return part["type"] != "input_text" or bool(part["text"].strip())


def _check_json(loc: Loc, data: Any) -> None:
    """OpenAI's bounds on input_json data: 32 container levels, 10,000 values, 256 KiB of compact UTF-8 JSON."""
    param = format_param(loc)
    values, deepest = 0, 0
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        values += 1
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth)
            if deepest > JSON_MAX_DEPTH:
                raise invalid(loc, f"{param} nests containers more than {JSON_MAX_DEPTH} levels deep; input_json "
                                   f"data takes at most {JSON_MAX_DEPTH}.", "too_deep")
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
        if values > JSON_MAX_VALUES:
            raise invalid(loc, f"{param} holds more than {JSON_MAX_VALUES:,} values; input_json data takes at most "
                               f"{JSON_MAX_VALUES:,}.", "too_long")
    size = len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > JSON_MAX_BYTES:
        raise invalid(loc, f"{param} is {size:,} bytes of compact JSON; input_json data takes at most 256 KiB "
                           f"({JSON_MAX_BYTES:,} bytes).", "too_long")


def _check_questions(questions: list[dict[str, Any]], limits: RequestLimits) -> None:
    problem = count_problem("questions", len(questions), limits.min_questions, limits.max_questions)
    if problem:
        raise invalid(("questions",), problem, "count")
    low_choices, high_choices = limits.choices("openai")
    low_levels, high_levels = limits.levels("openai")
    for i, question in enumerate(questions):
        where = f"questions[{i}]"
        name = question.get("name")
        if name is not None and not name.strip():
            raise invalid(("questions", i, "name"), f"{where}.name must not be blank when given.", "blank")
        instructions = question["instructions"]
        if isinstance(instructions, str) and not instructions.strip():
            raise invalid(("questions", i, "instructions"), f"{where}.instructions must not be blank.", "blank")
        if isinstance(instructions, list) and not instructions:
            raise invalid(("questions", i, "instructions"), f"{where}.instructions must not be an empty list.",
                          "too_short")
        if isinstance(instructions, list):
            if not any(_has_substance(part) for part in instructions):
                raise invalid(("questions", i, "instructions"), f"{where}.instructions must not be blank; every "
                                                                 "part is blank text.", "blank")
            for j, part in enumerate(instructions):
                if part["type"] == "input_json":
                    _check_json(("questions", i, "instructions", j, "data"), part["data"])
        if question["type"] == "choice":
            problem = count_problem(f"{where}.choices", len(question["choices"]), low_choices, high_choices)
            if problem:
                raise invalid(("questions", i, "choices"), problem, "count")
            _check_unique_choices(i, question["choices"])
        elif question["type"] == "score":
            problem = count_problem(f"{where}.levels", len(question["levels"]), low_levels, high_levels)
            if problem:
                raise invalid(("questions", i, "levels"), problem, "count")
            for j, level in enumerate(question["levels"]):
                if not level["label"].strip():
                    raise invalid(("questions", i, "levels", j, "label"),
                                  f"{where}.levels[{j}].label must not be blank; every level needs a label.", "blank")


def _check_unique_choices(i: int, choices: list[dict[str, Any]]) -> None:
    seen: dict[str, tuple[int, Any]] = {}
    seen_folded: dict[str, tuple[int, Any]] = {}
    for j, choice in enumerate(choices):
        value = choice["value"]
        key = option_key(value)
        loc = ("questions", i, "choices", j, "value")
        if not key.strip():
            raise invalid(loc, f"questions[{i}].choices[{j}].value must not be blank.", "blank")
        if has_control_character(key):
            raise invalid(loc, f"questions[{i}].choices[{j}].value {value!r} must not contain control or line break "
                               "characters.", "control_character")
        if key in seen:
            first, earlier = seen[key]
            if type(earlier) is not type(value):
                raise invalid(loc, f"questions[{i}].choices[{j}].value {value!r} shares its text with "
                                   f"choices[{first}] ({earlier!r}); a boolean and a string with the same text "
                                   "cannot both be choices.", "duplicate")
            raise invalid(loc, f"questions[{i}].choices[{j}].value {value!r} repeats choices[{first}]; "
                               "choice values must be unique.", "duplicate")
        if folded(key) in seen_folded:
            first, earlier = seen_folded[folded(key)]
            raise invalid(loc, f"questions[{i}].choices[{j}].value {value!r} repeats choices[{first}] ({earlier!r}) "
                               "after trimming and case folding; choice values must be distinct.", "duplicate")
        seen[key] = (j, value)
        seen_folded[folded(key)] = (j, value)


def question_ids(questions: list[dict[str, Any]]) -> list[str]:
    """The names when every question is named and names are unique, else "0", "1", ... (LiteLLM's rule)."""
    names = [q.get("name") for q in questions]
    if all(isinstance(n, str) for n in names) and len(set(names)) == len(names):
        return names  # type: ignore[return-value]
    return [str(i) for i in range(len(questions))]


def _collect_images(parts: Any, images: dict[str, Image]) -> None:
    if not isinstance(parts, list):
        return
    for part in parts:
        if isinstance(part, dict) and part.get("type") == "input_image":
            image = image_from_url(part["image_url"], part.get("detail"))
            images.setdefault(image.ref, image)


def _build(body: dict[str, Any]) -> DecisionRequest:
    images: dict[str, Image] = {}
    raw_input = body["input"]
    if not isinstance(raw_input, str):
        for message in raw_input:
            _collect_images(message["content"], images)
    questions = []
    for qid, raw in zip(question_ids(body["questions"]), body["questions"]):
        _collect_images(raw["instructions"], images)
        questions.append(Question(
            id=qid,
            kind=KINDS[raw["type"]],  # type: ignore[arg-type]
            instructions=raw["instructions"],
            options=tuple(Option(c["value"], c.get("description")) for c in raw.get("choices", ())),
            levels=tuple(Level(lv["label"], lv.get("description")) for lv in raw.get("levels", ())),
            name=raw.get("name"),
        ))
    if isinstance(raw_input, str):
        decision_input = DecisionInput(state=raw_input, images=images)
    else:
        decision_input = DecisionInput(state=messages_state(raw_input), messages=raw_input, images=images)
    return DecisionRequest(
        model=body["model"],
        wire="openai",
        input=decision_input,
        questions=tuple(questions),
        safety_identifier=body.get("safety_identifier"),
        prompt_cache_key=body.get("prompt_cache_key"),
        prompt_cache_options=body.get("prompt_cache_options"),
        extra={k: body[k] for k in ACCEPTED_EXTRA if k in body},
    )
