"""Small pydantic building blocks shared by the wire schemas: tagged unions with readable errors,
and the rules both wires apply to choice labels."""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Tag

from translators.wire_errors import UNKNOWN_TAG


class Closed(BaseModel):
    """A wire object that refuses unknown fields."""

    model_config = ConfigDict(extra="forbid")


class Open(BaseModel):
    """A wire object that keeps unknown fields (``model_extra``)."""

    model_config = ConfigDict(extra="allow")


def tagged(field: str, options: dict[str, Any]) -> Any:
    """A union picked by ``value[field]``; a missing or unknown tag is one clear error naming ``field``."""

    def pick(value: Any) -> str | None:
        tag = value.get(field) if isinstance(value, dict) else getattr(value, field, None)
        return f"~{tag}" if isinstance(tag, str) and tag in options else None

    members = tuple(Annotated[model, Tag(f"~{name}")] for name, model in options.items())
    expected = ", ".join(options)
    # Union[...] of a tuple built at run time: the X | Y spelling cannot take one.
    return Annotated[Union[members], Discriminator(  # noqa: UP007
        pick, custom_error_type=UNKNOWN_TAG, custom_error_message=f"{field}|{expected}")]


def json_kind(value: Any) -> str | None:
    """Tag of a JSON value's kind: ~str, ~bool, ~list, ~object (None for anything else)."""
    if isinstance(value, bool):
        return "~bool"
    if isinstance(value, str):
        return "~str"
    if isinstance(value, list):
        return "~list"
    if isinstance(value, dict):
        return "~object"
    return None


def by_kind(description: str, **members: Any) -> Any:
    """A union picked by JSON kind (``str=``, ``bool=``, ``list=``, ``object=``) with one readable error."""
    options = tuple(Annotated[model, Tag(f"~{kind}")] for kind, model in members.items())
    if len(options) == 1:
        return options[0]
    return Annotated[Union[options], Discriminator(  # noqa: UP007 (a tuple built at run time)
        json_kind, custom_error_type="wrong_kind", custom_error_message=f"must be {description}")]


# ------------------------------------------------------------------------- choice label rules
# SGLang's and MAX's rules for option names (the bundled backend applies them too, through
# translators.sglang), checked by the gateway on both wires: a label is one line of a prompt and the
# key of its answer, so it may not break a line, and two labels that differ only in case or
# surrounding spaces cannot be told apart.


def has_control_character(text: str) -> bool:
    """Whether ``text`` holds a control character (Unicode Cc: tab, newline, NUL, ...) or a line or
    paragraph separator (U+2028, U+2029)."""
    return any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") for ch in text)


def folded(text: str) -> str:
    """A label as compared for distinctness: trimmed and case folded."""
    return text.strip().casefold()
