"""Browser requests from other origins: refused where they could spend or change something, unless
their origin is in ``general_settings.allowed_origins`` (LiteLLM's name); CORS for the allowed ones.

Without a master key the decision routes are open, and a multipart POST is a CORS "simple" request:
a page on any origin could make its visitors' browsers send decision calls (``mode: "no-cors"``: the
page cannot read the answers, but the gateway pays for them). So, before any route runs:

- a request from a browser on another origin that could spend or change something (any method but
  GET, HEAD and OPTIONS, and every method on a pass-through) is answered 403 ``cross_site_request``
  and goes no further. "Another origin": ``Sec-Fetch-Site: cross-site`` or ``same-site``; from a
  browser that sends no Sec-Fetch-Site, an ``Origin`` whose host is not the one asked (``null``
  included). An ``Origin`` in ``allowed_origins`` is never refused;
- a CORS preflight (OPTIONS with ``Origin`` and ``Access-Control-Request-Method``) is answered (204,
  the methods and the headers asked for) for an allowed origin only; any other gets a 403 without
  CORS headers, so the browser sends nothing;
- the responses to an allowed origin carry ``Access-Control-Allow-Origin`` (and expose the gateway's
  headers); never ``Access-Control-Allow-Credentials``: the gateway uses no cookies.

Server-side clients send neither header and are untouched; the admin UI is same-origin. ``"*"`` in
``allowed_origins`` allows every origin (LiteLLM's default, here an explicit choice). The setting is
read at start.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from gateway.config.errors import ConfigError
from gateway.edge import request_id as request_ids
from gateway.json_codec import json_bytes
from translators import openai as openai_wire
from translators import systemone as systemone_wire
from translators.errors import DecisionError

SETTING = "allowed_origins"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
FOREIGN_SITES = frozenset({b"cross-site", b"same-site"})
ALLOW_METHODS = b"GET, HEAD, POST, PUT, PATCH, DELETE"
MAX_AGE_S = b"600"
HEADER_LIST = re.compile(rb"^[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$")
DEFAULT_PORTS = {"http": 80, "https": 443}


def canonical_origin(value: str) -> str | None:
    """``scheme://host[:port]`` lower-cased, the scheme's default port left out; None when ``value`` is
    not an origin (a path, a query, user info, another scheme)."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.username is not None \
            or parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, DEFAULT_PORTS[parts.scheme]) else "")


@dataclass(frozen=True)
class CrossSitePolicy:
    allowed: frozenset[str] = frozenset()
    any_origin: bool = False
    spending_prefixes: tuple[str, ...] = ()  # paths every method of which may spend (the pass-throughs)

    @classmethod
    def from_settings(cls, general_settings: Mapping[str, Any], spending_prefixes: Iterable[str] = ()
                      ) -> CrossSitePolicy:
        """``general_settings.allowed_origins``: a list of origins (``https://app.example``) or ``"*"``;
        a ``ConfigError`` naming the entry otherwise."""
        value = general_settings.get(SETTING)
        entries = [] if value is None else [value] if isinstance(value, str) else value
        if not isinstance(entries, list) or not all(isinstance(entry, str) for entry in entries):
            raise ConfigError(f"general_settings.{SETTING}: must be a list of origins such as "
                              "https://app.example, or \"*\"")
        allowed: set[str] = set()
        for i, entry in enumerate(entries):
            origin = "*" if entry.strip() == "*" else canonical_origin(entry)
            if origin is None:
                raise ConfigError(f"general_settings.{SETTING}[{i}]: {entry[:100]!r} is not an origin "
                                  "(scheme://host[:port], no path) nor \"*\"")
            allowed.add(origin)
        return cls(frozenset(allowed - {"*"}), "*" in allowed, tuple(spending_prefixes))

    def allows(self, origin: bytes) -> bool:
        if self.any_origin:
            return True
        canonical = canonical_origin(origin.decode("latin-1"))
        return canonical is not None and canonical in self.allowed

    def guards(self, method: str, path: str) -> bool:
        """Whether a request could spend or change something: refused when it comes from another origin."""
        return method not in SAFE_METHODS or path.startswith(self.spending_prefixes)


def foreign(origin: bytes | None, fetch_site: bytes | None, host: bytes | None) -> bool:
    """Whether a browser sent the request from a page on another origin than the one it asks."""
    if fetch_site is not None:
        return fetch_site.strip().lower() in FOREIGN_SITES
    if origin is None:
        return False  # no browser says nothing of where it comes from: a server-side client
    canonical = canonical_origin(origin.decode("latin-1"))
    if canonical is None or host is None:
        return True  # "null" (a sandboxed frame, a file) or unreadable
    ours = canonical_origin(f"{urlsplit(canonical).scheme}://{host.decode('latin-1')}")
    return canonical != ours


class CrossSiteGuard:
    """Pure ASGI: refusals and preflights answered here, CORS headers added for allowed origins."""

    def __init__(self, app: Any, policy: CrossSitePolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        origin = fetch_site = host = asked_method = asked_headers = None
        for name, value in scope.get("headers") or ():
            if name == b"origin":
                origin = value
            elif name == b"sec-fetch-site":
                fetch_site = value
            elif name == b"host":
                host = value
            elif name == b"access-control-request-method":
                asked_method = value
            elif name == b"access-control-request-headers":
                asked_headers = value
        if origin is None and fetch_site is None:  # a server-side client: the usual case, untouched
            await self.app(scope, receive, send)
            return
        allowed = origin is not None and self.policy.allows(origin)
        if scope["method"] == "OPTIONS" and origin is not None and asked_method is not None:
            await (preflight(origin, asked_headers) if allowed else refuse_preflight)(scope, receive, send)
        elif not allowed and self.policy.guards(scope["method"], scope["path"]) and foreign(origin, fetch_site, host):
            await refuse(scope, receive, send)
        elif allowed:
            await self.app(scope, receive, with_cors_headers(send, origin))
        else:
            await self.app(scope, receive, send)


def cors_headers(origin: bytes | None) -> list[tuple[bytes, bytes]]:
    return [(b"access-control-allow-origin", origin or b""), (b"vary", b"Origin")]


def with_cors_headers(send, origin: bytes | None):
    async def send_with_cors(message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", ()) if not k.lower().startswith(b"access-control-")]
            headers += [*cors_headers(origin), (b"access-control-expose-headers", b"*")]
            message = {**message, "headers": headers}
        await send(message)

    return send_with_cors


def preflight(origin: bytes, asked_headers: bytes | None):
    headers = [*cors_headers(origin), (b"access-control-allow-methods", ALLOW_METHODS),
               (b"access-control-max-age", MAX_AGE_S), (b"content-length", b"0")]
    if asked_headers is not None and HEADER_LIST.match(asked_headers.strip()):
        headers.append((b"access-control-allow-headers", asked_headers.strip()))

    async def answer(scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    return answer


async def refuse_preflight(scope, receive, send) -> None:
    await _send(scope, send, 403, b"This origin is not allowed (general_settings.allowed_origins).\n",
                b"text/plain; charset=utf-8")


async def refuse(scope, receive, send) -> None:
    """403 in the envelope of the route's wire (System One's ``detail`` on its paths, else OpenAI's)."""
    wire = systemone_wire if request_ids.is_systemone_path(scope["path"]) else openai_wire
    err = DecisionError(status=403, message="Cross-site requests are refused: a page on another origin may not "
                        f"call this route unless its origin is in general_settings.{SETTING}.",
                        type="permission_error", code="cross_site_request")
    status, body = wire.render_error(err)
    await _send(scope, send, status, json_bytes(body), b"application/json")


async def _send(scope, send, status: int, body: bytes, content_type: bytes) -> None:
    request_id = request_ids.assign(scope)
    headers = [(b"content-type", content_type), (b"content-length", b"%d" % len(body)), (b"vary", b"Origin"),
               *request_ids.id_headers(scope, request_id)]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
