"""Errors every layer raises, rendered by the caller's wire into its own envelope.

``loc`` names the field. A wire's own parser writes it in that wire's terms: ``("questions", 2,
"choices")`` for OpenAI (rendered as ``param = "questions[2].choices"``) or ``("body", "questions",
"urgency", "score", "criteria")`` for System One (a FastAPI-style ``detail`` list). Everything else
(the pipeline, the registry, a provider's capability checks) knows no wire and raises a neutral
``Where`` ("the options of question 2, id ``tone``"), which each wire's ``locate`` spells in its own
form. Messages are one readable sentence and never contain an API key.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class QuestionRef:
    """A question by position and id, so each wire can name it its own way (index or key)."""

    index: int
    id: str


@dataclass(frozen=True)
class Where:
    """A wire-neutral location: a request field (``body``, ``model``, ``input``, ``images``, or any
    other top-level name), or a part (``options``, ``levels``, ``type``) of one question."""

    field: str
    question: QuestionRef | None = None

    @classmethod
    def of_question(cls, index: int, question_id: str, part: str) -> Where:
        return cls(part, QuestionRef(index, question_id))


BODY = Where("body")
MODEL = Where("model")
INPUT = Where("input")
IMAGES = Where("images")

Loc = tuple[str | int, ...]


@dataclass
class DecisionError(Exception):
    status: int
    message: str
    loc: Loc | Where | None = None
    type: str = "invalid_request_error"  # OpenAI error type
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # e.g. Retry-After on 429

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class RequestInvalid(DecisionError):
    """The caller's request breaks a rule (400 on OpenAI, 422 on System One schema errors)."""

    def __init__(self, message: str, loc: Loc | Where | None = None, status: int = 400,
                 code: str | None = None, errors: list[RequestInvalid] | None = None, schema: bool = False):
        super().__init__(status=status, message=message, loc=loc, type="invalid_request_error", code=code)
        self.errors = errors or []  # further problems found in the same request (System One lists all)
        # A schema problem (missing or mistyped field, unreadable JSON): each wire answers it with its
        # own validation status (400 on OpenAI, 422 on System One) instead of ``status``.
        self.schema = schema


class Unsupported(DecisionError):
    """The request is valid but the chosen provider cannot serve it (images, limits). Always 400."""

    def __init__(self, message: str, loc: Loc | Where | None = None, code: str | None = None):
        super().__init__(status=400, message=message, loc=loc, type="invalid_request_error", code=code)


class UpstreamError(DecisionError):
    """The upstream failed or answered something unusable. ``status`` is what the caller gets."""

    def __init__(self, status: int, message: str, *, provider: str = "", type: str = "upstream_error",
                 code: str | None = None, headers: dict[str, str] | None = None, retryable: bool | None = None):
        super().__init__(status=status, message=message, loc=None, type=type, code=code, headers=headers or {})
        self.provider = provider
        self.retryable = status in (408, 429) or status >= 500 if retryable is None else retryable


def format_param(loc: tuple[str | int, ...] | None) -> str | None:
    """OpenAI ``param`` for a location: ("questions", 2, "choices") -> "questions[2].choices"."""
    if not loc:
        return None
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
