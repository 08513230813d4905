"""Turning an upstream's failure into an ``UpstreamError`` (no I/O).

Every message names the provider, keeps the upstream's own words where it gave any, and never
contains an API key: every value taken from the upstream (message, code, relayed headers) is
redacted before it is cut to length, so a key cannot straddle the cut. 429 and 503 keep
``Retry-After`` (only as a number of seconds or an HTTP date, re-written by the gateway) and
``retry-after-ms`` (only as a number) for the caller.
"""

from __future__ import annotations

import email.utils
import re
from collections.abc import Iterable, Mapping
from datetime import UTC
from typing import Any

import orjson

from providers.base import UpstreamResponse
from translators.errors import UpstreamError

# Upstream statuses passed on unchanged; any other 5xx (and 529) becomes 502 or 503.
KEPT_STATUSES = frozenset({400, 401, 403, 404, 408, 413, 422, 429, 503, 504})

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    503: "service_unavailable_error",
    504: "timeout_error",
}

RETRY_HEADERS = ("retry-after", "retry-after-ms")
MAX_MESSAGE_CHARS = 500
MAX_CODE_CHARS = 100
REDACTED = "[redacted]"
_SECONDS = re.compile(r"\d{1,10}")
_MILLISECONDS = re.compile(r"\d{1,12}(\.\d{1,6})?")


def caller_status(upstream_status: int) -> int:
    """The status the caller gets for an upstream status."""
    if upstream_status in KEPT_STATUSES:
        return upstream_status
    if upstream_status == 529:  # "overloaded" (Cloudflare): the service is unavailable for now
        return 503
    return 502


def retry_headers(resp: UpstreamResponse) -> dict[str, str]:
    """``Retry-After`` / ``retry-after-ms`` as the caller may see them (anything else is dropped)."""
    return retry_values(resp.headers)


def retry_values(headers: Mapping[str, str]) -> dict[str, str]:
    """The usable retry hints among lower-case ``headers``: ``Retry-After`` as delay-seconds or an
    HTTP date (re-written in the IMF-fixdate form), ``retry-after-ms`` as a number. A value of any
    other shape (an echoed key, a sentence) is not relayed."""
    out = {}
    seconds = retry_after(headers.get("retry-after"))
    if seconds is not None:
        out["Retry-After"] = seconds
    millis = (headers.get("retry-after-ms") or "").strip()
    if _MILLISECONDS.fullmatch(millis):
        out["retry-after-ms"] = millis
    return out


def retry_after(value: str | None) -> str | None:
    """A ``Retry-After`` value re-written from what it means, or None when it is neither form."""
    text = (value or "").strip()
    if _SECONDS.fullmatch(text):
        return str(int(text))
    if not text or len(text) > 40:
        return None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return email.utils.format_datetime(when.astimezone(UTC), usegmt=True)


def decode_body(body: bytes) -> Any:
    """The JSON of a body, or None when it is not JSON."""
    if not body:
        return None
    try:
        return orjson.loads(body)  # strict JSON (no NaN), and several times faster than json.loads
    except orjson.JSONDecodeError:
        return None


def extract_message(payload: Any) -> str | None:
    """The error text in any of the common envelopes (OpenAI, FastAPI ``detail``, Cloudflare, plain)."""
    if isinstance(payload, str):
        return payload.strip() or None
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, str):
        return error
    said = error.get("message") if isinstance(error, dict) else None
    if isinstance(said, str):
        return said
    said = payload.get("message")
    if isinstance(said, str):
        return said
    detail = payload.get("detail")
    if isinstance(detail, str):
        return detail
    if isinstance(detail, dict):
        return detail.get("message") or detail.get("error_type")
    if isinstance(detail, list):
        return "; ".join(_detail_item(item) for item in detail) or None
    errors = payload.get("errors")
    if isinstance(errors, list) and errors:
        return "; ".join(_cloudflare_item(item) for item in errors)
    return None


def extract_code(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict) and error.get("code") is not None:
        return str(error["code"])
    detail = payload.get("detail")
    if isinstance(detail, dict) and detail.get("error_type"):
        return str(detail["error_type"])
    return None


def _detail_item(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    loc = [str(p) for p in item.get("loc", []) if p != "body"]
    msg = str(item.get("msg", ""))
    return f"{'.'.join(loc)}: {msg}" if loc else msg


def _cloudflare_item(item: Any) -> str:
    if isinstance(item, dict):
        code = item.get("code")
        message = item.get("message", "")
        return f"{message} (code {code})" if code is not None else str(message)
    return str(item)


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret (of 4 characters or more) replaced by ``[redacted]``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def upstream_error(provider: str, resp: UpstreamResponse, *, label: str | None = None,
                   secrets: Iterable[str | None] = (), payload: Any = ..., status: int | None = None,
                   message: str | None = None, code: str | None = None,
                   retryable: bool | None = None) -> UpstreamError:
    """An ``UpstreamError`` for a failed upstream answer."""
    if payload is ...:
        payload = decode_body(resp.body)
    status = caller_status(resp.status) if status is None else status
    said = message or extract_message(payload)
    if said is None and resp.body and payload is None:
        said = "a non-JSON error body"
    secrets = tuple(secrets)
    said = clip(redact((said or "no error message").strip(), secrets), MAX_MESSAGE_CHARS)  # redact, then cut
    code = code if code is not None else extract_code(payload)
    return UpstreamError(
        status,
        redact(f"{label or provider} upstream answered HTTP {resp.status}: {said}", secrets),
        provider=provider,
        type=ERROR_TYPES.get(status, "upstream_error"),
        code=None if code is None else clip(redact(str(code), secrets), MAX_CODE_CHARS),
        headers=retry_headers(resp) if status in (429, 503) else {},
        retryable=retryable,
    )


def unusable_body(provider: str, why: str, *, label: str | None = None) -> UpstreamError:
    """A 2xx answer the gateway cannot use: 502."""
    return UpstreamError(502, f"{label or provider} upstream returned an unusable response: {why}",
                         provider=provider, type="upstream_error")
