"""The intermediate representation (IR): one typed model of a decision request and its result.

Every wire format converts to and from these types and never to another wire directly.
Nothing here does I/O. The IR keeps enough of what the caller sent (``DecisionInput.messages``,
``DecisionRequest.extra``) that a request going back out on the caller's own
wire loses nothing, while the typed fields are what a translation to the other wire reads.

Question kinds use the System One / SGLang vocabulary of the backend:

====== ================= =============== ==============
kind   OpenAI Decisions  System One      SGLang wire
====== ================= =============== ==============
yes_no predicate         noul            yes_no
choice choice            choice          choice
score  score             score           score
box    box               box             (none)
====== ================= =============== ==============
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["yes_no", "choice", "score", "box"]
AnswerKind = Literal["yes_no", "choice", "score", "box", "refusal"]
Wire = Literal["openai", "systemone"]

JSON = Any  # str | int | float | bool | None | list | dict


# --------------------------------------------------------------------------------------------
# Request
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Image:
    """One image, inline (``data`` + ``media_type``) or by public URL (``url``).

    ``ref`` is the string that stands for the image inside the System One ``state`` (the asset key,
    e.g. ``<image:5713...>`` from typesafe-sdk, or ``image-<sha256[:32]>`` for an image that came
    from an OpenAI ``input_image`` part).
    """

    ref: str
    media_type: str = "image/png"  # image/png, image/jpeg, image/webp, ...
    data: bytes | None = None
    url: str | None = None  # a public http(s) URL when the image is not inline
    detail: str | None = None  # OpenAI detail: low | high | auto | original

    @property
    def format(self) -> str:
        """System One asset format: png | jpeg | webp | gif."""
        return self.media_type.split("/", 1)[-1].lower()


@dataclass(frozen=True)
class DecisionInput:
    """What the questions are about.

    ``state`` is the System One view (any JSON; a string for OpenAI text input, with image refs
    written in as their own ``"\\n\\n"``-separated segments). ``messages`` holds the OpenAI input
    items exactly as received when the caller used the OpenAI wire with a list (``None``
    otherwise), so an OpenAI upstream receives them unchanged. ``images`` maps each ref to its
    image, in order of appearance.
    """

    state: JSON
    messages: list[dict[str, Any]] | None = None
    images: dict[str, Image] = field(default_factory=dict)


@dataclass(frozen=True)
class Option:
    """A choice option. ``value`` is typed (OpenAI allows booleans); ``key`` is its System One text."""

    value: str | bool
    description: JSON = None  # str, JSON, or None when undescribed

    @property
    def key(self) -> str:
        return option_key(self.value)


@dataclass(frozen=True)
class Level:
    """A score level. System One levels are any JSON (``label``); OpenAI levels are a label + description."""

    label: JSON
    description: str | None = None


@dataclass(frozen=True)
class Question:
    id: str  # System One key; OpenAI name when every question is named uniquely, else "0", "1", ...
    kind: Kind
    instructions: JSON = None  # str, JSON, a list of OpenAI parts, or None
    options: tuple[Option, ...] = ()  # choice
    levels: tuple[Level, ...] = ()  # score
    # noul criteria as sent: None when absent; a dict with "true"/"false" keys (values may be null).
    criteria: dict[str, Any] | None = None
    name: str | None = None  # the OpenAI ``name`` (None when unnamed)
    # provider-specific fields to send System One upstreams (none from the wires: both refuse unknown question fields)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def yes(self) -> JSON:
        return (self.criteria or {}).get("true")

    @property
    def no(self) -> JSON:
        return (self.criteria or {}).get("false")

    @property
    def size(self) -> int:
        """Number of answer options: 2 for yes/no, options for choice, levels for score, 0 for box."""
        if self.kind == "yes_no":
            return 2
        if self.kind == "choice":
            return len(self.options)
        if self.kind == "score":
            return len(self.levels)
        return 0


@dataclass(frozen=True)
class DecisionRequest:
    model: str  # the model the caller asked for (a proxy model name or provider/model)
    wire: Wire  # the caller's wire: responses are rendered in it
    input: DecisionInput
    questions: tuple[Question, ...]
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_options: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # unknown top-level fields (kept, not forwarded by default)
    headers: dict[str, str] = field(default_factory=dict)  # client headers to forward (TypeSafe-Danger-Zone-*)

    def with_questions(self, questions: tuple[Question, ...]) -> DecisionRequest:
        from dataclasses import replace

        return replace(self, questions=questions)


# --------------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One answer, aligned with its question.

    ``probabilities`` follow the question: (P(yes), P(no)) for yes_no, one per option in question
    order for choice, one per level for score, empty for box and refusal. After
    ``translators.normalize`` they are finite and sum to 1 within 1e-9.
    """

    question_id: str
    kind: AnswerKind
    probabilities: tuple[float, ...] = ()
    confidence: float | None = None
    box: dict[str, Any] | None = None  # {top, bottom, left, right}
    label_mass: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # provider extras kept for System One output (evidence, ...)

    @property
    def probability(self) -> float:
        """P(yes) of a yes_no answer."""
        return self.probabilities[0]

    @property
    def choice_index(self) -> int:
        """Index of the most probable option (first on ties)."""
        best = 0
        for i, p in enumerate(self.probabilities):
            if p > self.probabilities[best]:
                best = i
        return best

    @property
    def score(self) -> float:
        """Expected level: sum of i * p_i."""
        return math.fsum(i * p for i, p in enumerate(self.probabilities))


@dataclass(frozen=True)
class Usage:
    input_tokens: int | None = None  # None: the upstream did not say
    output_tokens: int | None = None
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float | None = None  # a provider-reported price for the call (OpenRouter usage.cost)

    @property
    def total_tokens(self) -> int:
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        cost = None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(
            input_tokens=add(self.input_tokens, other.input_tokens),
            output_tokens=add(self.output_tokens, other.output_tokens),
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cost=cost,
        )


@dataclass(frozen=True)
class DecisionResult:
    model: str  # the model that answered (as the upstream named it, e.g. jev-1.13-20260917)
    answers: tuple[Answer, ...]  # in question order, one per question (refusals included)
    usage: Usage = field(default_factory=Usage)
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. {"prompt_format_version": 1}

    @property
    def refusals(self) -> list[str]:
        return [a.question_id for a in self.answers if a.kind == "refusal"]


def option_key(value: str | bool) -> str:
    """System One text of an OpenAI choice value: booleans become "true" / "false"."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return value
