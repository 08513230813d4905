"""OpenAI Decisions request -> IR, with every check done before any upstream call (400, OpenAI locs)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from translators.content import messages_state
from translators.errors import RequestInvalid, format_param
from translators.images import image_from_url
from translators.ir import DecisionInput, DecisionRequest, Image, Level, Option, Question, option_key
from translators.limits import DEFAULT_LIMITS, RequestLimits, count_problem
from translators.openai_wire import DecisionCreateRequest
from translators.wire_errors import describe

KINDS = {"predicate": "yes_no", "choice": "choice", "score": "score", "box": "box"}
ACCEPTED_EXTRA = ("metadata", "user")  # accepted at the top level, kept in DecisionRequest.extra


def invalid(loc: tuple, message: str, code: str) -> RequestInvalid:
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


def _check_input(value: str | list) -> None:
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
        for part in parts:
            if isinstance(part, str):
                substance = substance or bool(part.strip())
            elif part["type"] == "input_text":
                substance = substance or bool(part["text"].strip())
            else:
                substance = True
    if not substance:
        raise invalid(("input",), "input must contain some text, JSON or an image; every message is blank.", "blank")


def _check_questions(questions: list[dict], limits: RequestLimits) -> None:
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
        if question["type"] == "choice":
            problem = count_problem(f"{where}.choices", len(question["choices"]), low_choices, high_choices)
            if problem:
                raise invalid(("questions", i, "choices"), problem, "count")
            _check_unique_choices(i, question["choices"])
        elif question["type"] == "score":
            problem = count_problem(f"{where}.levels", len(question["levels"]), low_levels, high_levels)
            if problem:
                raise invalid(("questions", i, "levels"), problem, "count")


def _check_unique_choices(i: int, choices: list[dict]) -> None:
    seen: dict[str, tuple[int, Any]] = {}
    for j, choice in enumerate(choices):
        value = choice["value"]
        key = option_key(value)
        loc = ("questions", i, "choices", j, "value")
        if not key.strip():
            raise invalid(loc, f"questions[{i}].choices[{j}].value must not be blank.", "blank")
        if key in seen:
            first, earlier = seen[key]
            if type(earlier) is not type(value):
                raise invalid(loc, f"questions[{i}].choices[{j}].value {value!r} shares its text with "
                                   f"choices[{first}] ({earlier!r}); a boolean and a string with the same text "
                                   "cannot both be choices.", "duplicate")
            raise invalid(loc, f"questions[{i}].choices[{j}].value {value!r} repeats choices[{first}]; "
                               "choice values must be unique.", "duplicate")
        seen[key] = (j, value)


def question_ids(questions: list[dict]) -> list[str]:
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


def _build(body: dict) -> DecisionRequest:
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
