"""OpenTelemetry traces (the ``otel`` extra), exported over OTLP/HTTP to ``general_settings.otel_endpoint``.

This module is imported only when an endpoint is configured: without one the gateway never imports
opentelemetry's SDK and the hot path pays one ``is None`` test per hook.

Spans, with the GenAI semantic conventions:

- one ``SERVER`` span per request, ``decision <model group>``, continuing the caller's
  ``traceparent`` (W3C trace context) when it sends one: ``gen_ai.operation.name``,
  ``gen_ai.request.model`` (the model group), ``gen_ai.response.model``, ``gen_ai.system`` and
  ``gen_ai.provider.name``, ``gen_ai.usage.input_tokens`` / ``output_tokens``, ``http.route``,
  ``http.response.status_code``, ``error.type``, and the gateway's own ``decisions_gateway.*``
  (request id, deployment, retries, fallbacks, hedged, cache hits and misses, cost);
- one ``CLIENT`` span per upstream attempt (each retry, hedge and fallback call its own), child of
  the request's: the deployment's provider and model, the answer's model and tokens, the error
  of a failed attempt. Its ``traceparent`` goes to the upstream with the request, so an upstream
  that traces joins the caller's trace.

The SDK's batch processor exports from its own thread; the tracer provider is the gateway's own
(not the global one), so several gateways in one process keep their spans apart.
"""

from __future__ import annotations

import asyncio
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway import __version__

OPERATION = "decision"
TRACES_PATH = "/v1/traces"
OURS = "decisions_gateway."


def traces_url(endpoint: str) -> str:
    """A collector's base URL (``http://collector:4318``) or its traces URL, as the traces URL."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith(TRACES_PATH) else endpoint + TRACES_PATH


class Tracing:
    def __init__(self, endpoint: str, service_name: str = "decisions-gateway", *, exporter: Any = None):
        resource = Resource.create({"service.name": service_name, "service.version": __version__})
        self.provider = TracerProvider(resource=resource)
        self.provider.add_span_processor(BatchSpanProcessor(exporter or OTLPSpanExporter(endpoint=traces_url(endpoint)),
                                                            schedule_delay_millis=500))
        self.tracer = self.provider.get_tracer("decisions-gateway", __version__)
        self.propagator = TraceContextTextMapPropagator()

    # ---- the request -------------------------------------------------------------------------------

    def begin(self, ctx: Any) -> None:
        """The request's span, current for everything the request runs (the router's attempts)."""
        headers = ctx.source.headers if ctx.source is not None else {}
        parent = self.propagator.extract(headers) if "traceparent" in headers else None
        span = self.tracer.start_span(f"{OPERATION} {ctx.route}", context=parent, kind=SpanKind.SERVER,
                                      attributes={"gen_ai.operation.name": OPERATION, "http.route": ctx.route,
                                                  OURS + "request_id": ctx.request_id})
        token = otel_context.attach(trace.set_span_in_context(span))
        ctx.trace = (span, token)

    def end(self, ctx: Any, labels: tuple[str, str, str], cache: tuple[int, int, float | None]) -> None:
        """Attributes of the finished request; the span ends and stops being current."""
        if ctx.trace is None:
            return
        span, token = ctx.trace
        ctx.trace = None
        try:
            group, deployment, provider = labels
            span.update_name(f"{OPERATION} {group}")
            attrs: dict[str, Any] = {"gen_ai.request.model": group, "http.response.status_code": ctx.status,
                                     OURS + "retries": ctx.retries, OURS + "fallbacks": ctx.fallbacks,
                                     OURS + "hedged": ctx.hedged, OURS + "cache.hits": cache[0],
                                     OURS + "cache.misses": cache[1]}
            if ctx.deployment is not None:
                attrs.update({"gen_ai.system": provider, "gen_ai.provider.name": provider,
                              OURS + "deployment": deployment})
            if cache[2]:
                attrs[OURS + "cache.saved_usd"] = cache[2]
            result = ctx.result
            if result is not None:
                attrs.update(usage_attributes(result))
            if ctx.cost is not None:
                attrs[OURS + "cost_usd"] = ctx.cost
            span.set_attributes(attrs)
            if ctx.error is not None or ctx.status >= 500:
                kind = (ctx.error.code or ctx.error.type) if ctx.error is not None else str(ctx.status)
                span.set_attribute("error.type", kind or str(ctx.status))
                if ctx.status >= 500:
                    span.set_status(Status(StatusCode.ERROR, kind))
        finally:
            span.end()
            otel_context.detach(token)

    # ---- one upstream attempt ------------------------------------------------------------------------

    def attempt(self, dep: Any) -> Attempt:
        span = self.tracer.start_span(f"{OPERATION} {dep.model}", kind=SpanKind.CLIENT, attributes={
            "gen_ai.operation.name": OPERATION, "gen_ai.system": dep.provider, "gen_ai.provider.name": dep.provider,
            "gen_ai.request.model": dep.model})
        headers: dict[str, str] = {}
        self.propagator.inject(headers, context=trace.set_span_in_context(span))
        return Attempt(span, headers)

    def shutdown(self) -> None:
        """Export what is left (blocking: call it off the loop)."""
        self.provider.shutdown()


class Attempt:
    __slots__ = ("span", "headers")

    def __init__(self, span: Any, headers: dict[str, str]):
        self.span = span
        self.headers = headers  # traceparent for the upstream request

    def end(self, result: Any = None, error: BaseException | None = None) -> None:
        span = self.span
        if result is not None:
            span.set_attributes(usage_attributes(result))
        if isinstance(error, asyncio.CancelledError):  # a hedge that lost, a deadline, a client gone
            span.set_attribute(OURS + "cancelled", True)
        elif error is not None:
            status = getattr(error, "status", None)
            kind = getattr(error, "code", None) or type(error).__name__
            span.set_attribute("error.type", str(kind))
            if status is not None:
                span.set_attribute("http.response.status_code", int(status))
            span.set_status(Status(StatusCode.ERROR, str(kind)))
        span.end()


def usage_attributes(result: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.response.model": result.model}
    usage = result.usage
    if usage.input_tokens is not None:
        attrs["gen_ai.usage.input_tokens"] = usage.input_tokens
    if usage.output_tokens is not None:
        attrs["gen_ai.usage.output_tokens"] = usage.output_tokens
    return attrs
