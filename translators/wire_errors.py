"""Turn pydantic validation errors into one readable sentence per problem, naming the field.

Callers pass how a location is written in their wire (``questions[2].choices`` for OpenAI,
``questions.urgency.criteria`` for System One). Tags of helper unions (``~str``, ``~parts``, ...)
never reach a location; System One question-type tags are kept in ``loc`` (FastAPI style).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

Loc = tuple[str | int, ...]

# Custom error type raised by discriminators when a tagged object has no or an unknown ``type``
# (or ``role``); its message is "<field>|<allowed values>" (a Discriminator cannot carry a context dict).
UNKNOWN_TAG = "unknown_tag"

_KIND_WORDS = {
    "string_type": "a string",
    "str_type": "a string",
    "bool_type": "a boolean",
    "int_type": "an integer",
    "float_type": "a number",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "string_unicode": "a string",
}


def clean_loc(loc: Loc, keep: Callable[[str], bool] = lambda _: False) -> Loc:
    """Drop helper-union tags (strings starting with "~") unless ``keep`` says otherwise."""
    return tuple(p for p in loc if not (isinstance(p, str) and p.startswith("~") and not keep(p)))


def describe(exc: ValidationError, path_text: Callable[[Loc], str | None],
             loc_of: Callable[[Loc], Loc] = clean_loc) -> list[tuple[Loc, str, str]]:
    """(loc, sentence, code) for each problem pydantic found, in the order it found them."""
    problems: list[tuple[Loc, str, str]] = []
    seen: set[tuple[Loc, str]] = set()
    for error in exc.errors(include_url=False):
        loc, message, code = _one(error, loc_of(tuple(error["loc"])), path_text)
        if (loc, message) not in seen:
            seen.add((loc, message))
            problems.append((loc, message, code))
    return problems


def _one(error: ErrorDetails, loc: Loc, path_text: Callable[[Loc], str | None]) -> tuple[Loc, str, str]:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    value = error.get("input")
    if kind in ("union_tag_invalid", "union_tag_not_found", UNKNOWN_TAG):
        field, expected = "type", ctx.get("expected_tags", "")
        if kind == UNKNOWN_TAG:
            field, _, expected = str(error.get("msg", "type|")).partition("|")
        loc = loc + (field,)
        where = path_text(loc)
        given = value.get(field) if isinstance(value, dict) else None
        if not isinstance(value, dict):
            return loc[:-1], f"{path_text(loc[:-1])} must be an object.", "object_type"
        if given is None:
            return loc, f"{where} is required and must be one of {expected}.", "missing"
        return loc, f"{where} must be one of {expected}, got {_show(given)}.", "unknown_type"
    where = path_text(loc) if loc else "The request body"
    if kind == "missing":
        return loc, f"{where} is required.", "missing"
    if kind == "extra_forbidden":
        return loc, f"{where} is not a recognised field; remove it.", "unknown_field"
    if kind in _KIND_WORDS:
        return loc, f"{where} must be {_KIND_WORDS[kind]}, got {json_kind_name(value)}.", kind
    if kind == "literal_error":
        return loc, f"{where} must be one of {ctx.get('expected', '')}, got {_show(value)}.", "invalid_value"
    if kind in ("too_short", "too_long"):
        low, high = ctx.get("min_length"), ctx.get("max_length")
        bound = f"at least {low}" if kind == "too_short" else f"at most {high}"
        return loc, f"{where} must have {bound} entries, got {ctx.get('actual_length')}.", kind
    if kind in ("finite_number",):
        return loc, f"{where} must be a finite number.", kind
    message = str(error.get("msg", "is invalid"))
    if kind == "wrong_kind":
        message += f", got {json_kind_name(value)}"
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    if not message.startswith(("must", "is", "has", "cannot", "needs")):
        message = "is invalid: " + message[:1].lower() + message[1:]
    return loc, f"{where} {message.rstrip('.')}.", kind


def json_kind_name(value: Any) -> str:
    """How a message names a JSON value's kind: 'a string', 'an object', 'null', ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _show(value: Any) -> str:
    if isinstance(value, str):
        text = repr(value)
    else:
        text = json_kind_name(value) if isinstance(value, (dict, list)) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."
