"""``POST /v1/decisions/validate`` and ``POST /v1/systemone/validate``: the server's own checks of a
request, with no upstream call and nothing billed.

They run the decision routes' own steps of ``gateway/pipeline.py`` (authenticate, read, decode,
parse, authorize) through the same ``Pipeline.run``, then the router's pre-call filter
(``gateway.upstream.call.fit``: can some deployment of the group, or of its capacity fallbacks, take it?),
and stop there: no admission, no route, no call. An invalid request gets the very sentence and
status the decision route would answer, in the caller's envelope (OpenAI's ``error.param``; System
One's ``detail`` list of ``loc``/``msg``, or, for its non-schema errors, ``detail.loc`` added beside
the message so a form can show it at the field). A valid one gets 200 and a small body.

The run goes through a copy of the pipeline without the spend log and the observer, so a check is
never a spend row, nor a request in the metrics.
The admin UI's playground (``ui/``) checks what its editor holds through these routes, so the rules
live only here, in the parsers.
"""

from __future__ import annotations

import copy
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.context import RequestContext
from gateway.json_codec import json_bytes
from gateway.pipeline import Pipeline, authenticate, authorize, decode, parse, read
from translators import openai as openai_wire
from translators import systemone as systemone_wire
from translators.errors import Where
from translators.wire import WireModule

JSON_TYPE = "application/json"


async def fits(pipeline: Pipeline, ctx: RequestContext) -> None:
    """The router's pre-call filter: 400 ``Unsupported`` (the first refusal) when no deployment of the
    group, nor of its capacity fallbacks, can take the request; 403 when only capacity fallbacks the
    caller may not use could."""
    assert ctx.req is not None and ctx.model_group is not None
    refusal = pipeline.router.refusal(ctx.req, ctx.model_group, getattr(ctx.identity, "models", None))
    if refusal is not None:
        raise refusal


async def valid(pipeline: Pipeline, ctx: RequestContext) -> None:
    assert ctx.req is not None
    ctx.status = 200
    ctx.content = json_bytes({"valid": True, "model": ctx.model_group, "questions": len(ctx.req.questions)})


VALIDATE_STEPS = (authenticate, read, decode, parse, authorize, fits, valid)


def without_spend(request: Request) -> Pipeline:
    """The gateway's pipeline without its spend log and its observer (a check is not a decision
    request: no spend row, and not counted in the requests' metrics, log lines or traces). Made once
    per pipeline: a config reload swaps in a new one."""
    app_state = request.app.state
    pipeline: Pipeline = app_state.gateway.pipeline
    cached = getattr(app_state, "validation_pipeline", None)
    if cached is None or cached[0] is not pipeline:
        checker = copy.copy(pipeline)
        checker.spend = None
        checker.observer = None
        cached = (pipeline, checker)
        app_state.validation_pipeline = cached
    return cached[1]


def with_location(wire: WireModule, ctx: RequestContext) -> bytes | None:
    """System One's non-schema errors (``{"detail": {message, error_type}}``) with ``loc`` added."""
    err = ctx.error
    if wire is not systemone_wire or err is None or err.loc is None or not isinstance(ctx.response, dict):
        return ctx.content
    detail: Any = ctx.response.get("detail")
    if not isinstance(detail, dict):
        return ctx.content
    loc = systemone_wire.locate(err.loc) if isinstance(err.loc, Where) else err.loc
    return json_bytes({"detail": {**detail, "loc": list(loc)}})


def validate_endpoint(wire: WireModule):
    async def endpoint(request: Request) -> Response:
        headers = request.headers
        ctx = RequestContext(
            request_id=request.scope["state"]["request_id"], route=request.scope["path"], wire=wire, source=request,
            json_only=True, allow_multipart=wire is systemone_wire, content_type=headers.get("content-type"),
            content_encoding=headers.get("content-encoding"))
        await without_spend(request).run(ctx, VALIDATE_STEPS)
        return Response(content=with_location(wire, ctx), status_code=ctx.status, media_type=JSON_TYPE,
                        headers=ctx.headers)

    return endpoint


ROUTES = [Route("/v1/decisions/validate", validate_endpoint(openai_wire), methods=["POST"]),
          Route("/v1/systemone/validate", validate_endpoint(systemone_wire), methods=["POST"])]
