"""Issue 8 items 7 and 8: clients that go away mid-body, and clients that are slow on purpose.

A client that disconnected mid-body was logged as an internal error with a traceback and recorded
as 500; now reading the body raises ``ClientDisconnected`` (status 499, one log line). Slow clients
were never cut off (400 connections sending their headers slowly were all open after 30 s); now
the headers have a deadline (``request_header_timeout_s``) enforced by the gateway's uvicorn
protocol, and the body one of its own (``request_read_timeout_s``, 408).
"""

from __future__ import annotations

import asyncio
import logging
import select
import socket
import threading
import time

import pytest
import uvicorn
from starlette.requests import ClientDisconnect

from gateway.cli import uvicorn_config, uvicorn_settings
from gateway.config.limits import LimitsSettings
from gateway.decode.body import BodyError, ClientDisconnected, read_body_capped
from gateway.edge.http_protocol import HeaderDeadlineProtocol
from tests.conftest import RunningGateway
from tests.fakes.harness import FakeServer
from tests.security.conftest import hostile_config
from tests.security.helpers import address, in_hand, let_the_server_settle, read_response
from tests.shared_state.conftest import SETTLE_TIMEOUT_S, wait_for


def receiver(messages: list[dict]):
    async def receive():
        if messages:
            return messages.pop(0)
        await asyncio.sleep(3600)

    return receive


# ---- item 7: a client that goes away -----------------------------------------------------------------


async def test_a_disconnect_mid_body_is_client_disconnected_not_an_error():
    receive = receiver([{"type": "http.request", "body": b'{"model": ', "more_body": True},
                        {"type": "http.disconnect"}])
    with pytest.raises(ClientDisconnected) as err:
        await read_body_capped(receive, 1000)
    assert isinstance(err.value, ClientDisconnect) and err.value.status == 499
    assert not isinstance(err.value, BodyError)


def next_record(gw, seen: int, timeout_s: float = SETTLE_TIMEOUT_S):
    """The first request record after the ``seen`` ones (the ids are the gateway's own), or None."""
    deadline = time.monotonic() + timeout_s
    while len(gw.state.pipeline.request_log) <= seen and time.monotonic() < deadline:
        time.sleep(0.02)
    log = list(gw.state.pipeline.request_log)
    return log[seen] if len(log) > seen else None


def test_a_client_that_disconnects_mid_body_is_recorded_as_499_without_a_traceback(gateway_factory, caplog):
    with FakeServer() as typesafe, FakeServer() as openai_fake:
        gw = gateway_factory(hostile_config(typesafe, openai_fake))
        with caplog.at_level(logging.INFO):
            seen, before = len(gw.state.pipeline.request_log), in_hand(gw)
            with socket.create_connection(address(gw.url)) as sock:
                sock.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 1000\r\n\r\n{\"model\": ")
                wait_for(lambda: gw.server.server_state.tasks - before, what="the request reached the gateway's app")
            let_the_server_settle(gw, before)
            record = next_record(gw, seen)
        assert record is not None and record.path == "/v1/systemone" and record.status == 499
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
        assert errors == [], [r.getMessage() for r in errors]
        assert typesafe.requests == []


def test_a_client_that_leaves_while_the_upstream_works_cancels_the_upstream_call(gateway_factory, caplog):
    import json

    from tests.fakes.typesafe import FakeTypeSafe
    from tests.security.conftest import TYPESAFE_KEY

    body = json.dumps({"model": "jev", "state": "Charged twice.",
                       "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}).encode()
    with FakeTypeSafe(TYPESAFE_KEY) as typesafe, FakeServer() as openai_fake:
        gw = gateway_factory(hostile_config(typesafe, openai_fake))
        abandoned = []
        for n in range(5):  # several abandoned requests: none keeps its upstream call open
            typesafe.hang_next(30)
            seen = len(gw.state.pipeline.request_log)
            with caplog.at_level(logging.INFO), socket.create_connection(address(gw.url)) as sock:
                sock.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                wait_for(lambda: typesafe.hanging >= 1, what="the call reached the upstream and hangs there")
                assert typesafe.hanging == 1
            wait_for(lambda n=n: typesafe.abandoned >= n + 1, what=f"upstream call {n + 1} abandoned when its client left")
            abandoned.append(typesafe.abandoned)
            record = next_record(gw, seen)
            assert record is not None and record.status == 499
        assert abandoned == [1, 2, 3, 4, 5]  # each upstream call was cancelled when its client left
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
        assert errors == [], [r.getMessage() for r in errors]


# ---- item 8: slow clients ------------------------------------------------------------------------------


async def test_a_body_that_does_not_arrive_in_time_is_a_408():
    receive = receiver([{"type": "http.request", "body": b"{", "more_body": True}])
    started = time.monotonic()
    with pytest.raises(BodyError) as err:
        await read_body_capped(receive, 1000, timeout_s=0.3)
    assert err.value.status == 408 and "request_read_timeout_s" in err.value.message
    assert time.monotonic() - started < 2


def test_the_gateway_serves_with_its_connection_limits():
    settings = uvicorn_settings(LimitsSettings(keep_alive_timeout_s=3, max_concurrent_connections=50))
    assert settings["http"] is HeaderDeadlineProtocol
    assert settings["timeout_keep_alive"] == 3 and settings["limit_concurrency"] == 50
    assert settings["h11_max_incomplete_event_size"] <= 64 * 1024


@pytest.fixture(scope="module")
def slow_gateway():
    """The app served exactly as ``decisions-gateway`` serves it (gateway.cli.uvicorn_config)."""
    from gateway.config.loader import build_config
    from gateway.edge.app import create_app

    with FakeServer() as typesafe, FakeServer() as openai_fake:
        config = build_config(hostile_config(typesafe, openai_fake, request_header_timeout_s=1,
                                             request_read_timeout_s=1), {})
        server = uvicorn.Server(uvicorn_config(create_app(config), config.limits, host="127.0.0.1", port=0,
                                               log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        running = RunningGateway(f"http://127.0.0.1:{port}", server.config.app, server, thread)
        yield running
        running.stop()


def _still_open(socks: list[socket.socket]) -> list[socket.socket]:
    """The sockets the server has not closed (a closed one is readable and reads b"" or fails;
    whatever it sent before closing is read and dropped)."""
    readable = set(select.select(socks, [], [], 0)[0]) if socks else set()
    still = []
    for sock in socks:
        if sock in readable:
            try:
                if sock.recv(65536) == b"":
                    continue
            except OSError:
                continue
        still.append(sock)
    return still


def test_slowloris_connections_are_closed_within_the_header_deadline(slow_gateway):
    socks = [socket.create_connection(address(slow_gateway.url)) for _ in range(200)]
    slow = socks[:150]  # a header line every 0.2 s, never the blank line; the other 50 send nothing at all
    try:
        for sock in slow:
            sock.sendall(b"GET /health/liveliness HTTP/1.1\r\n")
        started = time.monotonic()
        open_socks = list(socks)
        while open_socks and time.monotonic() - started < 5:
            for sock in set(slow) & set(open_socks):
                try:
                    sock.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    pass
            time.sleep(0.2)
            open_socks = _still_open(open_socks)
        assert open_socks == [] and time.monotonic() - started < 4
    finally:
        for sock in socks:
            sock.close()


def test_a_request_whose_headers_arrive_in_time_is_served_and_kept_alive(slow_gateway):
    with socket.create_connection(address(slow_gateway.url)) as sock:
        for _ in range(2):
            sock.sendall(b"GET /health/liveliness HTTP/1.1\r\nHost: x\r\n\r\n")
            status, data = read_response(sock, 30)
            assert status == 200 and data.endswith(b'"healthy"}')
            time.sleep(1.3)  # idle past the header deadline: a kept-alive connection waits for its next request


def test_a_body_that_trickles_is_cut_off_with_a_408(slow_gateway):
    before = in_hand(slow_gateway)
    with socket.create_connection(address(slow_gateway.url)) as sock:
        sock.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 200\r\n\r\n{")
        started = time.monotonic()
        status, _ = read_response(sock, 5)
        took = time.monotonic() - started
    let_the_server_settle(slow_gateway, before)
    assert status == 408 and took < 3
