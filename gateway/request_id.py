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

import os

REQUEST_ID = b"x-request-id"
CLIENT_REQUEST_ID = b"x-client-request-id"
TYPESAFE_REQUEST_ID = b"x-typesafe-request-id"
SYSTEMONE_SUFFIX = "/systemone"


def new_request_id() -> str:
    """``req_`` and 128 random bits in hex (as a uuid4's hex, without building a UUID object)."""
    return "req_" + os.urandom(16).hex()


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


class RequestIdMiddleware:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        encoded = request_id.encode("latin-1")
        names = [REQUEST_ID]
        if is_systemone_path(scope.get("path", "")):
            names.append(TYPESAFE_REQUEST_ID)
        client_id = _client_id(scope)

        async def send_with_id(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {k.lower() for k, _ in headers}
                headers.extend((name, encoded) for name in names if name not in present)
                if client_id is not None:
                    headers.append((CLIENT_REQUEST_ID, client_id))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_id)
