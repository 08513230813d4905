"""OpenAI Decisions wire schemas (openai 3.51/3.57 ``decision_create_params`` and ``decision``).

Requests: unknown fields are refused everywhere except the accepted top-level ``model``,
``metadata``, ``user``. Responses: the shape the gateway renders (all usage counts integers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import StrictBool, StrictFloat, StrictInt, StrictStr, field_validator

from translators.images import is_http_url, parse_data_url
from translators.wire_types import Closed, Open, by_kind, tagged

JsonObject = dict[str, Any]
Number = StrictInt | StrictFloat

# The unions below are built by ``tagged`` / ``by_kind`` for one readable error each; a type checker
# sees what they validate to (the ``TYPE_CHECKING`` branches), the same members in plain union form.
if TYPE_CHECKING:
    ChoiceValue = str | bool
    JsonData = JsonObject | list[JsonObject]
else:
    ChoiceValue = by_kind("a string or a boolean", str=StrictStr, bool=StrictBool)
    JsonData = by_kind("an object or a list of objects", object=JsonObject, list=list[JsonObject])

# ----------------------------------------------------------------------------------- request


class CacheBreakpoint(Closed):
    mode: Literal["explicit"]


class QuestionTextPart(Closed):
    """An ``input_text`` part of question instructions (no cache breakpoint there)."""

    type: Literal["input_text"]
    text: StrictStr


class InputTextPart(QuestionTextPart):
    prompt_cache_breakpoint: CacheBreakpoint | None = None


class QuestionImagePart(Closed):
    """An ``input_image`` part of question instructions (no cache breakpoint there)."""

    type: Literal["input_image"]
    image_url: StrictStr
    detail: Literal["low", "high", "auto", "original"] | None = None

    @field_validator("image_url")
    @classmethod
    def _image_url(cls, url: str) -> str:
        try:
            parsed = parse_data_url(url)
        except ValueError:
            raise ValueError("must carry valid base64 image data after 'base64,'") from None
        if parsed is not None and not parsed[1]:
            raise ValueError("must carry image data after 'base64,'; it is empty")
        if parsed is not None or is_http_url(url):
            return url
        raise ValueError("must be a data:image/...;base64, URL or an http(s) URL")


class InputImagePart(QuestionImagePart):
    prompt_cache_breakpoint: CacheBreakpoint | None = None


class InputJsonPart(Closed):
    type: Literal["input_json"]
    data: JsonData


if TYPE_CHECKING:
    UserPart = InputTextPart | InputImagePart | InputJsonPart
    InstructionPart = QuestionTextPart | QuestionImagePart | InputJsonPart
    UserContent = str | list[UserPart]
    InstructionContent = str | list[InputTextPart]
else:
    UserPart = tagged("type", {"input_text": InputTextPart, "input_image": InputImagePart,
                               "input_json": InputJsonPart})
    InstructionPart = tagged("type", {"input_text": QuestionTextPart, "input_image": QuestionImagePart,
                                      "input_json": InputJsonPart})
    UserContent = by_kind("a string or a list of content parts", str=StrictStr, list=list[UserPart])
    InstructionContent = by_kind("a string or a list of input_text parts", str=StrictStr, list=list[InputTextPart])


class UserMessage(Closed):
    role: Literal["user"]
    content: UserContent
    type: Literal["message"] | None = None


class InstructionMessage(Closed):
    """A developer or system message: text only."""

    role: Literal["developer", "system"]
    content: InstructionContent
    type: Literal["message"] | None = None


if TYPE_CHECKING:
    InputItem = UserMessage | InstructionMessage
    Instructions = str | list[InstructionPart]
    Input = str | list[InputItem]
else:
    InputItem = tagged("role", {"user": UserMessage, "developer": InstructionMessage, "system": InstructionMessage})
    Instructions = by_kind("a string or a list of content parts", str=StrictStr, list=list[InstructionPart])
    Input = by_kind("a string or a list of input messages", str=StrictStr, list=list[InputItem])


class ChoiceOption(Closed):
    value: ChoiceValue
    description: StrictStr | None = None


class ScoreLevel(Closed):
    label: StrictStr
    description: StrictStr | None = None


class PredicateQuestion(Closed):
    type: Literal["predicate"]
    instructions: Instructions
    name: StrictStr | None = None


class ChoiceQuestion(Closed):
    type: Literal["choice"]
    instructions: Instructions
    choices: list[ChoiceOption]
    name: StrictStr | None = None


class ScoreQuestion(Closed):
    type: Literal["score"]
    instructions: Instructions
    levels: list[ScoreLevel]
    name: StrictStr | None = None


class BoxQuestion(Closed):
    type: Literal["box"]
    instructions: Instructions
    name: StrictStr | None = None


if TYPE_CHECKING:
    Question = PredicateQuestion | ChoiceQuestion | ScoreQuestion | BoxQuestion
else:
    Question = tagged("type", {"predicate": PredicateQuestion, "choice": ChoiceQuestion, "score": ScoreQuestion,
                               "box": BoxQuestion})


class PromptCacheOptions(Closed):
    mode: Literal["implicit", "explicit"] | None = None
    ttl: Literal["30m"] | None = None


class DecisionCreateRequest(Closed):
    model: StrictStr
    input: Input
    questions: list[Question]
    safety_identifier: StrictStr | None = None
    prompt_cache_key: StrictStr | None = None
    prompt_cache_options: PromptCacheOptions | None = None
    metadata: JsonObject | None = None
    user: StrictStr | None = None


# ----------------------------------------------------------------------------------- response


class ChoiceProbability(Open):
    value: ChoiceValue
    probability: Number


class ScoreProbability(Open):
    value: StrictInt
    label: StrictStr
    probability: Number


class Box(Open):
    top: Number
    bottom: Number
    left: Number
    right: Number


class PredicateAnswer(Open):
    type: Literal["predicate"]
    name: StrictStr | None = None
    probability: Number


class ChoiceAnswer(Open):
    type: Literal["choice"]
    name: StrictStr | None = None
    choice: ChoiceValue
    confidence: Number
    probabilities: list[ChoiceProbability]


class ScoreAnswer(Open):
    type: Literal["score"]
    name: StrictStr | None = None
    score: Number
    confidence: Number
    probabilities: list[ScoreProbability]


class RefusalAnswer(Open):
    type: Literal["refusal"]
    name: StrictStr | None = None


class BoxAnswer(Open):
    type: Literal["box"]
    name: StrictStr | None = None
    box: Box
    confidence: Number | None = None


if TYPE_CHECKING:
    Answer = PredicateAnswer | ChoiceAnswer | ScoreAnswer | RefusalAnswer | BoxAnswer
else:
    Answer = tagged("type", {"predicate": PredicateAnswer, "choice": ChoiceAnswer, "score": ScoreAnswer,
                             "refusal": RefusalAnswer, "box": BoxAnswer})


class InputTokensDetails(Open):
    cached_tokens: StrictInt
    cache_write_tokens: StrictInt


class OutputTokensDetails(Open):
    reasoning_tokens: StrictInt


class Usage(Open):
    input_tokens: StrictInt
    input_tokens_details: InputTokensDetails
    output_tokens: StrictInt
    output_tokens_details: OutputTokensDetails
    total_tokens: StrictInt


class DecisionResponse(Open):
    model: StrictStr
    answers: list[Answer]
    usage: Usage
