"""TypeSafe System One wire schemas (typesafe-sdk 0.7.5 ``_schemas/models.py``, wire-formats.md 1.4-1.5, 2.1).

Requests: unknown top-level fields are kept (``DecisionRequest.extra``); unknown fields inside a question
are refused (a typo such as ``instruction`` must not silently drop the instructions), and noul
``criteria`` takes only ``"true"`` / ``"false"``. Responses: what the gateway renders,
strict enough for the Nimble client (integers for tokens, non-null confidence, mandatory legend).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Discriminator, Field, StrictFloat, StrictInt, StrictStr, Tag, field_validator

from translators.wire_types import Closed, Open, tagged

JSON = Any
Number = StrictInt | StrictFloat

# ----------------------------------------------------------------------------------- request


class NoulCriteria(Closed):
    true: JSON = Field(default=None, alias="true")
    false: JSON = Field(default=None, alias="false")


class NoulQuestion(Closed):
    type: Literal["noul"]
    instructions: JSON = None
    criteria: NoulCriteria | None = None


class ChoiceQuestion(Closed):
    type: Literal["choice"]
    instructions: JSON = None
    criteria: dict[str, JSON]


class ScoreQuestion(Closed):
    type: Literal["score"]
    instructions: JSON = None
    criteria: list[JSON]


class BoxQuestion(Closed):
    type: Literal["box"]
    instructions: JSON


if TYPE_CHECKING:  # what the tagged union (one readable error for a missing or unknown type) validates to
    Question = NoulQuestion | ChoiceQuestion | ScoreQuestion | BoxQuestion
else:
    Question = tagged("type", {"noul": NoulQuestion, "choice": ChoiceQuestion, "score": ScoreQuestion,
                               "box": BoxQuestion})


class PartAsset(Closed):
    """An image sent as a multipart part (typesafe-sdk): ``{"type":"image","part":"asset-0"}``."""

    type: Literal["image"] = "image"
    part: StrictStr
    format: Literal["png", "jpg", "jpeg", "webp", "gif"] | None = None
    data_base64: StrictStr | None = None  # ignored when ``part`` is given


class InlineAsset(Closed):
    """An image inline in the JSON: ``{"type":"image","format":"png","data_base64":"..."}``."""

    type: Literal["image"] = "image"
    format: Literal["png", "jpg", "jpeg", "webp", "gif"]
    data_base64: StrictStr


def _asset_kind(value: Any) -> str:
    return "~part" if isinstance(value, dict) and "part" in value else "~inline"


Asset = Annotated[Annotated[PartAsset, Tag("~part")] | Annotated[InlineAsset, Tag("~inline")],
                  Discriminator(_asset_kind)]


class SystemOneRequest(Open):
    state: JSON
    model: StrictStr | None = None
    questions: dict[str, Question]
    assets: dict[str, Asset] | None = None

    @field_validator("state")
    @classmethod
    def _state(cls, state: JSON) -> JSON:
        if not isinstance(state, (str, dict, list)):
            raise ValueError("must be a string, an object or an array")
        return state


# ----------------------------------------------------------------------------------- response


class Box(Open):
    top: Number
    bottom: Number
    left: Number
    right: Number


class NoulAnswer(Open):
    type: Literal["noul"]
    noul: Number


class ChoiceAnswer(Open):
    type: Literal["choice"]
    choice: StrictStr
    confidence: Number
    probabilities: dict[str, Number]


class ScoreAnswer(Open):
    type: Literal["score"]
    score: Number
    confidence: Number
    legend: dict[str, JSON]
    probabilities: dict[str, Number]


class BoxAnswer(Open):
    type: Literal["box"]
    box: Box
    confidence: Number | None


Answer = Annotated[NoulAnswer | ChoiceAnswer | ScoreAnswer | BoxAnswer, Field(discriminator="type")]


class InputTokensDetails(Open):
    cached_tokens: StrictInt


class Usage(Open):
    input_tokens: StrictInt | None = None
    output_tokens: StrictInt | None = None
    input_tokens_details: InputTokensDetails | None = None


class SystemOneResponse(Open):
    model: StrictStr
    answers: dict[str, Answer]
    usage: Usage
    refusals: list[StrictStr] | None = None
