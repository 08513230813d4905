"""Gateway-side validation limits for incoming requests (configurable, checked before any upstream call).

The defaults follow the OpenAI SDK (1-400 questions, 2-255 choices) and LiteLLM's level cap (10), with
System One's looser lower bounds (a one-option choice or one-level score is valid System One).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from translators.ir import Wire


@dataclass(frozen=True)
class RequestLimits:
    min_questions: int = 1
    max_questions: int = 400
    openai_min_choices: int = 2
    openai_max_choices: int = 255
    systemone_min_choices: int = 1
    systemone_max_choices: int = 255
    openai_min_levels: int = 2
    openai_max_levels: int = 10
    systemone_min_levels: int = 1
    systemone_max_levels: int = 10

    def choices(self, wire: Wire) -> tuple[int, int]:
        """(minimum, maximum) options of a choice question on this wire."""
        if wire == "openai":
            return self.openai_min_choices, self.openai_max_choices
        return self.systemone_min_choices, self.systemone_max_choices

    def levels(self, wire: Wire) -> tuple[int, int]:
        """(minimum, maximum) levels of a score question on this wire."""
        if wire == "openai":
            return self.openai_min_levels, self.openai_max_levels
        return self.systemone_min_levels, self.systemone_max_levels

    @classmethod
    def from_dict(cls, values: dict[str, Any] | None) -> RequestLimits:
        """Build from a config mapping (unknown keys are an error, so typos do not pass silently)."""
        values = dict(values or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown request limit(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        for name, value in values.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"request limit {name} must be a non-negative integer, got {value!r}")
        return cls(**values)


DEFAULT_LIMITS = RequestLimits()


def count_problem(what: str, count: int, low: int, high: int) -> str | None:
    """A sentence when ``count`` is outside [low, high], else None: "must have between 2 and 255 entries, got 1"."""
    if low <= count <= high:
        return None
    if low == high:
        return f"{what} must have exactly {low} entries, got {count}."
    return f"{what} must have between {low} and {high} entries, got {count}."
