"""Request ids: every response carries ``x-request-id``; System One responses also ``x-typesafe-request-id``.

The id is always the gateway's own, made here: it names the request's spend row (idempotent by it),
so a caller repeating an id of its own cannot keep its calls out of the spend log. A caller's own id
(``x-client-request-id``, OpenAI's header for it, or ``x-request-id``; printable, up to 128
characters) comes back as ``x-client-request-id`` for its own correlation. A response that already
names its id (a pass-through relaying the upstream's) keeps it. The id is stored in the ASGI scope
(``scope["state"]["request_id"]``, read as ``request.state.request_id``) so handlers and logs can
use it. Pure ASGI: no per-request task.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Collection, Iterator

REQUEST_ID = b"x-request-id"
CLIENT_REQUEST_ID = b"x-client-request-id"
TYPESAFE_REQUEST_ID = b"x-typesafe-request-id"
SYSTEMONE_SUFFIX = "/systemone"


def _fresh_prefix() -> None:
    global _prefix, _serial
    _prefix, _serial = "req_" + os.urandom(8).hex(), itertools.count(1)


_prefix: str
_serial: Iterator[int]
_fresh_prefix()
os.register_at_fork(after_in_child=_fresh_prefix)  # a forked worker never repeats its parent's ids


def new_request_id() -> str:
    """``req_``, 64 random bits drawn once per process and a 64-bit serial number, in hex: 32 hex digits
    as a uuid4's, unique across processes and restarts. ``os.urandom`` per request released the GIL for
    its system call, and the request then waited for the spend drain thread to hand it back."""
    return f"{_prefix}{next(_serial):016x}"


def _client_id(scope) -> bytes | None:
    """The caller's own id (x-client-request-id first, else x-request-id), when printable and short."""
    found: dict[bytes, bytes] = {}
    for name, value in scope.get("headers") or ():
        if name in (CLIENT_REQUEST_ID, REQUEST_ID):
            found.setdefault(name, value)
    value = found.get(CLIENT_REQUEST_ID, found.get(REQUEST_ID))
    if value is None:
        return None
    text = value.decode("latin-1").strip()
    return text.encode("latin-1") if 0 < len(text) <= 128 and text.isprintable() else None


def is_systemone_path(path: str) -> bool:
    return path.rstrip("/").endswith(SYSTEMONE_SUFFIX)


def assign(scope) -> str:
    """A new id for the request of ``scope``, kept in ``scope["state"]["request_id"]``."""
    request_id = new_request_id()
    scope.setdefault("state", {})["request_id"] = request_id
    return request_id


def id_headers(scope, request_id: str, present: Collection[bytes] = ()) -> list[tuple[bytes, bytes]]:
    """The response headers naming the request: ``x-request-id`` (and ``x-typesafe-request-id`` on a
    System One path) unless the response names them already (``present``: lower-case names), and the
    caller's own id as ``x-client-request-id``."""
    encoded = request_id.encode("latin-1")
    headers = [(REQUEST_ID, encoded)] if REQUEST_ID not in present else []
    if TYPESAFE_REQUEST_ID not in present and is_systemone_path(scope.get("path", "")):
        headers.append((TYPESAFE_REQUEST_ID, encoded))
    client_id = _client_id(scope)
    if client_id is not None:
        headers.append((CLIENT_REQUEST_ID, client_id))
    return headers


class RequestIdMiddleware:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = assign(scope)

        async def send_with_id(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                headers.extend(id_headers(scope, request_id, {k.lower() for k, _ in headers}))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_id)
