"""The ``litellm_params`` a deployment keeps as given (``Deployment.params``), checked at load.

The loader types ``api_key``, ``api_base``, ``timeout``, the token prices, ``rpm`` and ``tpm`` itself;
the rest are read later by the router, the prices and the providers, each of which would otherwise
ignore a bad value or fail on it per request. So each is checked here, and ``param_problems`` returns
every problem as ``<key>: <rule>, got <value>`` (the loader prefixes the entry):

- prices (``cache_read_input_token_cost``, ...): a finite number, not negative;
- ``weight``: a finite number, not negative (0: picked only when every weight is 0);
- ``num_retries``: a whole number from 0 to the router's ``MAX_RETRIES``; ``max_parallel_requests``,
  ``order``: whole numbers of at least 1; ``hedge_after_ms``: a positive finite number;
- ``headers`` / ``extra_headers``: a mapping of header names (letters, digits and ``!#$%&'*+-.^_`|~``)
  to text, numbers or null, without line breaks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from gateway.router.settings import MAX_NUMBER, MAX_RETRIES

PRICES = ("cache_read_input_token_cost", "cache_creation_input_token_cost", "input_cost_per_second",
          "output_cost_per_second")
WHOLE = {"num_retries": (0, MAX_RETRIES), "max_parallel_requests": (1, 10**9), "order": (1, 10**9)}
HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$")
MAX_HEADER_VALUE = 8192


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def param_problems(params: Mapping[str, Any]) -> list[str]:
    """Every problem of ``params``, each ``<key>: <rule>, got <value>``."""
    out = []
    for key in PRICES:
        value = params.get(key)
        if value is not None and not (_number(value) and 0 <= value <= MAX_NUMBER):
            out.append(f"{key}: must be a finite, non-negative number of USD, got {value!r}")
    weight = params.get("weight")
    if weight is not None and not (_number(weight) and 0 <= weight <= MAX_NUMBER):
        out.append(f"weight: must be a finite, non-negative number, got {weight!r}")
    for key, (low, high) in WHOLE.items():
        value = params.get(key)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and low <= value <= high):
            out.append(f"{key}: must be a whole number from {low} to {high}, got {value!r}")
    hedge = params.get("hedge_after_ms")
    if hedge is not None and not (_number(hedge) and 0 < hedge <= MAX_NUMBER):
        out.append(f"hedge_after_ms: must be a positive, finite number of milliseconds, got {hedge!r}")
    for key in ("headers", "extra_headers"):
        if params.get(key) is not None:
            problem = _headers_problem(params[key])
            if problem:
                out.append(f"{key}: {problem}")
    return out


def _headers_problem(headers: Any) -> str | None:
    if not isinstance(headers, Mapping):
        return f"must be a mapping of header names to values, got {type(headers).__name__}"
    for name, value in headers.items():
        if not isinstance(name, str) or not HEADER_NAME.match(name):
            return f"{str(name)[:80]!r} is not a header name (letters, digits and !#$%&'*+-.^_`|~)"
        if value is None or _number(value):
            continue
        if not isinstance(value, str) or len(value) > MAX_HEADER_VALUE or any(c in value for c in "\r\n\0"):
            return (f"{name}: must be text of at most {MAX_HEADER_VALUE} characters without line breaks, "
                    "a number, or null")
    return None
