"""The decision routes: ``POST /v1/decisions`` (OpenAI wire) and ``POST /v1/systemone`` (System One).

Thin: path -> wire -> the pipeline (gateway/pipeline.py) -> one response. Every failure has been
rendered by the pipeline in the envelope the caller's client expects; nothing a client sends ends
in a 500.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.routing import Route

from gateway.context import RequestContext
from gateway.edge import request_id as request_ids
from gateway.pipeline import DECISION_STEPS, Pipeline, forwarded_headers
from gateway.router import DEADLINE_HEADER
from translators import openai as openai_wire
from translators import systemone as systemone_wire
from translators.wire import WireModule

JSON_TYPE = b"application/json"


class DecisionRoute:
    """The ASGI app of one decision route: a request id, the pipeline over the request, and its answer
    sent straight to the server as two messages (no Starlette response object), with the request-id
    headers (gateway/edge/request_id.py). GatewayApp sends every ``POST`` of these paths here without
    FastAPI's middleware stack; the Starlette routes below exist for the other methods' 405."""

    def __init__(self, wire: WireModule) -> None:
        self.wire = wire

    async def __call__(self, scope, receive, send) -> None:
        request_id = request_ids.assign(scope)
        ctx = await self.answer(Request(scope, receive))
        content = ctx.content or b""
        headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in ctx.headers.items()]
        present = {name for name, _ in headers}
        if b"content-type" not in present:
            headers.append((b"content-type", JSON_TYPE))
        if b"content-length" not in present:
            headers.append((b"content-length", b"%d" % len(content)))
        headers += request_ids.id_headers(scope, request_id, present)
        await send({"type": "http.response.start", "status": ctx.status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    async def answer(self, request: Request) -> RequestContext:
        """The request answered through the pipeline: its context, whose ``status``, ``headers`` and
        ``content`` are the response."""
        pipeline: Pipeline = request.app.state.gateway.pipeline
        headers = request.headers
        ctx = RequestContext(
            request_id=request.scope["state"]["request_id"], route=request.scope["path"], wire=self.wire,
            source=request, json_only=True, allow_multipart=self.wire is systemone_wire,
            content_type=headers.get("content-type"), content_encoding=headers.get("content-encoding"),
            forwarded_headers=forwarded_headers(headers), deadline_header=headers.get(DEADLINE_HEADER),
        )
        return await pipeline.run(ctx, DECISION_STEPS)


PATHS = {"/v1/decisions": openai_wire, "/decisions": openai_wire, "/v1/systemone": systemone_wire,
         "/systemone": systemone_wire}
_apps = {wire: DecisionRoute(wire) for wire in (openai_wire, systemone_wire)}
APPS = {path: _apps[wire] for path, wire in PATHS.items()}  # GatewayApp's fast path
ROUTES = [Route(path, APPS[path], methods=["POST"]) for path in PATHS]
