"""Issue 8 item 1: a key an upstream echoes back never reaches the caller, wherever it is put.

Redaction runs before the 500-character cut (a key straddling the cut left its first characters),
on the message, the ``code`` and the ``type``, and every relayed header; ``Retry-After`` is relayed
only as a number of seconds or an HTTP date.
"""

from __future__ import annotations

import json

import httpx
import pytest

from gateway.passthrough.policy import relayed_response_headers
from providers.base import UpstreamResponse
from providers.upstream_errors import retry_after, upstream_error
from tests.security.conftest import OPENAI_KEY, TYPESAFE_KEY
from tests.security.helpers import gateway_with_env

S1_BODY = {"state": "I was charged twice.", "questions": {"q": {"type": "noul", "instructions": "Billing?"}}}
OPENAI_BODY = {"input": "I was charged twice.",
               "questions": [{"type": "predicate", "name": "q", "instructions": "Billing?"}]}


def no_key_in(response: httpx.Response, key: str) -> None:
    shown = response.text + json.dumps(dict(response.headers))
    assert key[:4] not in shown, shown  # not the key, not even the start of it


@pytest.mark.parametrize("model, status, payload, headers", [
    pytest.param("luna", 401, {"error": {"message": "Incorrect API key", "type": "{key}", "code": "{key}"}}, {},
                 id="openai-code-and-type"),
    pytest.param("luna", 401, {"error": {"message": "x" * 495 + " {key} was refused", "type": "invalid_request_error",
                                         "code": None}}, {}, id="key-straddling-the-cut"),
    pytest.param("luna", 429, {"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate"}},
                 {"Retry-After": "{key}", "retry-after-ms": "{key}"}, id="openai-retry-after"),
    pytest.param("jev", 401, {"detail": {"message": "bad credentials", "error_type": "{key}"}}, {},
                 id="systemone-error-type"),
    pytest.param("jev", 503, {"detail": {"error_type": "{key}"}}, {"Retry-After": "in {key} seconds"},
                 id="systemone-message-from-type-and-retry-after"),
])
@pytest.mark.parametrize("route", ["/v1/systemone", "/v1/decisions"])
def test_a_key_echoed_by_an_upstream_never_reaches_the_caller(gateway, hostile_typesafe, hostile_openai,
                                                               model, status, payload, headers, route):
    fake, key = (hostile_openai, OPENAI_KEY) if model == "luna" else (hostile_typesafe, TYPESAFE_KEY)
    fake.echo_key_next(status, json=payload, headers=headers)
    body = {"model": model, **(S1_BODY if route == "/v1/systemone" else OPENAI_BODY)}
    r = httpx.post(gateway.url + route, json=body, timeout=10)
    assert r.status_code == status, r.text
    assert fake.requests and fake.last.header("authorization") == f"Bearer {key}"  # the fake did echo the key
    no_key_in(r, key)
    assert "retry-after" not in r.headers and "retry-after-ms" not in r.headers  # not a number, not a date


def test_a_usable_retry_after_is_still_relayed(gateway, hostile_openai):
    hostile_openai.echo_key_next(429, json={"error": {"message": "slow"}},
                                 headers={"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT", "retry-after-ms": "1500"})
    r = httpx.post(gateway.url + "/v1/decisions", json={"model": "luna", **OPENAI_BODY}, timeout=10)
    assert r.status_code == 429
    assert r.headers["retry-after"] == "Wed, 21 Oct 2026 07:28:00 GMT" and r.headers["retry-after-ms"] == "1500"


# ---- the functions themselves ----------------------------------------------------------------------


def response(status: int, payload, headers: dict | None = None) -> UpstreamResponse:
    return UpstreamResponse(status=status, headers=headers or {}, body=json.dumps(payload).encode())


@pytest.mark.parametrize("payload", [
    {"error": {"message": "m", "code": "KEY", "type": "KEY"}},
    {"error": {"message": "y" * 497 + "KEY"}},
    {"error": {"message": "y" * 499 + "KEY"}},
    {"detail": {"error_type": "prefix KEY suffix"}},
    {"errors": [{"code": 7, "message": "KEY"}]},
])
def test_upstream_error_redacts_every_value_before_cutting(payload):
    key = "zq9-secret-abcdef0123456789"
    text = json.dumps(payload).replace("KEY", key)
    err = upstream_error("openai", response(401, json.loads(text)), label="OpenAI", secrets=(key, None))
    shown = f"{err.message} {err.code} {err.type} {err.headers}"
    assert "zq9" not in shown and "OpenAI upstream answered HTTP 401" in err.message
    assert len(err.message) < 600


def test_explicit_message_and_code_are_redacted_too():
    err = upstream_error("cloudflare", response(400, {}), secrets=("zq9-secret-abc",),
                         message="bad zq9-secret-abc", code="zq9-secret-abc")
    assert "zq9" not in err.message and err.code == "[redacted]"


@pytest.mark.parametrize("value, relayed", [
    ("4", "4"), (" 120 ", "120"), ("Wed, 21 Oct 2026 07:28:00 GMT", "Wed, 21 Oct 2026 07:28:00 GMT"),
    ("Wed, 21 Oct 2026 09:28:00 +0200", "Wed, 21 Oct 2026 07:28:00 GMT"),
    ("zq9-secret", None), ("1.5", None), ("-1", None), ("", None), (None, None), ("4, 5", None),
    ("Wed, 21 Oct 2026 07:28:00", None), ("9" * 11, None),
])
def test_retry_after_is_only_seconds_or_an_http_date(value, relayed):
    assert retry_after(value) == relayed


def test_upstream_error_keeps_only_usable_retry_hints():
    err = upstream_error("openai", response(429, {"error": {"message": "slow"}},
                                            {"retry-after": "zq9-secret", "retry-after-ms": "250"}),
                         secrets=("zq9-secret",))
    assert err.headers == {"retry-after-ms": "250"}


def test_relayed_response_headers_are_redacted_and_retry_after_checked():
    key = "zq9-secret-abcdef"
    upstream = {"content-type": "application/json", "x-request-id": f"req-{key}", "x-typesafe-request-id": key,
                "retry-after": key, "retry-after-ms": "12", "set-cookie": f"s={key}", "x-other": "1"}
    out = relayed_response_headers(upstream, [key, None])
    assert out == {"content-type": "application/json", "x-request-id": "req-[redacted]",
                   "x-typesafe-request-id": "[redacted]", "retry-after-ms": "12"}
    long = relayed_response_headers({"x-request-id": "r" * 250 + key}, [key])
    assert "zq9" not in long["x-request-id"] and len(long["x-request-id"]) <= 260


# ---- the pass-through (needs the pipeline to call relayed_response_headers) ------------------------


def test_passthrough_relays_no_key_in_its_headers(hostile_typesafe):
    config = {"model_list": [{"model_name": "keys-pt", "litellm_params": {"model": "typesafe/jev-latest",
                                                                           "api_key": "cfg"}}]}
    env = {"TYPESAFE_API_KEY": TYPESAFE_KEY, "TYPESAFE_API_BASE": hostile_typesafe.url}
    with gateway_with_env(config, env) as gw:
        hostile_typesafe.echo_key_next(429, json={"detail": "slow down"},
                                       headers={"x-request-id": "req-{key}", "x-typesafe-request-id": "{key}",
                                                "Retry-After": "{key}", "retry-after-ms": "{key}"})
        r = httpx.post(gw.url + "/typesafe/v1/systemone", json={"model": "jev-latest", **S1_BODY}, timeout=10)
    assert r.status_code == 429
    no_key_in(r, TYPESAFE_KEY)
    assert "retry-after" not in r.headers and "retry-after-ms" not in r.headers
