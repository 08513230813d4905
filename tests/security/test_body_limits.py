"""Issue 8 items 4, 5 and 9: request bodies are capped as sent and once decoded, multipart bodies
are capped in parts and bytes per part (and split without the line-by-line email parser), heavy
decodes share a bounded pool, and only JSON (or multipart on System One) is accepted.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import select
import socket
import threading
import time

import httpx
import pytest
import zstandard
from starlette.requests import Request
from typesafe_sdk._core.multipart import Part, encode_multipart

from gateway.config.limits import LimitsSettings
from gateway.decode.body import (
    MAX_DECODED_BYTES,
    BodyError,
    HeavyDecodes,
    check_content_type,
    decode_body,
    needs_thread,
    read_body_capped,
)
from gateway.decode.multipart import MultipartError, split_multipart
from tests.security.helpers import address, in_hand, let_the_server_settle, raw_exchange, read_response
from tests.shared_state.conftest import SETTLE_TIMEOUT_S, wait_until

MIB = 1024 * 1024
S1 = {"model": "jev", "state": "I was charged twice.", "questions": {"q": {"type": "noul", "instructions": "Billing?"}}}
OAI = {"model": "jev", "input": "I was charged twice.",
       "questions": [{"type": "predicate", "name": "q", "instructions": "Billing?"}]}


def receiver(chunks: list[bytes], *, then: list[dict] | None = None, delay: float = 0.0):
    """An ASGI ``receive`` giving ``chunks`` as http.request messages, then ``then`` (or waiting forever)."""
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    if then is not None:
        messages[-1]["more_body"] = True
        messages += then
    calls = {"n": 0}

    async def receive():
        calls["n"] += 1
        if delay:
            await asyncio.sleep(delay)
        if messages:
            return messages.pop(0)
        await asyncio.sleep(3600)

    receive.calls = calls
    return receive


# ---- item 4: the request body is capped as it is read ---------------------------------------------


async def test_read_body_capped_returns_the_body():
    assert await read_body_capped(receiver([b"ab", b"cd", b""]), 10) == b"abcd"


async def test_read_body_capped_stops_reading_as_soon_as_it_is_over():
    receive = receiver([b"x" * 6, b"x" * 6, b"x" * 6, b"x" * 6])
    with pytest.raises(BodyError) as err:
        await read_body_capped(receive, 10)
    assert err.value.status == 413 and "max_request_body_bytes" in err.value.message
    assert receive.calls["n"] == 2


async def test_a_declared_length_over_the_cap_is_refused_before_reading():
    receive = receiver([b"{}"])
    request = Request({"type": "http", "method": "POST", "path": "/", "headers": [(b"content-length", b"99999")]},
                      receive)
    with pytest.raises(BodyError) as err:
        await read_body_capped(request, 1000)
    assert err.value.status == 413 and receive.calls["n"] == 0
    bad = Request({"type": "http", "method": "POST", "path": "/", "headers": [(b"content-length", b"1e3")]}, receive)
    with pytest.raises(BodyError) as err:
        await read_body_capped(bad, 1000)
    assert err.value.status == 400


async def test_the_body_read_from_a_request_stays_readable():
    request = Request({"type": "http", "method": "POST", "path": "/", "headers": [(b"content-length", b"4")]},
                      receiver([b"ab", b"cd"]))
    assert await read_body_capped(request, 10) == b"abcd"
    assert await request.body() == b"abcd"  # a later step may read it again


def test_the_default_caps_are_16_mib():
    settings = LimitsSettings()
    assert MAX_DECODED_BYTES == settings.max_request_body_bytes == 16 * MIB
    assert settings.max_upstream_response_bytes == 16 * MIB


def test_a_decompressed_body_over_16_mib_is_refused_by_default():
    raw = b'{"state": "' + b" " * (17 * MIB) + b'"}'
    for encoding, data in (("zstd", zstandard.ZstdCompressor().compress(raw)), ("gzip", gzip.compress(raw, 1))):
        with pytest.raises(BodyError) as err:
            decode_body(data, "application/json", encoding)
        assert err.value.status == 413 and "max_request_body_bytes" in err.value.message


def test_the_decoded_cap_follows_the_setting():
    data = zstandard.ZstdCompressor().compress(json.dumps({"s": "x" * 5000}).encode())
    with pytest.raises(BodyError):
        decode_body(data, "application/json", "zstd", limits=LimitsSettings(max_request_body_bytes=4096))


async def test_heavy_decodes_run_at_most_n_at_once_and_keep_their_slot_until_done():
    heavy = HeavyDecodes(2)
    lock, now, peak = threading.Lock(), [0], [0]

    def work(seconds: float) -> str:
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(seconds)
        with lock:
            now[0] -= 1
        return threading.current_thread().name

    names = await asyncio.gather(*(heavy.run(work, 0.05) for _ in range(6)))
    assert peak[0] == 2 and all(name.startswith("heavy-decode") for name in names)
    began, release = threading.Event(), threading.Event()

    def held() -> None:
        began.set()
        release.wait(SETTLE_TIMEOUT_S)

    waiter = asyncio.ensure_future(heavy.run(held))
    await wait_until(began.is_set, SETTLE_TIMEOUT_S, "the work began in its thread")
    waiter.cancel()  # the caller gives up, the thread keeps working: its slot stays taken
    await asyncio.sleep(0)  # the cancellation is delivered
    assert waiter.cancelled() and heavy.running == 1
    release.set()  # the work ends: only now is its slot given back
    await wait_until(lambda: heavy.running == 0, SETTLE_TIMEOUT_S, "the slot given back when the work ended")
    heavy.close()


def test_small_plain_bodies_are_decoded_inline():
    assert not needs_thread(2000, "application/json", None)
    assert needs_thread(64 * 1024, "application/json", None)
    assert needs_thread(100, "application/json", "zstd")
    assert needs_thread(100, "multipart/form-data; boundary=x", None)


def test_a_declared_length_over_16_mib_is_a_413_before_the_body_is_sent(gateway):
    head = (b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d" % (17 * MIB))
    started = time.monotonic()
    status, _ = raw_exchange(gateway, head, timeout=30)
    assert status == 413 and time.monotonic() - started < 3


def test_a_chunked_body_is_cut_off_once_over_16_mib(gateway):
    before = in_hand(gateway)
    with socket.create_connection(address(gateway.url), timeout=10) as sock:
        sock.sendall(b"POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (64 * 1024, b" " * 64 * 1024)
        sent = 0
        try:
            while sent < 48 * MIB and not select.select([sock], [], [], 0)[0]:
                sock.sendall(chunk)
                sent += 64 * 1024
            if sent >= 48 * MIB:
                sock.sendall(b'1\r\n{\r\n0\r\n\r\n')
        except OSError:  # the server answered and closed while the client was still sending
            pass
        status, _ = read_response(sock, 10)
    let_the_server_settle(gateway, before)
    assert status == 413
    assert sent < 32 * MIB  # answered once over the cap, not after reading everything


def test_the_body_cap_is_a_setting(gateway_factory, hostile_typesafe, hostile_openai):
    from tests.security.conftest import hostile_config

    gw = gateway_factory(hostile_config(hostile_typesafe, hostile_openai, max_request_body_bytes=MIB))
    body = json.dumps({**S1, "state": "x" * (2 * MIB)}).encode()
    r = httpx.post(gw.url + "/v1/systemone", content=body, headers={"Content-Type": "application/json"}, timeout=10)
    assert r.status_code == 413 and str(MIB) in r.text


# ---- item 5: multipart parts ------------------------------------------------------------------------


def many_parts(n: int) -> tuple[str, bytes]:
    return encode_multipart([Part("request", "application/json", json.dumps(S1).encode())]
                            + [Part(f"asset-{i}", "image/png", b"\x89PNG", f"asset-{i}") for i in range(n)])


def test_ten_thousand_parts_are_refused_before_splitting():
    content_type, content = many_parts(10_000)
    started = time.perf_counter()
    with pytest.raises(BodyError) as err:
        decode_body(content, content_type, None)
    assert time.perf_counter() - started < 0.5
    assert err.value.status == 400 and "64" in err.value.message and "max_multipart_parts" in err.value.message


def test_up_to_64_parts_are_read_and_one_more_is_refused():
    content_type, content = many_parts(63)
    assert len(decode_body(content, content_type, None).parts) == 63
    content_type, content = many_parts(64)
    with pytest.raises(BodyError):
        decode_body(content, content_type, None)


def test_a_part_over_the_per_part_cap_is_a_413_naming_it():
    content_type, content = encode_multipart([Part("request", "application/json", b"{}"),
                                              Part("asset-0", "image/png", b"x" * 2048)])
    with pytest.raises(MultipartError) as err:
        split_multipart(content, content_type, max_part_bytes=1024)
    assert err.value.status == 413 and "'asset-0'" in err.value.message


def test_a_part_full_of_line_breaks_is_split_in_milliseconds():
    content_type, content = encode_multipart([Part("request", "application/json", json.dumps(S1).encode()),
                                              Part("asset-0", "image/png", b"\n" * (8 * MIB - 1), "asset-0")])
    started = time.perf_counter()  # the email parser took 13 s for 16 MiB of line breaks
    decoded = decode_body(content, content_type, None)
    assert time.perf_counter() - started < 1.0 and len(decoded.parts["asset-0"][1]) == 8 * MIB - 1


def test_two_parts_with_one_name_are_refused():
    content_type, content = encode_multipart([Part("request", "application/json", b"{}"),
                                              Part("asset-0", "image/png", b"a"), Part("asset-0", "image/png", b"b")])
    with pytest.raises(MultipartError) as err:
        split_multipart(content, content_type)
    assert "two parts named 'asset-0'" in err.value.message


def test_the_splitter_reads_what_the_email_parser_read():
    content = (b"preamble\r\n--b\r\nContent-Disposition: form-data; name=\"request\"\r\nContent-Type: application/json"
               b"\r\n\r\n{\"a\": 1}\r\n--b\r\nContent-Disposition: form-data; name=\"asset-0\"; filename=\"a.png\"\r\n"
               b"Content-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\r\naGVsbG8=\r\n--b--\r\nepilogue")
    request, parts = split_multipart(content, 'multipart/form-data; boundary="b"')
    assert request == b'{"a": 1}' and parts == {"asset-0": ("image/png", b"hello")}


def test_ten_thousand_parts_over_http_answer_within_a_deadline(gateway, hostile_typesafe):
    content_type, content = many_parts(10_000)
    started = time.monotonic()
    r = httpx.post(gateway.url + "/v1/systemone", content=content, headers={"Content-Type": content_type}, timeout=10)
    assert r.status_code == 400 and "max_multipart_parts" in r.text
    assert time.monotonic() - started < 2 and hostile_typesafe.requests == []


def test_a_burst_of_heavy_bodies_does_not_starve_a_small_request(gateway):
    big = zstandard.ZstdCompressor().compress(json.dumps({**S1, "state": "word " * (3 * MIB)}).encode())

    async def burst() -> float:
        async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as client:
            heavy = [asyncio.ensure_future(client.post("/v1/systemone", content=big, headers={
                "Content-Type": "application/json", "Content-Encoding": "zstd"})) for _ in range(16)]
            await wait_until(lambda: gateway.state.pipeline.heavy.running > 0, SETTLE_TIMEOUT_S,
                             "the heavy bodies are being decoded")
            started = time.monotonic()
            small = await client.post("/v1/systemone", json=S1)
            took = time.monotonic() - started
            assert small.status_code == 200, small.text
            await asyncio.gather(*heavy)
            return took

    assert asyncio.run(burst()) < 2.0


# ---- item 9: only JSON (and multipart on System One) -------------------------------------------------


@pytest.mark.parametrize("content_type, multipart, kind", [
    ("application/json", True, "json"), ("application/json; charset=utf-8", False, "json"),
    ("Application/JSON", False, "json"), ("application/vnd.typesafe+json", False, "json"),
    ("multipart/form-data; boundary=x", True, "multipart"),
])
def test_accepted_content_types(content_type, multipart, kind):
    assert check_content_type(content_type, multipart) == kind


@pytest.mark.parametrize("content_type, multipart", [
    ("text/plain", True), ("text/plain; charset=utf-8", True), ("application/x-www-form-urlencoded", True),
    (None, True), ("", True), ("multipart/form-data; boundary=x", False), ("application/jsonx", True),
    ("application/json; charset=latin-1", True), ("text/json", True), ("application/zstd", True),
])
def test_refused_content_types_are_415(content_type, multipart):
    with pytest.raises(BodyError) as err:
        check_content_type(content_type, multipart)
    assert err.value.status == 415 and "application/json" in err.value.message


@pytest.mark.parametrize("route, content_type", [
    ("/v1/systemone", "text/plain"), ("/v1/systemone", "application/x-www-form-urlencoded"),
    ("/v1/systemone", None), ("/v1/decisions", "text/plain;charset=UTF-8"),
    ("/v1/decisions", "application/x-www-form-urlencoded"), ("/v1/decisions", None),
    ("/v1/decisions", "multipart/form-data; boundary=b"),
])
def test_a_body_that_is_not_json_is_415_before_any_upstream_call(gateway, hostile_typesafe, route, content_type):
    body = json.dumps(S1 if "systemone" in route else OAI).encode()
    if content_type and content_type.startswith("multipart"):
        body = b'--b\r\nContent-Disposition: form-data; name="request"\r\n\r\n' + body + b"\r\n--b--\r\n"
    headers = {"Content-Type": content_type} if content_type else {}
    with httpx.Client(timeout=10) as client:
        request = client.build_request("POST", gateway.url + route, content=body, headers=headers)
        if content_type is None:
            request.headers.pop("Content-Type", None)
        assert request.headers.get("Content-Type") == content_type
        r = client.send(request)
    assert r.status_code == 415, r.text
    assert hostile_typesafe.requests == []


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "application/vnd.api+json"])
def test_json_content_types_are_served(gateway, content_type):
    r = httpx.post(gateway.url + "/v1/systemone", content=json.dumps(S1).encode(),
                   headers={"Content-Type": content_type}, timeout=10)
    assert r.status_code == 200, r.text
