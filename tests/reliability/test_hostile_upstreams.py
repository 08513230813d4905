"""Issue 8 item 6: an upstream answer is capped once decompressed and read without freezing the loop.

A 1 MB gzip answer inflating to 1 GiB froze every caller for 11.7 s and took the process to 3.3 GB.
Now it is dropped as soon as it passes ``max_upstream_response_bytes`` (16 MiB): a 502 naming the
provider and the cap, within a deadline, with memory to spare, while other callers are served.
"""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

from gateway.upstream.upstream import Upstream, parse_off_loop
from providers.base import UpstreamRequest, UpstreamResponse
from tests.fakes.harness import FakeServer
from tests.security.conftest import hostile_config
from tests.security.helpers import PeakRss
from translators.errors import UpstreamError

MIB = 1024 * 1024
GIB = 1024 * MIB
S1 = {"model": "jev", "state": "I was charged twice.", "questions": {"q": {"type": "noul", "instructions": "Billing?"}}}


@pytest.fixture(scope="module")
def bomber():
    with FakeServer() as fake:
        yield fake


async def test_a_gzip_bomb_is_dropped_at_the_cap_without_the_memory(bomber):
    bomber.bomb_next(GIB)
    async with Upstream() as upstream:
        request = UpstreamRequest(method="POST", url=bomber.url + "/v1/systemone", headers={}, json={}, timeout=30)
        started = time.monotonic()
        with PeakRss() as memory, pytest.raises(UpstreamError) as err:
            await upstream.send(request, "typesafe")
        took = time.monotonic() - started
        assert err.value.status == 502 and err.value.provider == "typesafe"
        assert "typesafe" in err.value.message and str(16 * MIB) in err.value.message
        assert took < 5 and memory.growth < 300 * MIB
        bomber.queue(200, json={"ok": True})  # the pool still works after a dropped answer
        resp = await upstream.send(request, "typesafe")
        assert resp.status == 200 and resp.json() == {"ok": True}


async def test_the_cap_is_a_setting_and_counts_decoded_bytes(bomber):
    async with Upstream(max_response_bytes=2 * MIB) as upstream:
        request = UpstreamRequest(method="GET", url=bomber.url + "/x", headers={}, timeout=10)
        bomber.bomb_next(4 * MIB)  # 4 KB on the wire, 4 MiB decoded
        with pytest.raises(UpstreamError) as err:
            await upstream.send(request, "openai")
        assert str(2 * MIB) in err.value.message
        bomber.queue(200, body=b"x" * (3 * MIB))  # plain, over the cap by its length
        with pytest.raises(UpstreamError):
            await upstream.send(request, "openai")
        bomber.bomb_next(1 * MIB)
        assert len((await upstream.send(request, "openai")).body) == MIB


async def test_large_answers_are_parsed_off_the_event_loop():
    seen = []

    def parse(resp: UpstreamResponse, tag: str) -> str:
        seen.append(threading.current_thread() is threading.main_thread())
        return tag

    small = UpstreamResponse(200, {}, b"{}")
    large = UpstreamResponse(200, {}, b" " * (1 * MIB))
    assert await parse_off_loop(parse, small, "s") == "s" and await parse_off_loop(parse, large, "l") == "l"
    assert seen == [True, False]


def test_a_bomb_through_the_gateway_is_a_502_and_other_callers_are_served(gateway_factory, bomber):
    with FakeServer() as openai_fake:
        gw = gateway_factory(hostile_config(bomber, openai_fake))
        bomber.bomb_next(GIB)

        async def scenario() -> tuple[httpx.Response, float]:
            async with httpx.AsyncClient(base_url=gw.url, timeout=30) as client:
                bomb = asyncio.ensure_future(client.post("/v1/systemone", json=S1))
                await asyncio.sleep(0.05)
                worst = 0.0
                while not bomb.done():
                    started = time.monotonic()
                    health = await client.get("/health/liveliness")
                    worst = max(worst, time.monotonic() - started)
                    assert health.status_code == 200
                    await asyncio.sleep(0.01)
                return await bomb, worst

        started = time.monotonic()
        with PeakRss() as memory:
            answer, worst = asyncio.run(scenario())
        assert answer.status_code == 502 and "typesafe" in answer.text.lower() and str(16 * MIB) in answer.text
        assert time.monotonic() - started < 5 and worst < 1.0 and memory.growth < 300 * MIB
