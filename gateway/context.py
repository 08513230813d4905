"""The per-request context: what one request gathers on its way through the pipeline's steps.

Below the steps: the pipeline (``gateway/pipeline.py``) runs them over a ``RequestContext``, and
the steps that live in their own packages (the cache's ``cache_lookup`` and ``cache_merge``, the
spend log's ``write``, the pass-throughs' ``relay``) import it from here, never from the pipeline.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from gateway.admission.ticket import Ticket
from gateway.decode.body import DecodedBody
from providers.base import Deployment
from translators.errors import DecisionError
from translators.ir import DecisionRequest, DecisionResult
from translators.wire import WireModule


@dataclass(slots=True)
class RequestContext:
    """Everything one request gathers on its way through the steps."""

    request_id: str
    route: str  # the path it came in on, e.g. /v1/systemone
    wire: WireModule
    passthrough: bool = False  # a pass-through route: the key needs its allowed_passthrough_routes grant
    # read and decode
    source: Any = None  # where the body comes from: a Starlette Request (None: ``raw`` is given)
    json_only: bool = False  # a JSON route: Content-Type must be JSON (or multipart where allowed)
    allow_multipart: bool = True
    raw: bytes = b""
    content_type: str | None = None
    content_encoding: str | None = None
    heavy: bool = False  # decode and parse in a worker thread
    body: DecodedBody | None = None
    forwarded_headers: dict[str, str] = field(default_factory=dict)
    deadline_header: str | None = None  # x-decisions-deadline-ms as sent
    # parse
    req: DecisionRequest | None = None
    identity: Any = None  # auth: the caller's key and team (later)
    # route and call
    model_group: str | None = None  # the group that answers (an alias's target)
    model_requested: str | None = None  # the name the body gave: the group, or a model_group_alias of it
    deployment: Deployment | None = None  # the one that answered (the first chunk's, when split)
    tried: list[Deployment] = field(default_factory=list)  # the deployment that answered each chunk
    result: DecisionResult | None = None
    cache: Any = None  # the cache outcome (later)
    calibration_header: str | None = None  # x-decisions-calibration as sent (apply / off)
    sites: tuple[str, ...] | None = None  # each question's site, once the calibrate step computed them
    calibration: Any = None  # what the calibrate step applied (gateway.calibration.apply.Applied): the raw result
    # settle and render
    cost: float | None = None
    status: int = 0
    response: Any = None  # the rendered body (a dict)
    content: bytes | None = None  # the response bytes (encode, or a pass-through's relayed body)
    headers: dict[str, str] = field(default_factory=dict)
    error: DecisionError | None = None
    # timings: step name -> milliseconds; started is time.perf_counter() at arrival, started_at the wall clock
    started: float = field(default_factory=time.perf_counter)
    started_at: float = field(default_factory=time.time)
    retries: int = 0  # the router's true counts
    fallbacks: int = 0
    hedged: bool = False
    upstream_ms: float = 0.0  # time spent waiting on upstream calls (every attempt)
    timings: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # what a route's own steps keep (pass-through)
    client_watch: asyncio.Future[None] | None = None  # cancels the request when its client goes away
    answered: bool = False  # the pipeline is done: a disconnect no longer cancels anything
    client_gone: bool = False
    ticket: Ticket | None = None  # what admit reserved (rate limits, budget), settled or released
    settled: Ticket | None = None  # the ticket settle took over (the metrics read its budget holds)
    trace: Any = None  # the request's span, when traces are on (gateway/observability/tracing.py)
    estimated_tokens: int = 0  # the input's tokens as estimated before the call (capabilities)
