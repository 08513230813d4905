"""Pass-through routes: raw requests relayed to one upstream with the key from the environment.

* ``POST /laya/v1/systemone``, ``POST /bespoke/v1/systemone``: System One requests to the
  configured Laya or Nimble server (``LAYA_API_BASE`` / ``LAYA_API_KEY``, ``BESPOKE_API_BASE`` /
  ``BESPOKE_API_KEY``); an unset base answers 503 naming the setting.
* ``/typesafe/{path}`` (any method): to ``TYPESAFE_API_BASE`` or https://api.typesafe.ai with
  ``Authorization: Bearer $TYPESAFE_API_KEY``. A successful decision's cost (from the response
  ``usage``, cached tokens priced as such; gateway/cost.py) is sent in ``x-decisions-response-cost``
  and logged.

The upstream's status and body come back as they are (except the gateway's key, blanked out should
an upstream echo it); gateway-side failures (not configured, unreachable) answer in System One's
``{"detail": {...}}`` envelope.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping

from fastapi import APIRouter, Request
from fastapi.responses import Response

from gateway.cost import format_cost, response_cost
from providers.base import Deployment, UpstreamRequest, UpstreamResponse
from translators.errors import DecisionError, UpstreamError

log = logging.getLogger("gateway.passthrough")

router = APIRouter()

TYPESAFE_DEFAULT_BASE = "https://api.typesafe.ai"
COST_HEADER = "x-decisions-response-cost"
PASSTHROUGH_TIMEOUT_S = 120.0
# Client headers never relayed upstream: the gateway's own auth, hop-by-hop and length headers.
DROPPED_REQUEST_HEADERS = frozenset({
    "authorization", "x-api-key", "api-key", "host", "content-length", "connection", "keep-alive",
    "transfer-encoding", "cookie", "te", "upgrade", "proxy-authorization", "accept-encoding",
})
RELAYED_RESPONSE_HEADERS = ("content-type", "retry-after", "retry-after-ms",
                            "x-typesafe-request-id", "x-request-id")
SELF_HOSTED = {
    "laya": ("Laya", "LAYA_API_BASE", "LAYA_API_KEY"),
    "bespoke": ("Bespoke Nimble", "BESPOKE_API_BASE", "BESPOKE_API_KEY"),
}


class NotConfigured(DecisionError):
    def __init__(self, message: str):
        super().__init__(status=503, message=message, type="service_unavailable_error", code="not_configured")


@router.post("/laya/v1/systemone", include_in_schema=False)
async def laya_systemone(request: Request) -> Response:
    return await _self_hosted(request, "laya")


@router.post("/bespoke/v1/systemone", include_in_schema=False)
async def bespoke_systemone(request: Request) -> Response:
    return await _self_hosted(request, "bespoke")


@router.api_route("/typesafe/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                  include_in_schema=False)
async def typesafe_passthrough(path: str, request: Request) -> Response:
    try:
        key = _env("TYPESAFE_API_KEY")
        if not key:
            raise NotConfigured("The TypeSafe pass-through is not configured: set TYPESAFE_API_KEY.")
        base = _env("TYPESAFE_API_BASE") or TYPESAFE_DEFAULT_BASE
        url = typesafe_url(base, path)
        if request.url.query:
            url += "?" + request.url.query
        resp = await _relay(request, url, key, "typesafe")
    except DecisionError as err:
        return _error(err)
    headers = _relayed_headers(resp)
    cost = typesafe_cost(resp, requested_model(await request.body())) if request.method == "POST" else None
    if cost is not None:
        headers[COST_HEADER] = format_cost(cost)
        log.info("typesafe pass-through %s %s: status %s, cost %s", request.method, "/" + path, resp.status,
                 headers[COST_HEADER])
    return Response(content=without_key(resp.body, key), status_code=resp.status, headers=headers)


def typesafe_url(base: str, path: str) -> str:
    """``base`` + ``/path``; a base given with ``/v1`` (as the provider accepts it) is not doubled."""
    base, path = base.rstrip("/"), path.lstrip("/")
    if base.endswith("/v1") and (path == "v1" or path.startswith("v1/")):
        base = base[: -len("/v1")]
    return f"{base}/{path}"


async def _self_hosted(request: Request, name: str) -> Response:
    label, base_env, key_env = SELF_HOSTED[name]
    try:
        base = _env(base_env)
        if not base:
            raise NotConfigured(f"{label} is not configured: set {base_env} to the server's address.")
        from providers.systemone_base import join_url

        key = _env(key_env)
        resp = await _relay(request, join_url(base, "/v1/systemone"), key, name)
    except DecisionError as err:
        return _error(err)
    return Response(content=without_key(resp.body, key), status_code=resp.status, headers=_relayed_headers(resp))


def without_key(body: bytes, key: str | None) -> bytes:
    """The relayed body with the gateway's own key blanked out (an upstream may echo it in an error)."""
    if not key or len(key) < 4 or not body:
        return body
    return body.replace(key.encode(), b"[redacted]")


async def _relay(request: Request, url: str, key: str | None, provider: str) -> UpstreamResponse:
    headers = {k: v for k, v in request.headers.items() if k.lower() not in DROPPED_REQUEST_HEADERS}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body = await request.body()
    upstream_request = UpstreamRequest(method=request.method, url=url, headers=headers,
                                       content=body if body else None, timeout=PASSTHROUGH_TIMEOUT_S)
    return await _upstream(request).send(upstream_request, provider)


def _upstream(request: Request):
    state = getattr(request.app.state, "gateway", None)
    if state is not None and getattr(state, "upstream", None) is not None:
        return state.upstream
    shared = getattr(request.app.state, "passthrough_upstream", None)
    if shared is None:  # a bare app without the gateway state (the router mounted on its own)
        from gateway.upstream import Upstream

        shared = request.app.state.passthrough_upstream = Upstream()
    return shared


def requested_model(body: bytes) -> str:
    """The model a JSON request asked for (TypeSafe's default when it names none or is not JSON)."""
    try:
        model = json.loads(body).get("model")
    except (ValueError, UnicodeDecodeError, AttributeError):
        model = None
    return model if isinstance(model, str) and model else "jev-latest"


def typesafe_cost(resp: UpstreamResponse, requested: str = "jev-latest") -> float | None:
    """The price of a successful decision from its ``usage`` (None for anything else).

    Priced at the answering model's row when it has one, else at the requested model's
    (``jev-latest`` answered by ``jev-1.13-20260917`` costs what ``jev-latest`` costs).
    """
    if not 200 <= resp.status < 300:
        return None
    try:
        payload = json.loads(resp.body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("usage"), dict):
        return None
    from translators.upstream_values import usage as read_usage

    try:
        usage = read_usage(payload["usage"])
    except UpstreamError:
        return None
    answered = payload.get("model") if isinstance(payload.get("model"), str) else None
    dep = Deployment(model_name=f"typesafe/{requested}", provider="typesafe", model=requested)
    return response_cost(usage, dep, answered)


def _relayed_headers(resp: UpstreamResponse) -> dict[str, str]:
    return {name: resp.headers[name] for name in RELAYED_RESPONSE_HEADERS if name in resp.headers}


def _error(err: DecisionError) -> Response:
    body = {"detail": {"message": err.message, "error_type": err.code or err.type}}
    headers = {"content-type": "application/json", **(err.headers or {})}
    return Response(content=json.dumps(body).encode(), status_code=err.status, headers=headers)


def _env(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    value = ((environ if environ is not None else os.environ).get(name) or "").strip()
    return value or None
