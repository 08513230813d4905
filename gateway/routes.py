"""The decision routes: ``POST /v1/decisions`` (OpenAI wire) and ``POST /v1/systemone`` (System One).

One handler for both: decode the body, parse it with the caller's wire into the IR, check the
model, dispatch, render the answer in the caller's wire with the cost and model headers. Every
failure is rendered by ``translators.<wire>.render_error`` into the envelope the caller's client
expects; nothing a client sends ends in a 500.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import replace
from types import ModuleType

from fastapi import APIRouter, Request
from starlette.routing import Route
from fastapi.responses import Response

from gateway.body import BodyError, DecodedBody, decode_body
from gateway.cost import format_cost, response_cost
from gateway.state import GatewayState, RequestRecord
from translators.errors import DecisionError, RequestInvalid, UpstreamError
from translators import openai as openai_wire
from translators import systemone as systemone_wire
from translators.ir import DecisionRequest

log = logging.getLogger("gateway.routes")

router = APIRouter()

FORWARDED_HEADER_PREFIXES = ("typesafe-danger-zone-",)
JSON_TYPE = "application/json"
# Bodies this large, compressed or multipart are decoded and validated in a worker thread, so a big
# request (a zstd body may expand to 64 MiB; 400 questions of 255 choices) never stalls the event loop.
OFF_LOOP_BYTES = 64 * 1024


async def openai_decisions(request: Request) -> Response:
    return await handle_decision(request, "openai")


async def systemone_decisions(request: Request) -> Response:
    return await handle_decision(request, "systemone")


# Plain Starlette routes: the handlers read the raw body themselves, so FastAPI's dependency
# solving and response wrapping would only add per-request work on the hot path.
for _path, _endpoint in (("/v1/decisions", openai_decisions), ("/decisions", openai_decisions),
                         ("/v1/systemone", systemone_decisions), ("/systemone", systemone_decisions)):
    router.routes.append(Route(_path, _endpoint, methods=["POST"]))


WIRES: dict[str, ModuleType] = {"openai": openai_wire, "systemone": systemone_wire}


def wire_module(wire: str) -> ModuleType:
    return WIRES[wire]


async def handle_decision(request: Request, wire: str) -> Response:
    state: GatewayState = request.app.state.gateway
    module = wire_module(wire)
    request_id = getattr(request.state, "request_id", "")
    decoded: DecodedBody | None = None
    model: str | None = None
    try:
        raw = await request.body()
        heavy = is_heavy(raw, request)
        decoded = await run_maybe_off_loop(heavy, decode_request_body, raw, request, wire)
        model = check_model(decoded.json, state, wire)
        req = await run_maybe_off_loop(heavy, parse, module, wire, decoded, state)
        req = replace(req, headers={**req.headers, **forwarded_headers(request)})
        result, dep = await state.decide(req, model)
        body = module.render_response(result, req)
        cost = response_cost(result.usage, dep, result.model)
        headers = {"x-decisions-model": f"{dep.provider}/{dep.model}"}
        if cost is not None:
            headers["x-decisions-response-cost"] = format_cost(cost)
        response = json_response(200, body, headers)
    except DecisionError as err:
        response = error_response(module, err)
    except Exception:  # noqa: BLE001 - a gateway bug: say so in the caller's envelope, log the trace
        log.exception("internal error on %s (request %s)", request.url.path, request_id)
        response = error_response(module, DecisionError(
            status=500, message=f"Internal error in the gateway; request id {request_id}.",
            type="internal_error", code="internal_error"))
    state.record(RequestRecord(
        request_id=request_id, path=request.url.path, content_type=request.headers.get("content-type"),
        content_encoding=request.headers.get("content-encoding"), multipart=bool(decoded and decoded.multipart),
        asset_parts=tuple(decoded.parts) if decoded else (), model=model, status=response.status_code,
    ))
    return response


def is_heavy(raw: bytes, request: Request) -> bool:
    """Work worth a thread: a large body, a compressed one (size unknown until decoded) or multipart."""
    return (len(raw) >= OFF_LOOP_BYTES or bool(request.headers.get("content-encoding"))
            or "multipart/" in (request.headers.get("content-type") or "").lower())


async def run_maybe_off_loop(heavy: bool, func, *args):
    return await asyncio.to_thread(func, *args) if heavy else func(*args)


def decode_request_body(raw: bytes, request: Request, wire: str) -> DecodedBody:
    try:
        decoded = decode_body(raw, request.headers.get("content-type"), request.headers.get("content-encoding"))
    except BodyError as exc:
        raise body_invalid(exc, wire) from None
    if wire == "openai" and decoded.parts:
        raise RequestInvalid("Multipart asset parts are accepted on /v1/systemone only; send images to "
                             "/v1/decisions as input_image parts.", loc=("request_body",), code="invalid_body")
    return decoded


def body_invalid(exc: BodyError, wire: str) -> RequestInvalid:
    if wire == "openai":
        return RequestInvalid(exc.message, loc=("request_body",), status=exc.status, code="invalid_body")
    schema_error = exc.kind in ("json", "shape")
    return RequestInvalid(exc.message, loc=("body",), status=422 if schema_error else exc.status,
                          code="json_invalid" if schema_error else "invalid_body")


def check_model(body: dict, state: GatewayState, wire: str) -> str:
    """The requested model, which must be one of the configured model names."""
    loc = ("model",) if wire == "openai" else ("body", "model")
    names = state.config.model_names
    listing = f"The configured models are: {', '.join(names)}."
    model = body.get("model")
    if model is None or (isinstance(model, str) and not model.strip()):
        raise RequestInvalid(f"model is required. {listing}", loc=loc,
                             status=400 if wire == "openai" else 422, code="missing_model")
    if not isinstance(model, str):
        raise RequestInvalid(f"model must be a string naming a configured model. {listing}", loc=loc,
                             status=400 if wire == "openai" else 422, code="invalid_model")
    if model not in names:
        raise RequestInvalid(f"Unknown model '{model}'. {listing}", loc=loc, status=400, code="model_not_found")
    return model


def parse(module: ModuleType, wire: str, decoded: DecodedBody, state: GatewayState) -> DecisionRequest:
    limits = state.config.request_limits
    if wire == "systemone":
        return module.parse_request(decoded.json, limits, decoded.parts or None)
    return module.parse_request(decoded.json, limits)


def forwarded_headers(request: Request) -> dict[str, str]:
    """Client headers a provider may forward (TypeSafe-Danger-Zone-*)."""
    return {k: v for k, v in request.headers.items() if k.lower().startswith(FORWARDED_HEADER_PREFIXES)}


def json_response(status: int, body, headers: dict[str, str] | None = None) -> Response:
    try:
        content = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    except ValueError:
        raise UpstreamError(502, "The upstream answer held a non-finite number and cannot be sent as JSON.") from None
    return Response(content=content, status_code=status, media_type=JSON_TYPE, headers=headers)


def error_response(module: ModuleType, err: DecisionError) -> Response:
    status, body = module.render_error(err)
    return json_response(status, body, dict(err.headers or {}))
