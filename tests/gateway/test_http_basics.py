"""Routes over real HTTP: models, health, request ids, body decoding and bad bodies in each wire's envelope."""

from __future__ import annotations

import gzip
import json

import httpx
import pytest
import zstandard
from typesafe_sdk._core.multipart import Part, encode_multipart

from providers.registry import get_provider
from tests.gateway.systemone_checks import check_systemone_response

OPENAI_PATHS = ("/v1/decisions", "/decisions")
SYSTEMONE_PATHS = ("/v1/systemone", "/systemone")

SYSTEMONE_BODY = {"model": "jev", "state": "I was charged twice. " * 80,
                  "questions": {"billing": {"type": "noul", "instructions": "Is this about billing?"}}}
OPENAI_BODY = {"model": "jev", "input": "I was charged twice.",
               "questions": [{"type": "predicate", "name": "billing", "instructions": "Is this about billing?"}]}


@pytest.fixture(scope="module")
def http(gateway):
    with httpx.Client(base_url=gateway.url, timeout=30) as client:
        yield client


def test_models_route_satisfies_openai_and_system_one_shapes(http):
    resp = http.get("/v1/models")
    assert resp.status_code == 200
    body = resp.json()
    assert body["object"] == "list"
    assert [(m["id"], m["object"], m["owned_by"]) for m in body["data"]] == [
        ("jev", "model", "typesafe"), ("luna", "model", "openai")]
    assert [m["name"] for m in body["models"]] == ["jev", "luna"]
    luna = body["models"][1]
    assert luna["description"] == "OpenAI decisions" and luna["release_date"] == "2026-10-06"
    for entry in body["models"]:
        assert isinstance(entry["description"], str) and len(entry["release_date"]) == 10
    assert body["data"][0]["limits"] == get_provider("typesafe").limits.as_dict()
    assert body["data"][1]["limits"] == get_provider("openai").limits.as_dict()


def test_models_route_parses_with_both_sdks(gateway):
    import openai
    from typesafe_sdk import TypeSafeClient

    with TypeSafeClient(api_key="k", base_url=gateway.url) as client:
        assert [m.name for m in client.models.list().models] == ["jev", "luna"]
    assert [m.id for m in openai.OpenAI(api_key="k", base_url=f"{gateway.url}/v1").models.list().data] == ["jev", "luna"]


def test_health_routes(http):
    live = http.get("/health/liveliness")
    ready = http.get("/health/readiness")
    assert live.status_code == 200 and live.json()["status"] == "healthy"
    assert ready.status_code == 200 and ready.json()["status"] == "healthy" and ready.json()["models"] == 2
    assert live.headers["x-request-id"] and live.headers["x-request-id"] != ready.headers["x-request-id"]


def test_every_response_has_a_request_id_and_system_one_also_the_typesafe_one(http):
    for resp in (http.get("/v1/models"), http.get("/nowhere"), http.post("/v1/decisions", content=b"{"),
                 http.post("/v1/systemone", content=b"{")):
        assert resp.headers["x-request-id"].startswith("req_")
    so = http.post("/v1/systemone", content=b"{")
    assert so.headers["x-typesafe-request-id"] == so.headers["x-request-id"]
    assert "x-typesafe-request-id" not in http.post("/v1/decisions", content=b"{").headers
    mine = http.get("/v1/models", headers={"x-request-id": "mine-1"}).headers  # the caller's id: its own header
    assert mine["x-client-request-id"] == "mine-1" and mine["x-request-id"].startswith("req_")
    assert http.get("/v1/models", headers={"x-client-request-id": "mine-2"}).headers["x-client-request-id"] == "mine-2"


@pytest.mark.parametrize("path", OPENAI_PATHS)
@pytest.mark.parametrize("content, headers, words", [
    (b'{"model": "jev", ', {}, "Invalid JSON"),
    (b"[1, 2]", {}, "must be a JSON object"),
    (b"", {}, "empty"),
    (b"\x28\xb5\x2f\xfd garbage", {"content-encoding": "zstd"}, "not valid zstd"),
    (b"not gzip at all", {"content-encoding": "gzip"}, "not valid gzip"),
    (b'{"model": "jev", "input": "hi \\ud800", "questions": [{"type": "predicate", "instructions": "x"}]}', {},
     "unpaired surrogate"),
    (b'{"model": "jev", "input": [{"role": "user", "content": [{"type": "input_json", "data": {"n": 1e999}}]}], '
     b'"questions": [{"type": "predicate", "instructions": "x"}]}', {}, "1e999 is not a finite number"),
])
def test_bad_bodies_on_the_openai_wire(http, path, content, headers, words):
    resp = http.post(path, content=content, headers={"content-type": "application/json", **headers})
    assert resp.status_code == 400
    error = resp.json()["error"]
    assert error["param"] == "request_body" and words in error["message"]


@pytest.mark.parametrize("path", SYSTEMONE_PATHS)
@pytest.mark.parametrize("content, headers, status, words", [
    (b'{"model": "jev", ', {}, 422, "Invalid JSON"),
    (b'"just a string"', {}, 422, "must be a JSON object"),
    (b"\x28\xb5\x2f\xfd garbage", {"content-encoding": "zstd"}, 400, "not valid zstd"),
    (b'--x\r\nContent-Disposition: form-data; name="asset-0"\r\n\r\nxx\r\n--x--\r\n',
     {"content-type": "multipart/form-data; boundary=x"}, 400, "no part named 'request'"),
    (b"--x\r\n\r\nxx\r\n--x--\r\n", {"content-type": "multipart/form-data; boundary=x"}, 400,
     "Content-Disposition name"),
    (b'{"model": "jev", "state": "hi", "questions": {"\\udc00": {"type": "noul", "instructions": "x"}}}', {}, 422,
     "unpaired surrogate"),
    (b'{"model": "jev", "state": {"n": -1e400}, "questions": {"q": {"type": "noul", "instructions": "x"}}}', {}, 422,
     "-1e400 is not a finite number"),
])
def test_bad_bodies_on_the_system_one_wire(http, path, content, headers, status, words):
    resp = http.post(path, content=content, headers={"content-type": "application/json", **headers})
    assert resp.status_code == status
    assert words in json.dumps(resp.json())


@pytest.mark.parametrize("body, words", [
    ({**OPENAI_BODY, "model": "nope"}, "Unknown model 'nope'"),
    ({k: v for k, v in OPENAI_BODY.items() if k != "model"}, "model is required"),
    ({**OPENAI_BODY, "model": 7}, "must be a string"),
])
def test_missing_or_unknown_model_lists_the_configured_ones_openai(http, body, words):
    resp = http.post("/v1/decisions", json=body)
    assert resp.status_code == 400
    error = resp.json()["error"]
    assert error["param"] == "model" and words in error["message"] and "jev, luna" in error["message"]


@pytest.mark.parametrize("body, status, words", [
    ({**SYSTEMONE_BODY, "model": "nope"}, 400, "Unknown model 'nope'"),
    ({k: v for k, v in SYSTEMONE_BODY.items() if k != "model"}, 422, "model is required"),
])
def test_missing_or_unknown_model_lists_the_configured_ones_system_one(http, body, status, words):
    resp = http.post("/v1/systemone", json=body)
    assert resp.status_code == status
    text = json.dumps(resp.json())
    assert words in text and "jev, luna" in text and "model" in text


@pytest.mark.parametrize("encode, encoding", [
    (lambda raw: zstandard.ZstdCompressor().compress(raw), "zstd"),
    (gzip.compress, "gzip"),
    (lambda raw: raw, None),
])
def test_encoded_bodies_reach_the_upstream_decoded(http, gateway, fake_typesafe, encode, encoding):
    raw = json.dumps(SYSTEMONE_BODY).encode()
    headers = {"content-type": "application/json", **({"content-encoding": encoding} if encoding else {})}
    resp = http.post("/v1/systemone", content=encode(raw), headers=headers)
    assert resp.status_code == 200, resp.text
    assert fake_typesafe.last.json["state"] == SYSTEMONE_BODY["state"]
    check_systemone_response(SYSTEMONE_BODY, resp.json())
    assert gateway.state.find(resp.headers["x-request-id"]).content_encoding == encoding


def test_multipart_request_part_and_assets_reach_the_parser(http, gateway):
    content_type, content = encode_multipart([
        Part("request", "application/json", json.dumps(SYSTEMONE_BODY).encode())])
    resp = http.post("/v1/systemone", content=content, headers={"content-type": content_type})
    assert resp.status_code == 200, resp.text
    record = gateway.state.find(resp.headers["x-request-id"])
    assert record.multipart and record.asset_parts == ()
    check_systemone_response(SYSTEMONE_BODY, resp.json())


def test_success_headers_carry_cost_and_model(http, fake_openai):
    resp = http.post("/v1/decisions", json={**OPENAI_BODY, "model": "luna"})
    assert resp.status_code == 200, resp.text
    usage = resp.json()["usage"]
    assert resp.headers["x-decisions-model"] == "openai/gpt-6-luna"
    cached = usage["input_tokens_details"]["cached_tokens"]
    expected = (usage["input_tokens"] - cached) * 1e-7 + cached * 1e-8
    assert float(resp.headers["x-decisions-response-cost"]) == pytest.approx(expected, rel=1e-9)
    assert fake_openai.last.header("authorization") == "Bearer sk-test-openai"


def test_models_body_reads_loose_model_info_without_failing():
    import datetime

    from gateway.config.loader import build_config
    from gateway.config.registry import ModelRegistry
    from gateway.edge.info_routes import models_body

    config = build_config({"model_list": [
        {"model_name": "a", "litellm_params": {"model": "typesafe/j", "api_key": "k"},
         "model_info": {"created": "last spring", "release_date": datetime.date(2026, 9, 15)}},
        {"model_name": "b", "litellm_params": {"model": "typesafe/j", "api_key": "k"},
         "model_info": {"created": 1760000000}},
    ]}, {})
    body = models_body(ModelRegistry.from_config(config))
    assert [m["created"] for m in body["data"]] == [0, 1760000000]
    assert [m["release_date"] for m in body["models"]] == ["2026-09-15", "1970-01-01"]
