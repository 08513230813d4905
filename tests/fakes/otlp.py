"""A small OTLP/HTTP trace receiver: ``POST /v1/traces`` with a protobuf ``ExportTraceServiceRequest``
(gzip or not), decoded with opentelemetry-proto into plain ``Span`` records.

    with FakeCollector() as collector:
        ...  # general_settings.otel_endpoint: collector.url
        spans = collector.wait_for(lambda spans: len(spans) >= 2)
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.harness import FakeServer, Recorded, Scripted

KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
STATUS = {0: "unset", 1: "ok", 2: "error"}


@dataclass
class Span:
    name: str
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_span_id: str  # "" for a root span
    kind: str
    status: str
    attributes: dict[str, Any] = field(default_factory=dict)
    resource: dict[str, Any] = field(default_factory=dict)


def any_value(value: Any) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, which) if which else None


def decode(body: bytes) -> list[Span]:
    # opentelemetry-proto (and protobuf) are imported here, not when the test modules are collected
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = {kv.key: any_value(kv.value) for kv in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(Span(
                    name=span.name, trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                    parent_span_id=span.parent_span_id.hex(), kind=KINDS.get(span.kind, str(span.kind)),
                    status=STATUS.get(span.status.code, str(span.status.code)),
                    attributes={kv.key: any_value(kv.value) for kv in span.attributes}, resource=resource))
    return spans


class FakeCollector(FakeServer):
    def __init__(self) -> None:
        super().__init__()
        self.spans: list[Span] = []
        self._arrived = threading.Condition()

    def handle(self, rec: Recorded) -> Scripted:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        if rec.method != "POST" or rec.path != "/v1/traces":
            return Scripted(404)
        body = gzip.decompress(rec.body) if rec.header("content-encoding") == "gzip" else rec.body
        try:
            spans = decode(body)
        except Exception:  # noqa: BLE001 - an undecodable export is the exporter's bug: say so with 400
            return Scripted(400, {"Content-Type": "text/plain"}, b"not an ExportTraceServiceRequest")
        with self._arrived:
            self.spans.extend(spans)
            self._arrived.notify_all()
        return Scripted(200, {"Content-Type": "application/x-protobuf"},
                        ExportTraceServiceResponse().SerializeToString())

    def wait_for(self, done: Callable[[list[Span]], bool], timeout: float = 15.0) -> list[Span]:
        """The spans received so far, once ``done(spans)`` holds (AssertionError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while not done(list(self.spans)):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"the spans never matched; received: {[s.name for s in self.spans]}")
                self._arrived.wait(left)
            return list(self.spans)
