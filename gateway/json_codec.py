"""Compact JSON bytes for what the gateway sends (answers to callers, bodies to upstreams).

orjson writes a small answer several times faster than ``json.dumps``, but writes NaN and infinity
as ``null``: a made-up value. So wherever orjson wrote a ``null``, the value is walked for a
non-finite number, which raises ``ValueError`` as ``json.dumps(allow_nan=False)`` would.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson


def json_bytes(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON; ``ValueError`` for a non-finite number, ``TypeError`` for
    what JSON cannot hold."""
    try:
        out = orjson.dumps(value)
    except TypeError:  # a type orjson refuses (a lone surrogate, an int over 64 bits): the stdlib decides
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    if b"null" in out and _non_finite(value):
        raise ValueError("Out of range float values are not JSON compliant")
    return out


def _non_finite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return False
