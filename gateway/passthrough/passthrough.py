"""Pass-through routes: raw requests relayed to one upstream, through the pipeline's relay steps.

* ``POST /laya/v1/systemone``, ``POST /bespoke/v1/systemone``: System One requests to the
  configured Laya or Nimble server (``LAYA_API_BASE`` / ``LAYA_API_KEY``, ``BESPOKE_API_BASE`` /
  ``BESPOKE_API_KEY``); an unset base answers 503 naming the setting.
* ``/typesafe/{path}``: to ``TYPESAFE_API_BASE`` or https://api.typesafe.ai with
  ``Authorization: Bearer $TYPESAFE_API_KEY``. A successful decision's cost (from the response
  ``usage``, cached tokens priced as such; gateway/spend/cost.py) is sent in ``x-decisions-response-cost``
  and logged.

Settings are read once, when the gateway starts (``PassthroughSettings``). Requests go through
``Pipeline.run``: the key and its pass-through grant (``authenticate``), the model it names and the
key's limits and budget (gateway/passthrough/admit.py: ``authorize``, ``admit``, ``settle``), then
``relay`` and ``price``, so a key keeps its promises here as on the decision routes, and the record
step (spend, metrics) covers them too. The upstream's status and
body come back as they are (except the gateway's key, blanked out should an upstream echo it);
gateway-side failures (not configured, unreachable) answer in System One's ``{"detail": {...}}``
envelope.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.context import RequestContext
from gateway.passthrough import admit as keys
from gateway.passthrough.admit import TYPESAFE_DEFAULT_MODEL, named_model
from gateway.passthrough.policy import (
    check_method,
    forwarded_request_headers,
    raw_subpath,
    relayed_response_headers,
    upstream_url,
)
from gateway.pipeline import Pipeline, Step, authenticate, read
from gateway.spend.cost import format_cost, response_cost
from providers.base import Deployment, UpstreamRequest, UpstreamResponse
from providers.http_json import join_url
from translators import systemone as systemone_wire
from translators.errors import DecisionError, UpstreamError

log = logging.getLogger("gateway.passthrough")

TYPESAFE_DEFAULT_BASE = "https://api.typesafe.ai"
COST_HEADER = "x-decisions-response-cost"
PASSTHROUGH_TIMEOUT_S = 120.0
@dataclass(frozen=True)
class Target:
    """Where one pass-through goes: its provider name, label, base URL and key (None: no key)."""

    provider: str
    label: str
    base: str | None
    key: str | None
    missing: str | None = None  # the sentence for a 503 when the target is not configured


@dataclass(frozen=True)
class PassthroughSettings:
    """The pass-through targets, read from the environment once at start."""

    typesafe: Target
    laya: Target
    bespoke: Target

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> PassthroughSettings:
        env = os.environ if environ is None else environ
        typesafe_key = _env(env, "TYPESAFE_API_KEY")
        return cls(
            typesafe=Target("typesafe", "TypeSafe", _env(env, "TYPESAFE_API_BASE") or TYPESAFE_DEFAULT_BASE,
                            typesafe_key, None if typesafe_key else
                            "The TypeSafe pass-through is not configured: set TYPESAFE_API_KEY."),
            laya=_self_hosted(env, "laya", "Laya", "LAYA_API_BASE", "LAYA_API_KEY"),
            bespoke=_self_hosted(env, "bespoke", "Bespoke Nimble", "BESPOKE_API_BASE", "BESPOKE_API_KEY"),
        )


def _self_hosted(env: Mapping[str, str], provider: str, label: str, base_env: str, key_env: str) -> Target:
    base = _env(env, base_env)
    return Target(provider, label, base, _env(env, key_env),
                  None if base else f"{label} is not configured: set {base_env} to the server's address.")


class NotConfigured(DecisionError):
    def __init__(self, message: str):
        super().__init__(status=503, message=message, type="service_unavailable_error", code="not_configured")


# ---- routes ---------------------------------------------------------------------------------------


async def laya_systemone(request: Request) -> Response:
    target = request.app.state.gateway.passthrough.laya
    return await _passthrough(request, target, lambda base: join_url(base, "/v1/systemone"))


async def bespoke_systemone(request: Request) -> Response:
    target = request.app.state.gateway.passthrough.bespoke
    return await _passthrough(request, target, lambda base: join_url(base, "/v1/systemone"))


async def typesafe_passthrough(request: Request) -> Response:
    target = request.app.state.gateway.passthrough.typesafe
    path, query = raw_subpath(request.scope, "/typesafe/"), request.url.query
    return await _passthrough(request, target, lambda base: upstream_url(base, path, query),
                              priced=request.method == "POST")


ROUTES = [
    Route("/laya/v1/systemone", laya_systemone, methods=["POST"], include_in_schema=False),
    Route("/bespoke/v1/systemone", bespoke_systemone, methods=["POST"], include_in_schema=False),
    # every method reaches the handler, so the ones TypeSafe's API lacks get a clear 405 in the envelope
    Route("/typesafe/{path:path}", typesafe_passthrough, methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
          include_in_schema=False),
]


async def _passthrough(request: Request, target: Target, url_for, *, priced: bool = False) -> Response:
    pipeline: Pipeline = request.app.state.gateway.pipeline
    ctx = RequestContext(request_id=request.scope["state"]["request_id"], route=request.scope["path"],
                         wire=systemone_wire, passthrough=True, source=request, json_only=request.method == "POST",
                         content_type=request.headers.get("content-type"),
                         content_encoding=request.headers.get("content-encoding"))
    ctx.extra.update(target=target, url_for=url_for, method=request.method, client_headers=request.headers)
    await pipeline.run(ctx, PRICED_RELAY_STEPS if priced else RELAY_STEPS)
    return Response(content=ctx.content, status_code=ctx.status, headers=ctx.headers)


# ---- steps ------------------------------------------------------------------------------------------


async def relay(pipeline: Pipeline, ctx: RequestContext) -> None:
    """Send the caller's request, as it came, to the target with the gateway's key."""
    target: Target = ctx.extra["target"]
    if target.missing or target.base is None:
        raise NotConfigured(target.missing or f"{target.label} is not configured.")
    headers = forwarded_request_headers(ctx.extra["client_headers"].items())
    if target.key:
        headers["Authorization"] = f"Bearer {target.key}"
    upstream_request = UpstreamRequest(method=ctx.extra["method"], url=ctx.extra["url_for"](target.base),
                                       headers=headers, content=ctx.raw or None, timeout=PASSTHROUGH_TIMEOUT_S)
    ctx.model_group = f"{target.provider}/{requested_model(ctx.raw, '')}".rstrip("/")  # for the spend log
    resp: UpstreamResponse = await pipeline.upstream.send(upstream_request, target.provider)
    ctx.extra["upstream_response"] = resp
    ctx.status = resp.status
    ctx.content = without_key(resp.body, target.key)
    ctx.headers = {**ctx.headers, **relayed_response_headers(resp.headers, [target.key])}


async def price(pipeline: Pipeline, ctx: RequestContext) -> None:
    """The price of a successful TypeSafe decision, in the cost header and the log."""
    requested = requested_model(ctx.raw)
    ctx.model_group = f"typesafe/{requested}"
    ctx.deployment = Deployment(model_name=ctx.model_group, provider="typesafe", model=requested)
    ctx.cost = typesafe_cost(ctx.extra["upstream_response"], requested)
    if ctx.cost is not None:
        ctx.headers[COST_HEADER] = format_cost(ctx.cost)
        log.info("typesafe pass-through %s %s: status %s, cost %s", ctx.extra["method"], ctx.route, ctx.status,
                 ctx.headers[COST_HEADER])


async def allow(pipeline: Pipeline, ctx: RequestContext) -> None:
    """Only the methods TypeSafe's API has (GET and POST): 405 otherwise."""
    check_method(ctx.extra["method"])


RELAY_STEPS: tuple[Step, ...] = (authenticate, allow, read, keys.authorize, keys.admit, relay, keys.settle)
PRICED_RELAY_STEPS: tuple[Step, ...] = (authenticate, allow, read, keys.authorize, keys.admit, relay, price,
                                        keys.settle)


# ---- helpers ------------------------------------------------------------------------------------------


def without_key(body: bytes, key: str | None) -> bytes:
    """The relayed body with the gateway's own key blanked out (an upstream may echo it in an error)."""
    if not key or len(key) < 4 or not body:
        return body
    return body.replace(key.encode(), b"[redacted]")


def requested_model(body: bytes, default: str = TYPESAFE_DEFAULT_MODEL) -> str:
    """The model a JSON request asked for (``default`` when it names none or is not JSON)."""
    return named_model(body, default)


def typesafe_cost(resp: UpstreamResponse, requested: str = TYPESAFE_DEFAULT_MODEL) -> float | None:
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


def _env(environ: Mapping[str, str], name: str) -> str | None:
    value = (environ.get(name) or "").strip()
    return value or None
