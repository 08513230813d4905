"""The one request path: named steps over one per-request context.

Every route that spends money goes through here: the decision routes (``gateway/edge/routes.py``), the
pass-throughs (``gateway/passthrough/passthrough.py``) and the Python API (``gateway/sdk.py``). Each is a
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
import logging
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from gateway.admission.admission import Admission
from gateway.auth.identity import Authenticator, check_model_allowed
from gateway.auth.routes import check_route_allowed
from gateway.cache.steps import cache_lookup, cache_merge
from gateway.calibration.apply import CalibratorSet
from gateway.calibration.step import calibrate, check_header
from gateway.config.limits import DEFAULT_LIMITS_SETTINGS, LimitsSettings
from gateway.config.registry import ModelRegistry
from gateway.context import RequestContext
from gateway.decisionlog.settings import DecisionLogSettings
from gateway.decode.body import (  # OFF_LOOP_BYTES: bodies this large (or compressed, or multipart) decode off the loop
    OFF_LOOP_BYTES,  # noqa: F401 - re-exported for the pipeline's tests
    BodyError,
    ClientDisconnected,
    DecodedBody,
    HeavyDecodes,
    check_content_type,
    decode_body,
    needs_thread,
    read_body_capped,
)
from gateway.json_codec import json_bytes
from gateway.router import Router
from gateway.router.headers import deadline_ms_of, routing_headers
from gateway.spend.cost import format_cost
from gateway.spend.estimate import TokenRatios, bounds, estimate
from gateway.spend.log import SpendLog
from providers.base import Deployment
from providers.http_json import DANGER_ZONE_PREFIX
from translators import systemone as systemone_wire
from translators.errors import BODY, MODEL, DecisionError, RequestInvalid, UpstreamError
from translators.ir import DecisionRequest, DecisionResult
from translators.limits import RequestLimits

if TYPE_CHECKING:
    from gateway.cache import AnswerCache
    from gateway.observability import Observer

log = logging.getLogger("gateway.pipeline")

REQUEST_LOG_SIZE = 256
# Client headers a provider may forward upstream (TypeSafe-Danger-Zone-*; the provider decides).
FORWARDED_HEADER_PREFIXES = (DANGER_ZONE_PREFIX,)


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
                 router: Router | None = None, settings: LimitsSettings = DEFAULT_LIMITS_SETTINGS):
        self.registry = registry
        self.upstream = upstream
        self.limits = limits  # what a decision request may hold (translators.limits)
        self.settings = settings  # what a request body may be (size, depth, parts, read deadline)
        self.heavy = HeavyDecodes(settings.max_concurrent_heavy_decodes)
        self.router = router or Router.in_memory(registry, upstream)
        self.auth: Authenticator | None = None  # set at start when the gateway has one (gateway/auth)
        self.spend: SpendLog | None = None  # set at start: the spend log's outbox and database
        self.admission: Admission | None = None  # the keys' and teams' limits and budgets
        self.observer: Observer | None = None  # metrics, the request log line, traces (gateway/observability)
        self.cache: AnswerCache | None = None  # the per-question answer cache (gateway/cache)
        self.decision_log = DecisionLogSettings()  # capture levels and calibration switches (gateway/decisionlog)
        self.calibrators = CalibratorSet()  # the active calibrators (gateway/calibration), loaded from the database
        self._background: set[asyncio.Future[Any]] = set()
        self.token_ratios = TokenRatios()  # per deployment and content kind: counted / estimated input tokens
        self.request_log: deque[RequestRecord] = deque(maxlen=REQUEST_LOG_SIZE)

    @property
    def rng(self) -> random.Random:
        """The router's random source (tests seed it)."""
        return self.router.rng

    async def run(self, ctx: RequestContext, steps: Sequence[Step], *, raise_errors: bool = False) -> RequestContext:
        """Run ``steps`` in order. A ``DecisionError`` stops them and is rendered in the caller's
        wire onto the context (or raised, for the Python API); ``record`` runs in every case."""
        if self.observer is not None:
            self.observer.begin(self, ctx)
        try:
            for step in steps:
                await step(self, ctx)
        except DecisionError as err:
            fail(ctx, err)
            if raise_errors:
                raise
        except ClientDisconnected:
            client_went_away(ctx, "before its body arrived")
        except asyncio.CancelledError:
            if not ctx.client_gone:
                raise
            client_went_away(ctx, "while it was being answered; its upstream calls were cancelled")
        except Exception:  # a gateway bug: say so in the caller's envelope, log the trace
            if raise_errors:
                raise
            log.exception("internal error on %s (request %s)", ctx.route, ctx.request_id)
            fail(ctx, DecisionError(status=500, message=f"Internal error in the gateway; request id "
                                    f"{ctx.request_id}.", type="internal_error", code="internal_error"))
        finally:
            ctx.answered = True  # the watcher ends when the server says the response went out (no cancel)
            if ctx.ticket is not None and ctx.ticket.open and self.admission is not None:
                await self.admission.release(ctx.ticket)  # no answer: every reservation given back
            record(self, ctx)
        return ctx

    async def close(self) -> None:
        if self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        self.heavy.close()

    def background(self, work: Awaitable[Any]) -> None:
        """Run ``work`` behind the response, keeping a reference until it is done."""
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def find(self, request_id: str) -> RequestRecord | None:
        for entry in reversed(self.request_log):
            if entry.request_id == request_id:
                return entry
        return None


# ---- the steps ----------------------------------------------------------------------------------


async def authenticate(pipeline: Pipeline, ctx: RequestContext) -> None:
    """The caller's key (``Authorization: Bearer``, ``x-api-key`` or ``api-key``) -> identity, before
    the body is read: 401 for a missing or unknown key, 403 for a blocked or expired one. Without a
    master key every route is open (the anonymous identity). A key may call only the routes its
    ``allowed_routes`` / ``allowed_passthrough_routes`` grant (gateway/auth/routes.py): 403 otherwise."""
    if pipeline.auth is not None and ctx.source is not None:
        ctx.identity = await pipeline.auth.resolve_headers(ctx.source.headers)
        check_route_allowed(ctx.identity, ctx.route, passthrough=ctx.passthrough)


async def authorize(pipeline: Pipeline, ctx: RequestContext) -> None:
    """403 when the key (or its team) may not use the requested model group. As LiteLLM does, a key
    may call an alias when it may use the alias or the group the alias answers as."""
    if ctx.identity is not None and ctx.model_group is not None:
        check_model_allowed(ctx.identity, ctx.model_group, requested=ctx.model_requested)


async def admit(pipeline: Pipeline, ctx: RequestContext) -> None:
    """The key's and its team's rate limits (rpm, tpm, parallel requests) and budget, counted
    atomically in the shared state (Redis with several gateways): 429 with Retry-After over a
    limit, 400 over a budget. The budget is reserved at the request's worst-case cost (the learned
    bound of each deployment it may reach, gateway/spend/estimate.py) and settled to the true cost
    after the answer."""
    if pipeline.admission is None or ctx.identity is None or not ctx.identity.limited:
        return
    assert ctx.req is not None and ctx.model_group is not None
    if not ctx.req.questions:  # the cache answered every question: the request counts, it reserves nothing
        ctx.ticket = await pipeline.admission.admit(ctx.identity, estimated_tokens=0, worst_cost_usd=0.0)
        ctx.headers.update(ctx.ticket.headers)
        return
    ctx.extra["estimate"] = est = estimate(ctx.req)
    ctx.estimated_tokens = est.tokens
    reachable = [dep for name in pipeline.router.reachable_groups(ctx.model_group, ctx.identity.models)
                 for dep in pipeline.registry.group(name)]  # the fallbacks the key may not use are never tried
    tokens, worst = bounds(pipeline.token_ratios, est, reachable)
    ctx.ticket = await pipeline.admission.admit(ctx.identity, estimated_tokens=tokens, worst_cost_usd=worst)
    ctx.headers.update(ctx.ticket.headers)


async def settle(pipeline: Pipeline, ctx: RequestContext) -> None:
    """Reservations become the true figures (an unknown cost keeps the worst case, never $0); each
    answer teaches the token bound of the deployment that gave it (gateway/spend/estimate.py); the
    key's spend goes out in x-litellm-key-spend, the counted spend with this call's cost."""
    usage = ctx.result.usage if ctx.result is not None else None
    answered = {dep.id for dep in ctx.tried}
    if pipeline.admission is not None and usage is not None and ctx.deployment is not None and len(answered) <= 1:
        est = ctx.extra.get("estimate") or (estimate(ctx.req) if ctx.req is not None and ctx.req.questions else None)
        if est is not None:
            pipeline.token_ratios.observe(ctx.deployment, est, usage.input_tokens, ctx.cost)
    if ctx.ticket is None or pipeline.admission is None:
        return
    ticket, ctx.ticket = ctx.ticket, None  # settling owns it now: the run's end does not release it
    ctx.settled = ticket
    settling = pipeline.admission.settle(ticket, tokens=usage.total_tokens if usage else None, cost_usd=ctx.cost)
    if any(hold.kind == "budget" and hold.scope.kind == "key" for hold in ticket.holds):
        await settling  # a key with a budget: its counted spend, this call's cost included, goes out
        spent = ticket.key_spend_usd
    else:
        # Behind the response: the reservation only gets smaller (or stays, for an unknown cost), so
        # the caller need not wait for it; the x-ratelimit-* headers are the ones admit counted.
        pipeline.background(settling)
        spent = await pipeline.admission.count_spend(ctx.identity, ctx.cost)  # a key without a budget
    if spent is None and ctx.identity is not None and ctx.identity.key_limits.spend is not None:
        spent = float(ctx.identity.key_limits.spend) + (ctx.cost or 0.0)  # no counter: the database's, and this call
    if spent is not None:
        ctx.headers["x-litellm-key-spend"] = format_cost(spent)


async def read(pipeline: Pipeline, ctx: RequestContext) -> None:
    """The body from the client: a JSON route checks the Content-Type first; the body is read with
    the size cap (413 as soon as it is over) and the read deadline (408). Once it is in, a client
    that goes away cancels the rest of the request (its upstream calls included): 499."""
    try:
        if ctx.json_only:
            check_content_type(ctx.content_type, ctx.allow_multipart)
        ctx.raw = await read_body_capped(ctx.source, pipeline.settings.max_request_body_bytes,
                                         timeout_s=pipeline.settings.request_read_timeout_s)
    except BodyError as exc:
        raise body_invalid(exc) from None
    ctx.client_watch = watch_client(ctx, ctx.source.receive)


async def decode(pipeline: Pipeline, ctx: RequestContext) -> None:
    """Raw bytes -> JSON object and multipart asset parts (zstd / gzip / multipart undone); large,
    compressed or multipart bodies in the bounded heavy-decode pool."""
    ctx.heavy = needs_thread(len(ctx.raw), ctx.content_type, ctx.content_encoding)
    ctx.body = await pipeline.heavy.run(decode_request_body, ctx, pipeline.settings) if ctx.heavy \
        else decode_request_body(ctx, pipeline.settings)


async def parse(pipeline: Pipeline, ctx: RequestContext) -> None:
    """The model group must exist; the body is validated by the caller's wire into the IR."""
    assert ctx.body is not None
    ctx.model_requested = check_model(ctx.body.json, pipeline.registry, getattr(ctx.identity, "models", None))
    ctx.model_group = pipeline.registry.resolve(ctx.model_requested)  # a model_group_alias answers as its group
    pipeline.registry.require_group(ctx.model_group)
    ctx.calibration_header = check_header(ctx)
    req = await pipeline.heavy.run(parse_body, ctx, pipeline.limits) if ctx.heavy \
        else parse_body(ctx, pipeline.limits)
    if ctx.forwarded_headers:
        req = replace(req, headers={**req.headers, **ctx.forwarded_headers})
    ctx.req = req


async def route(pipeline: Pipeline, ctx: RequestContext) -> None:
    """The router answers: it picks a deployment of the group (strategy, pre-call filter, cooldowns),
    and for each attempt runs gateway/upstream/call.py (build, send, parse, normalise), with retries,
    fallbacks (only those among the caller's models), hedging and the deadline around them."""
    assert ctx.req is not None and ctx.model_group is not None
    if not ctx.req.questions:  # the cache answered every question: no upstream call
        return
    deadline_ms = deadline_ms_of(ctx.deadline_header)
    try:
        routed = await pipeline.router.route(ctx.req, ctx.model_group, deadline_ms,
                                             allowed=getattr(ctx.identity, "models", None))
    except UpstreamError as err:
        attempts = getattr(err, "attempts", None)
        if attempts is not None:  # the failed request's true counts go out with its error
            ctx.retries, ctx.fallbacks = attempts.retries, len(attempts.fallbacks_tried)
            ctx.hedged, ctx.upstream_ms = attempts.hedged, attempts.upstream_ms
            ctx.headers.update(routing_headers(ctx.model_group, None, attempts.retries,
                                               len(attempts.fallbacks_tried), attempts.hedged))
        raise
    ctx.result, ctx.cost = routed.result, routed.cost
    ctx.retries, ctx.fallbacks = routed.retries, routed.fallbacks
    ctx.hedged, ctx.upstream_ms = routed.hedged, routed.upstream_ms
    ctx.deployment = routed.deployments[0]
    ctx.tried = routed.deployments
    ctx.headers.update(routing_headers(ctx.model_group, routed.deployments, routed.retries, routed.fallbacks,
                                       routed.hedged))
    if routed.cooling_tried:
        ctx.headers["x-decisions-cooldown"] = "every deployment of the group was cooling down; tried anyway"


async def render(pipeline: Pipeline, ctx: RequestContext) -> None:
    """The answer in the caller's wire, with the model and cost headers."""
    assert ctx.result is not None and ctx.req is not None and ctx.deployment is not None
    ctx.response = ctx.wire.render_response(ctx.result, ctx.req)
    if ctx.cost is not None:
        ctx.headers["x-litellm-response-cost"] = format_cost(ctx.cost)
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
    return json_bytes(body)


def fail(ctx: RequestContext, err: DecisionError) -> None:
    """The error in the caller's envelope, as the response."""
    ctx.error = err
    ctx.status, ctx.response = ctx.wire.render_error(err)
    ctx.headers = {**ctx.headers, **(err.headers or {})}
    ctx.content = dumps(ctx.response)


def record(pipeline: Pipeline, ctx: RequestContext) -> None:
    """The spend row (durable in the outbox before the response leaves), a short record of the
    request, and the observer's metrics, log line and span end (gateway/observability)."""
    if pipeline.spend is not None:
        try:
            pipeline.spend.write(ctx, pipeline.decision_log)
        except Exception:  # noqa: BLE001 - a full disk must not turn an answer into a 500; say it loudly
            log.exception("the spend row of request %s could not be written to the outbox", ctx.request_id)
    body = ctx.body
    dep = ctx.deployment
    pipeline.request_log.append(RequestRecord(
        request_id=ctx.request_id, path=ctx.route, content_type=ctx.content_type,
        content_encoding=ctx.content_encoding, multipart=bool(body and body.multipart),
        asset_parts=tuple(body.parts) if body else (), model=ctx.model_group, status=ctx.status,
        deployment=f"{dep.provider}/{dep.model}" if dep is not None else None, cost=ctx.cost,
        latency_ms=(time.perf_counter() - ctx.started) * 1000.0,
    ))
    if pipeline.observer is not None:
        try:
            pipeline.observer.record(pipeline, ctx)
        except Exception:  # noqa: BLE001 - a metric or a log line must never turn an answer into a 500
            log.exception("the metrics or the log line of request %s could not be recorded", ctx.request_id)


DECISION_STEPS: tuple[Step, ...] = (authenticate, read, decode, parse, authorize, cache_lookup, admit, route, settle,
                                    cache_merge, calibrate, render, encode)
IR_STEPS: tuple[Step, ...] = (parse, cache_lookup, route, cache_merge, render)  # a body that is already JSON


class Decided(NamedTuple):
    result: DecisionResult
    deployment: Deployment


async def decide_once(registry: ModelRegistry, upstream, req: DecisionRequest, model_name: str) -> Decided:
    """The IR in, the normalised result and the deployment that answered out (the route step).
    Errors are raised, never rendered, so the context's wire is only a placeholder."""
    ctx = RequestContext(request_id="", route="python:decide", wire=systemone_wire, req=req, model_group=model_name)
    await Pipeline(registry, upstream).run(ctx, (route,), raise_errors=True)
    assert ctx.result is not None and ctx.deployment is not None
    return Decided(ctx.result, ctx.deployment)


# ---- helpers of the steps -----------------------------------------------------------------------


def decode_request_body(ctx: RequestContext, settings: LimitsSettings = DEFAULT_LIMITS_SETTINGS) -> DecodedBody:
    try:
        return decode_body(ctx.raw, ctx.content_type, ctx.content_encoding, limits=settings,
                           allow_multipart=ctx.allow_multipart)
    except BodyError as exc:
        raise body_invalid(exc) from None


def watch_client(ctx: RequestContext, receive: Callable[[], Awaitable[dict]]) -> asyncio.Future[None]:
    """A watcher that cancels the task answering ``ctx`` when its client disconnects (the body has
    been read, so the next ASGI message can only be ``http.disconnect``).

    It is never cancelled itself: once the response has gone out, the server answers the pending
    ``receive`` with ``http.disconnect`` (the ASGI spec; uvicorn does), and the watcher, seeing
    ``ctx.answered``, just ends. Cancelling it instead left a cycle per request (the task, its
    CancelledError's traceback, the frame holding ``ctx``) that kept the whole request's objects alive
    until the garbage collector ran, which it then did several times a request."""
    task = asyncio.current_task()

    async def watch() -> None:
        while True:
            message = await receive()
            if ctx.answered:
                return
            if message.get("type") == "http.disconnect":
                ctx.client_gone = True
                if task is not None:
                    task.cancel()
                return

    return asyncio.ensure_future(watch())


def client_went_away(ctx: RequestContext, when: str) -> None:
    """Not a gateway error: one log line, recorded as 499 (nginx's "client closed request")."""
    log.info("client closed request %s on %s %s", ctx.request_id, ctx.route, when)
    ctx.status, ctx.content, ctx.headers = 499, b"", {}


def body_invalid(exc: BodyError) -> RequestInvalid:
    """An unreadable body: unreadable JSON is a schema problem (422 on System One), the rest keep
    their status (400 bad encoding, 413 too large, 415 unsupported)."""
    schema = exc.kind in ("json", "shape")
    return RequestInvalid(exc.message, loc=BODY, status=exc.status, schema=schema,
                          code="json_invalid" if schema else "invalid_body")


def parse_body(ctx: RequestContext, limits: RequestLimits | None) -> DecisionRequest:
    assert ctx.body is not None
    return ctx.wire.parse_request(ctx.body.json, limits, ctx.body.parts or None)


def check_model(body: Mapping[str, Any], registry: ModelRegistry, allowed: frozenset[str] | None = None) -> str:
    """The requested model: a string naming a configured model group. The errors list the models the
    caller may use (``allowed``: its key's and team's; None: every configured one)."""
    listing = f"The configured models are: {', '.join(registry.listed) or '(none configured)'}." if allowed is None \
        else f"This key's models are: {', '.join(registry.usable(allowed)) or 'none'}."
    model = body.get("model")
    if model is None or (isinstance(model, str) and not model.strip()):
        raise RequestInvalid(f"model is required. {listing}", loc=MODEL, schema=True, code="missing_model")
    if not isinstance(model, str):
        raise RequestInvalid(f"model must be a string naming a configured model. {listing}", loc=MODEL,
                             schema=True, code="invalid_model")
    if not registry.knows(model) and not registry.allow_adhoc:
        raise RequestInvalid(f"Unknown model '{model}'. {listing}", loc=MODEL, code="model_not_found")
    return model


def forwarded_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Client headers a provider may forward (TypeSafe-Danger-Zone-*)."""
    return {k: v for k, v in headers.items() if k.lower().startswith(FORWARDED_HEADER_PREFIXES)}
