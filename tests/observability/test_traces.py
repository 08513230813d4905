"""Traces: the gateway exports its spans over OTLP/HTTP to a collector (a small receiver decoding
the protobuf with opentelemetry-proto), continues the caller's trace and hands it to the upstream."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import pytest

from tests.conftest import start_gateway
from tests.fakes.otlp import FakeCollector
from tests.fakes.typesafe import FakeTypeSafe
from tests.observability.helpers import ROOT, decide, typesafe_entry

UPSTREAM_KEY = "ts-traces-upstream-key-0001"


@pytest.fixture(scope="module")
def upstream():
    with FakeTypeSafe(UPSTREAM_KEY) as fake:
        yield fake


@pytest.fixture(scope="module")
def collector():
    with FakeCollector() as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(upstream, collector):
    running = start_gateway({"model_list": [typesafe_entry("jev", UPSTREAM_KEY, upstream.url,
                                                           input_cost_per_token=0.001)],
                             "general_settings": {"otel_endpoint": collector.url, "otel_service_name": "gw-under-test"},
                             "router_settings": {"num_retries": 1, "disable_cooldowns": True}})
    yield running
    running.stop()


def traceparent(upstream_request) -> tuple[str, str]:
    """(trace id, parent span id) of the traceparent an upstream received."""
    version, trace_id, span_id, flags = upstream_request.header("traceparent").split("-")
    assert version == "00" and int(flags, 16) & 1  # sampled
    return trace_id, span_id


def test_the_request_and_each_attempt_are_spans_of_the_callers_trace(gateway, upstream, collector):
    trace_id, caller_span = secrets.token_hex(16), secrets.token_hex(8)
    upstream.fail_next(500, "the upstream had a bad moment")  # the first attempt fails, the retry answers
    seen = len(upstream.requests)
    answer = decide(gateway.url, headers={"traceparent": f"00-{trace_id}-{caller_span}-01"})
    assert answer.status_code == 200 and answer.headers["x-decisions-attempted-retries"] == "1"
    spans = collector.wait_for(lambda spans: len([s for s in spans if s.trace_id == trace_id]) >= 3)
    mine = [s for s in spans if s.trace_id == trace_id]
    (server,) = [s for s in mine if s.kind == "server"]
    attempts = [s for s in mine if s.kind == "client"]
    assert len(attempts) == 2 and len(mine) == 3
    assert server.parent_span_id == caller_span and server.name == "decision jev" and server.status == "unset"
    assert server.resource["service.name"] == "gw-under-test"
    attrs = server.attributes
    assert attrs["gen_ai.operation.name"] == "decision" and attrs["gen_ai.request.model"] == "jev"
    assert attrs["gen_ai.system"] == "typesafe" and attrs["gen_ai.response.model"] == "jev-1.13-20260917"
    assert attrs["gen_ai.usage.input_tokens"] > 0 and attrs["http.response.status_code"] == 200
    assert attrs["decisions_gateway.retries"] == 1 and attrs["decisions_gateway.fallbacks"] == 0
    assert attrs["decisions_gateway.cache.hits"] == 0 and attrs["decisions_gateway.hedged"] is False
    assert attrs["decisions_gateway.cost_usd"] == pytest.approx(float(answer.headers["x-decisions-response-cost"]))
    assert attrs["decisions_gateway.request_id"] == answer.headers["x-request-id"]
    failed, answered = sorted(attempts, key=lambda s: s.status != "error")
    assert {s.parent_span_id for s in attempts} == {server.span_id}
    assert failed.status == "error" and failed.attributes["http.response.status_code"] == 502
    assert answered.status == "unset" and answered.attributes["gen_ai.response.model"] == "jev-1.13-20260917"
    for span in attempts:
        assert span.name == "decision jev-latest" and span.attributes["gen_ai.request.model"] == "jev-latest"
        assert span.attributes["gen_ai.system"] == "typesafe" and span.attributes["gen_ai.provider.name"] == "typesafe"
    # each upstream call carried the caller's trace, as a child of its own attempt's span
    received = [traceparent(rec) for rec in upstream.requests[seen:]]
    assert received == [(trace_id, failed.span_id), (trace_id, answered.span_id)]


def test_without_a_callers_trace_the_request_starts_one(gateway, upstream, collector):
    seen = len(upstream.requests)
    answer = decide(gateway.url, path="/v1/decisions")
    assert answer.status_code == 200
    (trace_id, parent), = [traceparent(rec) for rec in upstream.requests[seen:]]
    spans = collector.wait_for(lambda spans: len([s for s in spans if s.trace_id == trace_id]) >= 2)
    (server,) = [s for s in spans if s.trace_id == trace_id and s.kind == "server"]
    (attempt,) = [s for s in spans if s.trace_id == trace_id and s.kind == "client"]
    assert server.parent_span_id == "" and attempt.span_id == parent and attempt.parent_span_id == server.span_id
    assert server.attributes["http.route"] == "/v1/decisions"


def test_a_failed_request_is_an_error_span(gateway, upstream, collector):
    upstream.fail_next(500, "down")
    upstream.fail_next(500, "still down")
    trace_id = secrets.token_hex(16)
    answer = decide(gateway.url, headers={"traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01"})
    assert answer.status_code == 502
    spans = collector.wait_for(lambda spans: len([s for s in spans if s.trace_id == trace_id]) >= 3)
    (server,) = [s for s in spans if s.trace_id == trace_id and s.kind == "server"]
    assert server.status == "error" and server.attributes["http.response.status_code"] == 502
    assert server.attributes["error.type"] and server.attributes["decisions_gateway.retries"] == 1


def test_without_an_endpoint_no_trace_is_made_and_none_is_passed_on(upstream):
    running = start_gateway({"model_list": [typesafe_entry("jev", UPSTREAM_KEY, upstream.url)]})
    try:
        seen = len(upstream.requests)
        answer = decide(running.url, headers={"traceparent": f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"})
        assert answer.status_code == 200
        assert [rec.header("traceparent") for rec in upstream.requests[seen:]] == [None]
        assert running.state.pipeline.observer.tracing is None and running.state.pipeline.router.tracing is None
    finally:
        running.stop()


def test_without_an_endpoint_the_tracing_sdk_is_never_imported(upstream):
    """In a fresh process: a gateway serving requests without otel_endpoint imports neither our tracing
    module nor the SDK's tracing or the OTLP exporter."""
    script = f"""
import sys
from starlette.testclient import TestClient
from gateway.edge.app import create_app
from gateway.config.loader import build_config
config = build_config({{"model_list": [{{"model_name": "jev", "litellm_params": {{"model": "typesafe/jev-latest",
    "api_key": "{UPSTREAM_KEY}", "api_base": "{upstream.url}"}}}}]}}, {{}}, source="test")
with TestClient(create_app(config)) as client:
    body = {{"model": "jev", "state": "s", "questions": {{"q": {{"type": "noul", "instructions": "?"}}}}}}
    assert client.post("/v1/systemone", json=body).status_code == 200
print(sorted(m for m in sys.modules if m.startswith(("gateway.observability.tracing", "opentelemetry.sdk.trace",
                                                      "opentelemetry.exporter"))))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DECISIONS_GATEWAY_DATA_DIR": os.environ["DECISIONS_GATEWAY_DATA_DIR"]})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
