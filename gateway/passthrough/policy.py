"""What a pass-through may send upstream and relay back (pure functions, no I/O).

* ``upstream_url(base, raw_path, query)``: the caller's path under the configured base, or
  ``PathRefused`` (400) for any path that could leave it: ``..`` or ``.`` segments, also when
  percent-encoded (``%2e%2e``, ``..%2f``), double-encoded (``%252e``) or written with
  backslashes; control characters. A base ending in ``/v1`` is not doubled by a ``v1/...`` path.
* ``check_method(method)``: GET and POST only (405 with ``Allow`` otherwise).
* ``forwarded_request_headers(headers)``: the caller's headers minus the gateway's own auth,
  cookies, host, length, hop-by-hop headers (and any the ``Connection`` header names) and the
  client-address headers (``X-Forwarded-*``, ``Forwarded``, ``X-Real-IP``).
* ``relayed_response_headers(upstream_headers, secrets)``: the upstream headers the caller gets,
  each redacted of the gateway's keys; ``Retry-After`` only as seconds or an HTTP date.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, unquote_to_bytes, urlsplit

from providers.upstream_errors import clip, redact, retry_values
from translators.errors import DecisionError

ALLOWED_METHODS = frozenset({"GET", "POST"})
MAX_PATH_CHARS = 2048
# Headers never sent upstream: the gateway's own auth, cookies, the client's address, and the
# hop-by-hop and framing headers the HTTP client sets itself.
DROPPED_REQUEST_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "host", "content-length",
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
    "accept-encoding", "expect", "forwarded", "x-real-ip", "x-client-ip", "true-client-ip", "cf-connecting-ip",
})
DROPPED_REQUEST_PREFIXES = ("x-forwarded-", "proxy-")
RELAYED_RESPONSE_HEADERS = ("content-type", "x-typesafe-request-id", "x-request-id")
MAX_RELAYED_VALUE_CHARS = 256
_ENCODED_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SEGMENT_SAFE = "!$&'()*+,;=:@-._~"  # RFC 3986 pchar, minus what quote() already keeps


class PathRefused(DecisionError):
    def __init__(self, message: str):
        super().__init__(status=400, message=message, type="invalid_request_error", code="invalid_path")


class MethodRefused(DecisionError):
    def __init__(self, method: str):
        allowed = ", ".join(sorted(ALLOWED_METHODS))
        super().__init__(status=405, message=f"Method {method[:16]} is not relayed; the pass-through takes {allowed}.",
                         type="invalid_request_error", code="method_not_allowed", headers={"Allow": allowed})


def upstream_url(base: str, raw_path: str | bytes, query: str | bytes = "") -> str:
    """``base`` + the caller's path (still percent-encoded, as in the ASGI ``raw_path``) + ``?query``.

    The path is decoded once, checked segment by segment and encoded again, so what reaches the
    upstream is exactly the segments that were checked. Raises ``PathRefused`` (400).
    """
    raw = raw_path if isinstance(raw_path, bytes) else raw_path.encode("utf-8", "surrogateescape")
    if len(raw) > MAX_PATH_CHARS:
        raise PathRefused(f"The pass-through path is longer than {MAX_PATH_CHARS} characters.")
    try:
        decoded = unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise PathRefused("The pass-through path is not UTF-8 once percent-decoded.") from None
    if _ENCODED_ESCAPE.search(decoded):
        raise PathRefused("The pass-through path holds a percent-encoded escape (double encoding); "
                          "send it encoded once.")
    if _CONTROL.search(decoded):
        raise PathRefused("The pass-through path holds a control character.")
    segments = decoded.replace("\\", "/").split("/")
    if any(segment in (".", "..") for segment in segments):
        raise PathRefused("The pass-through path may not hold '.' or '..' segments (also encoded as %2e or "
                          "with %2f / backslash separators); it must stay under the configured base.")
    trailing_slash = len(segments) > 1 and segments[-1] == ""
    segments = [segment for segment in segments if segment]  # "a//b" and a leading "/" collapse
    base_parts = urlsplit(base)
    if base_parts.username is not None or base_parts.password is not None:
        raise DecisionError(status=503, message="The pass-through base URL carries a user name or password; "
                                                "configure the key instead.",
                            type="service_unavailable_error", code="not_configured")
    root = base.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    if root.endswith("/v1") and segments[:1] == ["v1"]:
        root = root[: -len("/v1")]
    url = root + "/" + "/".join(quote(segment, safe=_SEGMENT_SAFE) for segment in segments)
    if trailing_slash and segments:
        url += "/"
    query_text = query.decode("latin-1") if isinstance(query, bytes) else query
    if query_text:
        if _CONTROL.search(query_text) or "#" in query_text:
            raise PathRefused("The pass-through query string holds a control character or '#'.")
        url += "?" + query_text
    return url


def raw_subpath(scope: Mapping, prefix: str) -> str:
    """The still-encoded path after ``prefix`` (``/typesafe/``) from an ASGI scope's ``raw_path``."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if isinstance(raw, bytes) else quote(scope.get("path", ""), safe="/%")
    path = path.split("?", 1)[0]
    root = scope.get("root_path") or ""
    if root and path.startswith(root):
        path = path[len(root):]
    if not path.startswith(prefix):
        raise PathRefused(f"The pass-through path must start with {prefix}.")
    return path[len(prefix):]


def check_method(method: str) -> str:
    """The method, upper case, when the pass-through relays it; else ``MethodRefused`` (405)."""
    upper = method.upper()
    if upper not in ALLOWED_METHODS:
        raise MethodRefused(upper)
    return upper


def forwarded_request_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """The caller's headers that may go upstream (the gateway adds its own Authorization)."""
    items = list(headers.items() if isinstance(headers, Mapping) else headers)
    named_by_connection = {token.strip().lower() for name, value in items if name.lower() == "connection"
                           for token in value.split(",") if token.strip()}
    out: dict[str, str] = {}
    for name, value in items:
        lower = name.lower()
        dropped = lower in DROPPED_REQUEST_HEADERS or lower in named_by_connection
        if dropped or lower.startswith(DROPPED_REQUEST_PREFIXES):
            continue
        out[name] = value
    return out


def relayed_response_headers(upstream_headers: Mapping[str, str], secrets: Iterable[str | None]) -> dict[str, str]:
    """The upstream's headers the caller gets: ``content-type`` and the request ids, redacted of
    ``secrets`` and of bounded length; ``Retry-After`` / ``retry-after-ms`` only in their numeric
    or date forms (providers.upstream_errors.retry_values). ``upstream_headers`` has lower-case names."""
    secrets = tuple(secrets)
    out: dict[str, str] = {}
    for name in RELAYED_RESPONSE_HEADERS:
        value = upstream_headers.get(name)
        if value is None:
            continue
        out[name] = clip(redact(value, secrets), MAX_RELAYED_VALUE_CHARS)  # redacted first: no key across the cut
    out.update(retry_values(upstream_headers))
    return out
