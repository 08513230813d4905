"""The decision routes: ``POST /v1/decisions`` (OpenAI wire) and ``POST /v1/systemone`` (System One).

Thin: path -> wire -> the pipeline (gateway/pipeline.py) -> one response. Every failure has been
rendered by the pipeline in the envelope the caller's client expects; nothing a client sends ends
in a 500.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.pipeline import DECISION_STEPS, Pipeline, RequestContext, forwarded_headers
from gateway.router import DEADLINE_HEADER
from translators import openai as openai_wire
from translators import systemone as systemone_wire
from translators.wire import WireModule

JSON_TYPE = "application/json"


def decision_answer(wire: WireModule):
    """The request answered through the pipeline: its context, whose ``status``, ``headers`` and
    ``content`` are the response (gateway/app.py sends them straight to the server)."""
    async def answer(request: Request) -> RequestContext:
        pipeline: Pipeline = request.app.state.gateway.pipeline
        headers = request.headers
        ctx = RequestContext(
            request_id=request.scope["state"]["request_id"], route=request.scope["path"], wire=wire, source=request,
            json_only=True, allow_multipart=wire is systemone_wire, content_type=headers.get("content-type"),
            content_encoding=headers.get("content-encoding"), forwarded_headers=forwarded_headers(headers),
            deadline_header=headers.get(DEADLINE_HEADER),
        )
        return await pipeline.run(ctx, DECISION_STEPS)

    return answer


def decision_endpoint(wire: WireModule):
    answer = decision_answer(wire)

    async def endpoint(request: Request) -> Response:
        ctx = await answer(request)
        return Response(content=ctx.content, status_code=ctx.status, media_type=JSON_TYPE, headers=ctx.headers)

    return endpoint


# Plain Starlette routes: the handlers read the raw body themselves, so FastAPI's dependency
# solving and response wrapping would only add per-request work on the hot path.
PATHS = {"/v1/decisions": openai_wire, "/decisions": openai_wire, "/v1/systemone": systemone_wire,
         "/systemone": systemone_wire}
ANSWERS = {path: decision_answer(wire) for path, wire in PATHS.items()}  # the fast path's (gateway/app.py)
_endpoints = {wire: decision_endpoint(wire) for wire in (openai_wire, systemone_wire)}
ROUTES = [Route(path, _endpoints[wire], methods=["POST"]) for path, wire in PATHS.items()]
