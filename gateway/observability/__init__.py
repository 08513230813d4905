"""What operators see of the running gateway: Prometheus metrics, one log line per request, traces.

``Observer`` joins the pipeline at two points: ``begin`` when a request arrives (in flight, the
request's span) and ``record`` in the record step (metrics, the log line, the span's end). Each
part lives in its own module: ``metrics.py`` (and ``labels.py``, what may be a label value),
``logs.py``, ``tracing.py`` (imported only when ``general_settings.otel_endpoint`` is set),
``metrics_route.py`` (``GET /metrics``), ``multiproc.py`` (the metrics folder of ``--workers N``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gateway.cache.steps import CacheOutcome, paid_usage
from gateway.observability import logs
from gateway.observability.labels import NONE
from gateway.observability.metrics import Metrics
from gateway.spend.cost import shown_cost

log = logging.getLogger("gateway.observability")

REFRESH_S = 2.0  # how often the state gauges (cooldowns, outbox depth) are refreshed between scrapes
PASSTHROUGH_ENVS = ("TYPESAFE_API_KEY", "LAYA_API_KEY", "BESPOKE_API_KEY")


def cache_counts(cache: Any) -> tuple[int, int, float | None]:
    """(hits, misses, cost saved) from the cache outcome on the context (None: no cache). The cost saved
    counts once the cached answers were delivered, as the spend row's does."""
    if not isinstance(cache, CacheOutcome):
        return 0, 0, None
    return cache.hits, cache.misses, cache.cost_saved_known if cache.delivered else None


def secrets_of(general_settings: Mapping[str, Any], deployments: Iterable[Any],
               environ: Mapping[str, str] | None = None) -> list[str]:
    """Every secret the gateway holds: master key, salt, provider keys, pass-through keys."""
    from gateway.auth.keys import MASTER_KEY_ENV, SALT_ENV

    environ = os.environ if environ is None else environ
    found: list[Any] = [general_settings.get("master_key"), general_settings.get("salt_key"),
                        environ.get(MASTER_KEY_ENV), environ.get(SALT_ENV)]
    found.extend(dep.api_key for dep in deployments)
    found.extend(environ.get(name) for name in PASSTHROUGH_ENVS)
    return [str(value) for value in found if value]


class Observer:
    """One per gateway process. ``pipeline_of()`` is the pipeline in force (a config reload swaps it
    for a copy that shares this observer); the per-request hooks get the pipeline that runs."""

    def __init__(self, general_settings: Mapping[str, Any], pipeline_of: Callable[[], Any]):
        self.pipeline_of = pipeline_of
        pipeline = pipeline_of()
        self.metrics = Metrics(pipeline.registry)
        self.tracing: Any = None
        endpoint = general_settings.get("otel_endpoint")
        if endpoint:
            try:
                from gateway.observability.tracing import Tracing
            except ImportError as exc:
                raise RuntimeError(f"general_settings.otel_endpoint is set but OpenTelemetry is not installed "
                                   f"({exc.name}): pip install 'decisions-gateway[otel]'") from None

            self.tracing = Tracing(str(endpoint), str(general_settings.get("otel_service_name")
                                                      or "decisions-gateway"))
        logs.protect(secrets_of(general_settings, pipeline.registry.deployments))
        self._refresher: asyncio.Task[None] | None = None
        pipeline.observer = self
        pipeline.router.tracing = self.tracing  # a reload hands it on to the new router (gateway/reload.py)

    # ---- per request -------------------------------------------------------------------------------

    def begin(self, pipeline: Any, ctx: Any) -> None:
        self.metrics.in_flight.inc()
        if self.tracing is not None:
            self.tracing.begin(ctx)

    def record(self, pipeline: Any, ctx: Any) -> None:
        """The record step's share: metrics, the request's log line, the end of its span."""
        self.metrics.in_flight.dec()
        total_s = time.perf_counter() - ctx.started
        upstream_ms = ctx.upstream_ms
        if not upstream_ms and ctx.extra:  # a pass-through: its one upstream exchange
            relayed = ctx.extra.get("upstream_response")
            upstream_ms = relayed.elapsed_ms if relayed is not None else 0.0
        cache = cache_counts(ctx.cache)
        metrics = self.metrics  # a reload makes its new registry the labels' (Reloader._swap calls follow)
        try:
            metrics.record(ctx, paid_usage(ctx), total_s, upstream_ms / 1000.0, *cache)
            if logs.REQUEST_LOG.isEnabledFor(logging.INFO):
                logs.request_line(request_fields(ctx, total_s, upstream_ms, cache),
                                  logging.WARNING if ctx.status >= 500 else logging.INFO)
        finally:
            if self.tracing is not None:
                labeller = metrics.labeller
                self.tracing.end(ctx, (labeller.group(ctx.model_group), *labeller.deployment(ctx.deployment)),
                                 cache)

    def follow(self, registry: Any) -> None:
        """A reloaded config: its groups and deployments become the label values, its keys secrets."""
        self.metrics.follow(registry)
        logs.protect(dep.api_key for dep in registry.deployments)

    # ---- the state gauges and the scrape -------------------------------------------------------------

    async def refresh(self) -> None:
        pipeline = self.pipeline_of()
        if pipeline.registry is not self.metrics.labeller.registry:
            self.follow(pipeline.registry)
        outbox = pipeline.spend.outbox if pipeline.spend is not None else None
        await self.metrics.refresh(pipeline.router.health, outbox.depth if outbox is not None else None)

    async def start(self) -> None:
        self._refresher = asyncio.ensure_future(self._refresh_forever())

    async def _refresh_forever(self) -> None:
        while True:
            try:
                await self.refresh()
            except Exception as exc:  # noqa: BLE001 - a gauge must never take the gateway down
                log.warning("metrics: the state gauges could not be refreshed (%s)", type(exc).__name__)
            await asyncio.sleep(REFRESH_S)

    async def close(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher
        if self.tracing is not None:
            await asyncio.to_thread(self.tracing.shutdown)
        if self.metrics.multiprocess:
            from gateway.observability.multiproc import worker_exited

            worker_exited()
        await asyncio.to_thread(logs.flush)


def request_fields(ctx: Any, total_s: float, upstream_ms: float, cache: tuple[int, int, float | None]) -> dict:
    """The request's log line: what happened, who asked (by alias), never the key or the body."""
    dep, identity, error = ctx.deployment, ctx.identity, ctx.error
    fields: dict[str, Any] = {
        "request_id": ctx.request_id, "route": ctx.route, "model_group": ctx.model_group,
        "deployment": f"{dep.provider}/{dep.model}" if dep is not None else None,
        "status": ctx.status, "latency_ms": round(total_s * 1000.0, 3), "upstream_latency_ms": round(upstream_ms, 3),
        "retries": ctx.retries, "fallbacks": ctx.fallbacks, "hedged": ctx.hedged,
        "cache_hits": cache[0], "cache_misses": cache[1],
        "cost": shown_cost(ctx.cost) if ctx.cost is not None else None,
    }
    if cache[2]:
        fields["cost_saved"] = shown_cost(cache[2])
    usage = paid_usage(ctx)
    if usage is not None:
        fields["input_tokens"], fields["output_tokens"] = usage.input_tokens, usage.output_tokens
    if identity is not None:
        fields["key_alias"] = "master" if identity.is_master else identity.key_alias
        fields["team"] = identity.team_alias or identity.team_id
    if error is not None:
        fields["error"] = error.code or error.type
    return fields


__all__ = ["NONE", "Observer", "cache_counts", "paid_usage", "request_fields", "secrets_of"]
