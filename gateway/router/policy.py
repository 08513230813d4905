"""What a failed attempt means to the router: its error class, whether to retry, how to cool down.

Retried: 408, 429, 5xx, timeouts and connection errors. Never retried: 400, 401, 403, 404, 422
(the same request would fail the same way). 429 and 401 cool a deployment at once (``Retry-After``
sets the cooldown when longer); other retryable failures after ``allowed_fails`` within
``cooldown_time``; a deployment that answers 400 to requests that passed our validation several
times in a row is cooled too (LiteLLM never cools on 400, so such a deployment keeps its share).
"""

from __future__ import annotations

import email.utils
import time

from translators.errors import DecisionError, UpstreamError

NEVER_RETRIED = frozenset({400, 401, 403, 404, 422})
COOL_AT_ONCE = frozenset({401, 429})
MAX_RETRY_AFTER_S = 300.0  # an upstream's Retry-After beyond this is capped


def error_class(err: DecisionError) -> str:
    """LiteLLM's error classes (``retry_policy`` / ``allowed_fails_policy`` keys, without the suffix)."""
    status = err.status
    if status == 429:
        return "rate_limit"
    if status in (401, 403):
        return "authentication"
    if status in (408, 504) or err.code == "upstream_timeout":
        return "timeout"
    if status >= 500:
        return "internal"
    if err.code in ("content_policy_violation", "content_filter"):
        return "content_policy"
    return "bad_request"


def retryable(err: DecisionError) -> bool:
    """Whether trying again (elsewhere, or later) may succeed."""
    if not isinstance(err, UpstreamError):
        return False
    if err.status in NEVER_RETRIED:
        return False
    return err.status in (408, 429) or err.status >= 500


def cools_at_once(err: DecisionError) -> bool:
    return isinstance(err, UpstreamError) and err.status in COOL_AT_ONCE


def counts_as_bad_request(err: DecisionError) -> bool:
    """An upstream 400 to a request that passed the gateway's validation (the deployment's fault)."""
    return isinstance(err, UpstreamError) and err.status == 400


def retry_after_s(err: DecisionError, now: float | None = None) -> float | None:
    """The upstream's ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), capped."""
    headers = {k.lower(): v for k, v in (err.headers or {}).items()}
    value: float | None = None
    if "retry-after-ms" in headers:
        value = _number(headers["retry-after-ms"])
        value = value / 1000.0 if value is not None else None
    if value is None and "retry-after" in headers:
        raw = headers["retry-after"]
        value = _number(raw)
        if value is None:
            try:
                when = email.utils.parsedate_to_datetime(raw).timestamp()
            except (TypeError, ValueError, IndexError, OverflowError):
                return None
            value = when - (time.time() if now is None else now)
    if value is None or value < 0:
        return None
    return min(value, MAX_RETRY_AFTER_S)


def _number(raw: str) -> float | None:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None
