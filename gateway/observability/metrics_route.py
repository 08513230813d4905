"""``GET /metrics``: the Prometheus text format. With a master key set it needs the master key
(a virtual key gets 403: the metrics hold every team's traffic and spend), unless
``general_settings.public_metrics: true``. Errors are in the OpenAI envelope, as on ``/v1/models``."""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.auth.errors import PermissionDenied
from gateway.observability.metrics import CONTENT_TYPE
from translators import openai as openai_wire
from translators.errors import DecisionError

log = logging.getLogger("gateway.observability")


async def metrics_endpoint(request: Request) -> Response:
    state = request.app.state.gateway
    if not state.config.general_settings.get("public_metrics") and state.auth.required:
        try:
            identity = await state.auth.resolve_headers(request.headers)
            if not identity.is_master:
                raise PermissionDenied("Only the master key may read /metrics (or set general_settings."
                                       "public_metrics: true).", code="admin_only")
        except DecisionError as err:
            status, body = openai_wire.render_error(err)
            return JSONResponse(body, status_code=status, headers=err.headers)
    observer = state.pipeline.observer
    try:
        await observer.refresh()
    except Exception as exc:  # noqa: BLE001 - Redis away: the gauges keep their last values, the rest is served
        log.warning("metrics: the state gauges could not be refreshed for a scrape (%s)", type(exc).__name__)
    return Response(observer.metrics.render(), media_type=CONTENT_TYPE)


ROUTES = [Route("/metrics", metrics_endpoint, methods=["GET"], include_in_schema=False)]
