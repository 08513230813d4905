"""The admin API's JSON bodies, read as strictly as the decision routes read theirs.

``parse_admin_json(raw)`` is what FastAPI would get from ``json.loads``, except that it refuses,
naming the field (``metadata.team``), what ``json.loads`` lets through:

- a key given twice in one object (the last one would silently win);
- ``NaN``, ``Infinity`` and numbers that overflow to infinity (``1e999``): not JSON numbers, and
  stored they would come back as ``null``;
- a string or key holding an unpaired surrogate escape (``"\\ud800"``): not Unicode text, so the
  row could be written but never read back as JSON;
- text that is not UTF-8, and nesting deeper than ``MAX_DEPTH``.

One parse: the hooks leave markers where a problem is, and one walk in document order names the
first. A ``RequestInvalid`` (400) is raised before any route code runs, so nothing is written.

``readable(value)``: a value read back from the database as JSON can show it (a lone surrogate stored
before this refusal, or by hand, becomes U+FFFD), so that a listing never fails on a stored row.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from gateway.decode.repeats import Repeated, marking_repeats  # the decision routes' marker of a repeated key
from translators.errors import RequestInvalid, format_param
from translators.json_depth import nesting_exceeds

MAX_DEPTH = 32
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # only an escape can put a lone surrogate into a str
_SURROGATE = re.compile("[\ud800-\udfff]")


class _NotANumber:
    """Where ``NaN``, ``Infinity`` or an overflowing number stood."""

    def __init__(self, text: str):
        self.text = text


def _float(text: str) -> float | _NotANumber:
    value = float(text)
    return value if math.isfinite(value) else _NotANumber(text)


def parse_admin_json(raw: bytes) -> Any:
    """The body's JSON value; ``RequestInvalid`` naming the field for anything listed above."""
    if nesting_exceeds(raw, MAX_DEPTH):
        raise RequestInvalid(f"The request body nests arrays and objects more than {MAX_DEPTH} levels deep.",
                             None, code="json_too_deep")
    try:
        value = json.loads(raw.decode("utf-8-sig"), object_pairs_hook=marking_repeats, parse_float=_float,
                           parse_constant=_NotANumber)
    except UnicodeDecodeError:
        raise RequestInvalid("The request body is not UTF-8 text.", None, code="json_invalid") from None
    except (json.JSONDecodeError, RecursionError):
        raise RequestInvalid("The request body is not valid JSON.", None, code="json_invalid") from None
    _check(value, check_text=bool(_SURROGATE_ESCAPE.search(raw)))
    return value


def _check(root: Any, *, check_text: bool) -> None:
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(root, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, _NotANumber):
            raise _refused(path, f"holds {item.text}, which is not a finite JSON number; send finite numbers only",
                           "invalid_number")
        if check_text and isinstance(item, str) and _SURROGATE.search(item):
            raise _refused(path, "holds an unpaired surrogate escape (\\ud800-\\udfff), which is not Unicode "
                                 "text; send valid UTF-8", "invalid_text")
        if isinstance(item, Repeated):
            raise _refused((*path, item.repeated), "is given more than once; send each key once (the last one "
                                                   "would silently win)", "duplicate_key")
        if isinstance(item, dict):
            if check_text and any(_SURROGATE.search(key) for key in item):
                raise _refused(path, "has a key holding an unpaired surrogate escape (\\ud800-\\udfff), which is "
                                     "not Unicode text; send valid UTF-8", "invalid_text")
            stack.extend((child, (*path, key)) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((child, (*path, i)) for i, child in reversed(list(enumerate(item))))


def _refused(path: tuple[str | int, ...], rule: str, code: str) -> RequestInvalid:
    shown = tuple(readable(p) for p in path)
    where = format_param(shown)
    message = f"{where}: {rule}." if where else f"The request body {rule}."
    return RequestInvalid(message, shown or None, code=code)


def readable(value: Any) -> Any:
    """``value`` with every unpaired surrogate in its strings and keys replaced by U+FFFD, so that it can
    be written as JSON (a row stored before they were refused, or by hand)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {readable(k): readable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [readable(v) for v in value]
    return value
