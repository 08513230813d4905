"""The one request path: named steps over one per-request context.

Every route that spends money goes through here: the decision routes (``gateway/routes.py``), the
pass-throughs (``gateway/passthrough.py``) and the Python API (``gateway/sdk.py``). Each is a
tuple of steps, run in order by ``Pipeline.run``; ``record`` always runs last, whatever happened.

    decision routes   decode -> parse -> route -> call -> normalise -> render  (+ record)
    Python API                  parse -> route -> call -> normalise -> render  (+ record)
    pass-throughs     relay (decoded by the upstream) -> settle                 (+ record)

A step is ``async def step(pipeline, ctx) -> None``: it reads what earlier steps put on the
context and adds its own part, or raises a ``DecisionError`` that the route renders in the
caller's wire. Later features are one step each (docs/architecture.md says where): auth after
parse, admit (limits, budget) after auth, the cache before call, the router's retries and
fallbacks inside route/call, settle (cost, spend) before render, metrics in record.

Nothing here knows a wire: the context holds the caller's wire module, and every wire module
offers the same functions (``parse_request(body, limits, parts)``, ``render_response``,
``render_error``, ``locate``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, Protocol

from gateway.body import BodyError, DecodedBody, decode_body
from gateway.call import call_deployment
from gateway.cost import format_cost, response_cost
from gateway.registry import ModelRegistry
from providers.base import Deployment
from translators import systemone as systemone_wire
from translators.errors import BODY, MODEL, DecisionError, Loc, RequestInvalid, UpstreamError, Where
from translators.ir import DecisionRequest, DecisionResult
from translators.limits import RequestLimits
from translators.normalize import normalise_result

log = logging.getLogger("gateway.pipeline")

# Bodies this large, compressed or multipart are decoded and validated in a worker thread, so a big
# request (400 questions of 255 choices, a zstd body inflating to megabytes) never stalls the loop.
OFF_LOOP_BYTES = 64 * 1024
REQUEST_LOG_SIZE = 256
# Client headers a provider may forward upstream (TypeSafe-Danger-Zone-*; the provider decides).
FORWARDED_HEADER_PREFIXES = ("typesafe-danger-zone-",)


class Wire(Protocol):
    """What the pipeline needs of a wire module (``translators.openai``, ``translators.systemone``)."""

    def parse_request(self, body: Any, limits: RequestLimits | None = None,
                      parts: dict[str, tuple[str, bytes]] | None = None) -> DecisionRequest: ...

    def render_response(self, result: DecisionResult, req: DecisionRequest) -> dict: ...

    def render_error(self, err: DecisionError) -> tuple[int, dict]: ...

    def locate(self, where: Where) -> Loc: ...


@dataclass(slots=True)
class RequestContext:
    """Everything one request gathers on its way through the steps."""

    request_id: str
    route: str  # the path it came in on, e.g. /v1/systemone
    wire: Wire
    # decode
    raw: bytes = b""
    content_type: str | None = None
    content_encoding: str | None = None
    heavy: bool = False  # decode and parse in a worker thread
    body: DecodedBody | None = None
    forwarded_headers: dict[str, str] = field(default_factory=dict)
    # parse
    req: DecisionRequest | None = None
    identity: Any = None  # auth: the caller's key and team (later)
    # route and call
    model_group: str | None = None
    candidates: tuple[Deployment, ...] = ()
    deployment: Deployment | None = None  # the one that answered (or was last tried)
    tried: list[Deployment] = field(default_factory=list)
    result: DecisionResult | None = None
    cache: Any = None  # the cache outcome (later)
    # settle and render
    cost: float | None = None
    status: int = 0
    response: Any = None  # the rendered body (a dict)
    content: bytes | None = None  # the response bytes (encode, or a pass-through's relayed body)
    headers: dict[str, str] = field(default_factory=dict)
    error: DecisionError | None = None
    # timings: step name -> milliseconds; started is time.perf_counter() at arrival
    started: float = field(default_factory=time.perf_counter)
    timings: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # what a route's own steps keep (pass-through)


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """What the record step keeps of one request (for logs and tests; no body, no secrets)."""

    request_id: str
    path: str
    content_type: str | None
    content_encoding: str | None
    multipart: bool
    asset_parts: tuple[str, ...]
    model: str | None
    status: int
    deployment: str | None = None  # provider/model that answered
    cost: float | None = None
    latency_ms: float = 0.0


Step = Callable[["Pipeline", RequestContext], Awaitable[None]]


class Pipeline:
    """The steps' shared parts: the model registry, the upstream client, the validation limits."""

    def __init__(self, registry: ModelRegistry, upstream, limits: RequestLimits | None = None, *,
                 rng: random.Random | None = None):
        self.registry = registry
        self.upstream = upstream
        self.limits = limits
        self.rng = rng or random.Random()
        self.request_log: deque[RequestRecord] = deque(maxlen=REQUEST_LOG_SIZE)

    async def run(self, ctx: RequestContext, steps: Sequence[Step], *, raise_errors: bool = False) -> RequestContext:
        """Run ``steps`` in order. A ``DecisionError`` stops them and is rendered in the caller's
        wire onto the context (or raised, for the Python API); ``record`` runs in every case."""
        try:
            for step in steps:
                await step(self, ctx)
        except DecisionError as err:
            fail(ctx, err)
            if raise_errors:
                raise
        except Exception:  # a gateway bug: say so in the caller's envelope, log the trace
            if raise_errors:
                raise
            log.exception("internal error on %s (request %s)", ctx.route, ctx.request_id)
            fail(ctx, DecisionError(status=500, message=f"Internal error in the gateway; request id "
                                    f"{ctx.request_id}.", type="internal_error", code="internal_error"))
        finally:
            record(self, ctx)
        return ctx

    def find(self, request_id: str) -> RequestRecord | None:
        for entry in reversed(self.request_log):
            if entry.request_id == request_id:
                return entry
        return None


# ---- the steps ----------------------------------------------------------------------------------


async def decode(pipeline: Pipeline, ctx: RequestContext) -> None:
    """Raw bytes -> JSON object and multipart asset parts (zstd / gzip / multipart undone)."""
    ctx.heavy = is_heavy(ctx)
    ctx.body = await _maybe_off_loop(ctx.heavy, decode_request_body, ctx)


async def parse(pipeline: Pipeline, ctx: RequestContext) -> None:
    """The model group must exist; the body is validated by the caller's wire into the IR."""
    assert ctx.body is not None
    ctx.model_group = check_model(ctx.body.json, pipeline.registry)
    ctx.candidates = pipeline.registry.require_group(ctx.model_group)
    req = await _maybe_off_loop(ctx.heavy, parse_body, ctx, pipeline.limits)
    if ctx.forwarded_headers:
        req = replace(req, headers={**req.headers, **ctx.forwarded_headers})
    ctx.req = req


async def route(pipeline: Pipeline, ctx: RequestContext) -> None:
    """Choose the deployment to ask. One deployment of the group at random until the router (its
    strategies, pre-call filter, cooldowns) takes this step over."""
    if not ctx.candidates:
        assert ctx.model_group is not None
        ctx.candidates = pipeline.registry.require_group(ctx.model_group)
    candidates = ctx.candidates
    ctx.deployment = candidates[0] if len(candidates) == 1 else pipeline.rng.choice(candidates)


async def call(pipeline: Pipeline, ctx: RequestContext) -> None:
    """Ask the chosen deployment (capability checks, split over its limits, upstream calls, merge)."""
    assert ctx.req is not None and ctx.deployment is not None
    ctx.tried.append(ctx.deployment)
    started = time.perf_counter()
    try:
        ctx.result = await call_deployment(pipeline.upstream, ctx.req, ctx.deployment)
    finally:
        ctx.timings["upstream"] = (time.perf_counter() - started) * 1000.0


async def normalise(pipeline: Pipeline, ctx: RequestContext) -> None:
    """Probabilities summed to 1, score recomputed, confidence filled in (translators.normalize)."""
    assert ctx.result is not None and ctx.req is not None and ctx.deployment is not None
    try:
        ctx.result = normalise_result(ctx.result, ctx.req)
    except UpstreamError as err:
        err.provider = err.provider or ctx.deployment.provider
        raise


async def render(pipeline: Pipeline, ctx: RequestContext) -> None:
    """The answer in the caller's wire, with the model and cost headers."""
    assert ctx.result is not None and ctx.req is not None and ctx.deployment is not None
    dep = ctx.deployment
    ctx.response = ctx.wire.render_response(ctx.result, ctx.req)
    ctx.cost = response_cost(ctx.result.usage, dep, ctx.result.model)
    ctx.headers["x-decisions-model"] = f"{dep.provider}/{dep.model}"
    if ctx.cost is not None:
        ctx.headers["x-decisions-response-cost"] = format_cost(ctx.cost)
    ctx.status = 200


async def encode(pipeline: Pipeline, ctx: RequestContext) -> None:
    """The rendered answer as JSON bytes; a non-finite number is never sent, nor made up (502)."""
    try:
        ctx.content = dumps(ctx.response)
    except ValueError:
        raise UpstreamError(502, "The upstream answer held a non-finite number and cannot be sent as JSON.",
                            provider=ctx.deployment.provider if ctx.deployment else "") from None


def dumps(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def fail(ctx: RequestContext, err: DecisionError) -> None:
    """The error in the caller's envelope, as the response."""
    ctx.error = err
    ctx.status, ctx.response = ctx.wire.render_error(err)
    ctx.headers = dict(err.headers or {})
    ctx.content = dumps(ctx.response)


def record(pipeline: Pipeline, ctx: RequestContext) -> None:
    """Keep a short record of the request (the log line and metrics join here later)."""
    body = ctx.body
    dep = ctx.deployment
    pipeline.request_log.append(RequestRecord(
        request_id=ctx.request_id, path=ctx.route, content_type=ctx.content_type,
        content_encoding=ctx.content_encoding, multipart=bool(body and body.multipart),
        asset_parts=tuple(body.parts) if body else (), model=ctx.model_group, status=ctx.status,
        deployment=f"{dep.provider}/{dep.model}" if dep is not None else None, cost=ctx.cost,
        latency_ms=(time.perf_counter() - ctx.started) * 1000.0,
    ))


DECISION_STEPS: tuple[Step, ...] = (decode, parse, route, call, normalise, render, encode)
IR_STEPS: tuple[Step, ...] = (parse, route, call, normalise, render)  # a body that is already JSON


class Decided(NamedTuple):
    result: DecisionResult
    deployment: Deployment


async def decide_once(registry: ModelRegistry, upstream, req: DecisionRequest, model_name: str) -> Decided:
    """The IR in, the normalised result and the deployment that answered out (route, call, normalise).
    Errors are raised, never rendered, so the context's wire is only a placeholder."""
    ctx = RequestContext(request_id="", route="python:decide", wire=systemone_wire, req=req, model_group=model_name)
    await Pipeline(registry, upstream).run(ctx, (route, call, normalise), raise_errors=True)
    assert ctx.result is not None and ctx.deployment is not None
    return Decided(ctx.result, ctx.deployment)


# ---- helpers of the steps -----------------------------------------------------------------------


def is_heavy(ctx: RequestContext) -> bool:
    """Work worth a thread: a large body, a compressed one (size unknown until decoded) or multipart."""
    return (len(ctx.raw) >= OFF_LOOP_BYTES or bool(ctx.content_encoding)
            or "multipart/" in (ctx.content_type or "").lower())


async def _maybe_off_loop(heavy: bool, func: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.to_thread(func, *args) if heavy else func(*args)


def decode_request_body(ctx: RequestContext) -> DecodedBody:
    try:
        return decode_body(ctx.raw, ctx.content_type, ctx.content_encoding)
    except BodyError as exc:
        raise body_invalid(exc) from None


def body_invalid(exc: BodyError) -> RequestInvalid:
    """An unreadable body: unreadable JSON is a schema problem (422 on System One), the rest keep
    their status (400 bad encoding, 413 too large, 415 unsupported)."""
    schema = exc.kind in ("json", "shape")
    return RequestInvalid(exc.message, loc=BODY, status=exc.status, schema=schema,
                          code="json_invalid" if schema else "invalid_body")


def parse_body(ctx: RequestContext, limits: RequestLimits | None) -> DecisionRequest:
    assert ctx.body is not None
    return ctx.wire.parse_request(ctx.body.json, limits, ctx.body.parts or None)


def check_model(body: Mapping[str, Any], registry: ModelRegistry) -> str:
    """The requested model: a string naming a configured model group."""
    listing = f"The configured models are: {registry.listing}."
    model = body.get("model")
    if model is None or (isinstance(model, str) and not model.strip()):
        raise RequestInvalid(f"model is required. {listing}", loc=MODEL, schema=True, code="missing_model")
    if not isinstance(model, str):
        raise RequestInvalid(f"model must be a string naming a configured model. {listing}", loc=MODEL,
                             schema=True, code="invalid_model")
    if model not in registry and not registry.allow_adhoc:
        raise RequestInvalid(f"Unknown model '{model}'. {listing}", loc=MODEL, code="model_not_found")
    return model


def forwarded_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Client headers a provider may forward (TypeSafe-Danger-Zone-*)."""
    return {k: v for k, v in headers.items() if k.lower().startswith(FORWARDED_HEADER_PREFIXES)}
