"""Errors every layer raises, rendered by the caller's wire into its own envelope.

``loc`` names the field in the terms of the wire the caller used: ``("questions", 2, "choices")``
for OpenAI (rendered as ``param = "questions[2].choices"``) or ``("body", "questions", "urgency",
"score", "criteria")`` for System One (rendered as a FastAPI-style ``detail`` list). Messages are
one readable sentence and never contain an API key.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class DecisionError(Exception):
    status: int
    message: str
    loc: tuple[str | int, ...] | None = None
    type: str = "invalid_request_error"  # OpenAI error type
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # e.g. Retry-After on 429

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class RequestInvalid(DecisionError):
    """The caller's request breaks a rule (400 on OpenAI, 422 on System One schema errors)."""

    def __init__(self, message: str, loc: tuple[str | int, ...] | None = None, status: int = 400,
                 code: str | None = None, errors: list["RequestInvalid"] | None = None):
        super().__init__(status=status, message=message, loc=loc, type="invalid_request_error", code=code)
        self.errors = errors or []  # further problems found in the same request (System One lists all)


class Unsupported(DecisionError):
    """The request is valid but the chosen provider cannot serve it (images, limits). Always 400."""

    def __init__(self, message: str, loc: tuple[str | int, ...] | None = None, code: str | None = None):
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
