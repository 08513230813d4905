"""The shared upstream client against a real local HTTP server (tests/fakes/harness.py)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from gateway.upstream.upstream import Upstream, split_local_url
from providers.base import UpstreamRequest
from tests.fakes.harness import FakeServer, Scripted
from translators.errors import UpstreamError

SECRET = "sk-very-secret-key"


class EchoServer(FakeServer):
    def handle(self, rec):
        return Scripted.of_json(201, {"path": rec.path, "json": rec.json, "auth": rec.header("authorization")},
                                {"X-Upstream-Id": "up-1"})


@pytest.fixture(scope="module")
def echo():
    with EchoServer() as server:
        yield server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_sends_json_and_returns_status_headers_body(echo):
    async with Upstream() as upstream:
        resp = await upstream.send(UpstreamRequest("POST", f"{echo.url}/v1/systemone",
                                                   {"Authorization": f"Bearer {SECRET}"}, json={"state": "s"}))
    assert resp.status == 201
    assert resp.headers["x-upstream-id"] == "up-1" and resp.headers["content-type"] == "application/json"
    assert resp.json() == {"path": "/v1/systemone", "json": {"state": "s"}, "auth": f"Bearer {SECRET}"}
    assert echo.last.header("content-type") == "application/json"


async def test_raw_content_is_sent_as_is(echo):
    async with Upstream() as upstream:
        await upstream.send(UpstreamRequest("POST", f"{echo.url}/raw", {"Content-Type": "application/octet-stream"},
                                            content=b"\x00\x01raw"))
    assert echo.last.body == b"\x00\x01raw" and echo.last.header("content-type") == "application/octet-stream"


async def test_one_client_serves_many_concurrent_requests(echo):
    async with Upstream(max_connections=8) as upstream:
        responses = await asyncio.gather(*(
            upstream.send(UpstreamRequest("POST", f"{echo.url}/n/{i}", {}, json={"i": i})) for i in range(40)))
    assert [r.json()["json"]["i"] for r in responses] == list(range(40))


async def test_connection_refused_is_a_502_naming_the_provider_without_the_key():
    url = f"http://127.0.0.1:{free_port()}/v1/systemone?key={SECRET}"
    async with Upstream() as upstream:
        with pytest.raises(UpstreamError) as err:
            await upstream.send(UpstreamRequest("POST", url, {"Authorization": f"Bearer {SECRET}"}, json={}),
                                "typesafe")
    assert err.value.status == 502 and err.value.provider == "typesafe"
    assert "typesafe" in err.value.message and SECRET not in err.value.message


async def test_a_slow_upstream_is_a_504():
    with FakeServer() as slow:
        slow.queue(200, json={"late": True}, delay=2.0)
        async with Upstream() as upstream:
            with pytest.raises(UpstreamError) as err:
                await upstream.send(UpstreamRequest("POST", f"{slow.url}/v1/decisions",
                                                    {"Authorization": f"Bearer {SECRET}"}, json={}, timeout=0.3),
                                    "openai")
    assert err.value.status == 504 and "openai" in err.value.message and SECRET not in err.value.message


def test_local_urls_split_into_model_ref_and_path():
    assert split_local_url("local://smollm2/v1/decisions") == ("smollm2", "/v1/decisions")
    assert split_local_url("local://HuggingFaceTB%2FSmolLM2-135M/v1/systemone") == (
        "HuggingFaceTB/SmolLM2-135M", "/v1/systemone")
    assert split_local_url("local://org/model/v1/decisions") == ("org/model", "/v1/decisions")
    with pytest.raises(ValueError):
        split_local_url("local://no-path")


async def test_a_body_with_a_non_finite_number_is_refused_before_sending(echo):
    before = len(echo.requests)
    async with Upstream() as upstream:
        with pytest.raises(UpstreamError) as err:
            await upstream.send(UpstreamRequest("POST", f"{echo.url}/x", {}, json={"p": float("nan")}), "typesafe")
    assert err.value.status == 502 and "cannot be encoded" in err.value.message
    assert len(echo.requests) == before
