"""The SGLang-style ``/v1/decisions`` wire (ours, SGLang's and MAX's): schemas and IR conversion.

Requests are strict (``extra="forbid"``, the rules of SGLang's protocol); responses from an upstream
are read leniently (SGLang omits ``completion_tokens``, MAX adds ``prompt_tokens_details``). Pure: no I/O.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from translators.content import compact_json
from translators.errors import Unsupported, UpstreamError
from translators.ir import Answer, DecisionRequest, DecisionResult, Level, Question, Usage

JSONText = str | dict[str, Any] | list[Any]  # question text, descriptions and levels: a string or JSON


def is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _not_blank(value: Any) -> Any:
    if is_blank(value):
        raise ValueError("must not be blank")
    return value


# --------------------------------------------------------------------------------------------
# Request schema
# --------------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChoiceOption(_Strict):
    name: str
    description: JSONText | None = None


class _QuestionBase(_Strict):
    id: str
    question: JSONText

    @field_validator("id", "question")
    @classmethod
    def _filled(cls, value: Any) -> Any:
        return _not_blank(value)


class ChoiceQuestion(_QuestionBase):
    type: Literal["choice"]
    options: list[ChoiceOption] = Field(min_length=2, max_length=26)

    @model_validator(mode="after")
    def _distinct_names(self) -> ChoiceQuestion:
        problem = option_name_problem([o.name for o in self.options])
        if problem:
            raise ValueError(f"question '{self.id}': {problem}")
        return self


class ScoreQuestion(_QuestionBase):
    type: Literal["score"]
    levels: list[JSONText] = Field(min_length=2, max_length=10)

    @field_validator("levels")
    @classmethod
    def _levels_filled(cls, levels: list[Any]) -> list[Any]:
        for i, level in enumerate(levels):
            if is_blank(level):
                raise ValueError(f"level {i} must not be blank")
        return levels


class YesNoQuestion(_QuestionBase):
    type: Literal["yes_no"]
    yes: JSONText | None = None
    no: JSONText | None = None


WireQuestion = Annotated[ChoiceQuestion | ScoreQuestion | YesNoQuestion, Field(discriminator="type")]


class DecisionsRequest(_Strict):
    input: JSONText
    images: list[Any] | None = None
    questions: list[WireQuestion] = Field(min_length=1)
    temperature: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    chat_template_kwargs: dict[str, Any] | None = None
    prompt_format_version: int | None = None
    return_prompt_token_ids: bool = False
    model: str | None = None

    @field_validator("input")
    @classmethod
    def _input_filled(cls, value: Any) -> Any:
        return _not_blank(value)

    @model_validator(mode="after")
    def _distinct_ids(self) -> DecisionsRequest:
        seen: set[str] = set()
        for q in self.questions:
            if q.id in seen:
                raise ValueError(f"question id '{q.id}' repeats another question")
            seen.add(q.id)
        return self


def option_name_problem(names: list[str]) -> str | None:
    """SGLang's option-name rules: nonempty, no control or line-break characters, distinct after strip+casefold."""
    seen: set[str] = set()
    for name in names:
        if not name.strip():
            return "option names must be nonempty"
        if any(ch in "\n\r\x85\u2028\u2029" or ord(ch) < 32 or ord(ch) == 127 for ch in name):
            return f"option name '{name}' must not contain control or line break characters"
        key = name.strip().casefold()
        if key in seen:
            return f"option name '{name}' repeats another option"
        seen.add(key)
    return None


def format_validation_error(err: ValidationError) -> str:
    """One readable line per problem: ``questions[0].options: List should have at least 2 items``."""
    lines = []
    for e in err.errors(include_url=False):
        loc = [p for p in e["loc"] if p not in ("choice", "score", "yes_no")]
        where = ""
        for part in loc:
            where += f"[{part}]" if isinstance(part, int) else ("." if where else "") + str(part)
        msg = e["msg"].removeprefix("Value error, ")
        lines.append(f"{where}: {msg}" if where else msg)
    return "; ".join(lines)


# --------------------------------------------------------------------------------------------
# Response schema
# --------------------------------------------------------------------------------------------


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class DecisionAnswer(_Lenient):
    type: Literal["choice", "score", "yes_no"]
    probabilities: dict[str, float]
    label_mass: float | None = None
    choice: str | None = None
    score: float | None = None
    prompt_token_ids: list[int] | None = None
    label_token_ids: list[int] | None = None


class PromptTokensDetails(_Lenient):
    cached_tokens: int = 0


class DecisionsUsage(_Lenient):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    prompt_tokens_details: PromptTokensDetails | None = None


class DecisionsResponse(_Lenient):
    object: Literal["decisions"] = "decisions"
    model: str | None = None
    prompt_format_version: int | None = None
    answers: dict[str, DecisionAnswer]
    usage: DecisionsUsage = Field(default_factory=DecisionsUsage)


# --------------------------------------------------------------------------------------------
# IR -> wire (a request to an SGLang-style upstream)
# --------------------------------------------------------------------------------------------


def wire_question_id(question: Question, position: int) -> str:
    """The id a question travels under: its own, or its position when blank (System One allows blank ids)."""
    return question.id if question.id.strip() else f"question-{position}"


def _question_text(q: Question) -> JSONText:
    text = q.instructions
    if isinstance(text, list) and text and all(isinstance(p, dict) and "type" in p for p in text):
        parts = []
        for part in text:
            if part.get("type") not in ("input_text", "text"):
                raise Unsupported(f"question '{q.id}': this provider reads text only, not '{part.get('type')}' parts",
                                  loc=("questions", q.id, "instructions"))
            parts.append(str(part.get("text", "")))
        text = "\n\n".join(parts)
    if is_blank(text):
        raise Unsupported(f"question '{q.id}': the /v1/decisions wire needs question text (instructions), "
                          "and this question has none", loc=("questions", q.id, "instructions"))
    return _json_text(text)


def _json_text(value: Any) -> JSONText:
    """A description as the wire takes it: strings, objects and arrays as they are, other JSON as compact text."""
    return value if isinstance(value, (str, dict, list)) else compact_json(value)


def _level_text(level: Level) -> str:
    label = compact_json(level.label)
    return f"{label}: {level.description}" if level.description else label


def _render_question(q: Question, position: int) -> dict[str, Any]:
    body: dict[str, Any] = {"id": wire_question_id(q, position), "type": q.kind, "question": _question_text(q)}
    if q.kind == "yes_no":
        if q.yes is not None:
            body["yes"] = _json_text(q.yes)
        if q.no is not None:
            body["no"] = _json_text(q.no)
    elif q.kind == "choice":
        body["options"] = [{"name": o.key, **({"description": _json_text(o.description)}
                                              if o.description is not None else {})} for o in q.options]
    elif q.kind == "score":
        body["levels"] = [_level_text(level) for level in q.levels]
    else:
        raise Unsupported(f"question '{q.id}': {q.kind} questions are not supported by a /v1/decisions upstream",
                          loc=("questions", q.id, "type"))
    return body


def render_request(req: DecisionRequest, model: str, prompt_format_version: int | None) -> dict[str, Any]:
    """The ``/v1/decisions`` body for ``req``; ``prompt_format_version`` pins the upstream's wording."""
    if req.input.images:
        raise Unsupported("this /v1/decisions upstream reads text only, and the request has images", loc=("input",))
    state = req.input.state
    body: dict[str, Any] = {
        "model": model,
        "input": _json_text(state),
        "questions": [_render_question(q, i) for i, q in enumerate(req.questions)],
    }
    if prompt_format_version is not None:
        body["prompt_format_version"] = prompt_format_version
    return body


# --------------------------------------------------------------------------------------------
# wire -> IR (an upstream's response)
# --------------------------------------------------------------------------------------------


def _bad(message: str) -> UpstreamError:
    return UpstreamError(502, f"the /v1/decisions upstream answered {message}")


def _probability(probs: dict[str, float], key: str, qid: str) -> float:
    if key not in probs:
        raise _bad(f"no probability for '{key}' in question '{qid}'")
    value = probs[key]
    if not math.isfinite(value) or value < 0:
        raise _bad(f"a probability of {value} for '{key}' in question '{qid}'")
    return float(value)


def _answer(q: Question, wire: DecisionAnswer) -> Answer:
    if wire.type != q.kind:
        raise _bad(f"a {wire.type} answer to the {q.kind} question '{q.id}'")
    if q.kind == "yes_no":
        keys = ["yes", "no"]
    elif q.kind == "choice":
        keys = [o.key for o in q.options]
    else:
        keys = [str(i) for i in range(len(q.levels))]
    probs = tuple(_probability(wire.probabilities, k, q.id) for k in keys)
    mass = wire.label_mass
    if mass is not None and not math.isfinite(mass):
        raise _bad(f"a non-finite label_mass in question '{q.id}'")
    extra = {}
    if wire.prompt_token_ids is not None:
        extra = {"prompt_token_ids": wire.prompt_token_ids, "label_token_ids": wire.label_token_ids}
    return Answer(question_id=q.id, kind=q.kind, probabilities=probs, label_mass=mass, extra=extra)


def parse_response(body: dict[str, Any], req: DecisionRequest) -> DecisionResult:
    """An upstream's ``/v1/decisions`` response as the IR; anything unusable is an ``UpstreamError`` 502."""
    try:
        parsed = DecisionsResponse.model_validate(body)
    except ValidationError as err:
        raise _bad(f"a body that is not a decisions response ({format_validation_error(err)})") from None
    answers = []
    for i, q in enumerate(req.questions):
        wire = parsed.answers.get(wire_question_id(q, i))
        if wire is None:
            raise _bad(f"no answer for question '{q.id}'")
        answers.append(_answer(q, wire))
    usage = parsed.usage
    cached = usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else 0
    return DecisionResult(
        model=parsed.model or req.model,
        answers=tuple(answers),
        usage=Usage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens, cached_tokens=cached),
        extra={"prompt_format_version": parsed.prompt_format_version},
    )
