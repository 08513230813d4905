"""Fixtures for the shared state tests: a state per backend, a key prefix per test, throwaway Redis servers.

The Redis tests use the Redis at ``DECISIONS_GATEWAY_TEST_REDIS_URL`` (default
``redis://127.0.0.1:6379/0``); CI starts one, so an unreachable Redis fails these tests instead of
skipping them. Every test writes under its own random prefix and deletes what it wrote. The
failover tests start their own ``redis-server`` on a free port and never touch that one.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TypeVar

import pytest
import pytest_asyncio

from gateway.shared_state import MemoryState, RedisState, SharedState

REDIS_URL = os.environ.get("DECISIONS_GATEWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
START_TIMEOUT_S = 10.0
# How long a test waits for work that runs behind a response (a spend row drained, a metric settled,
# a background task ended): generous, for a loaded machine running the suite in several processes.
SETTLE_TIMEOUT_S = 30.0
T = TypeVar("T")


def make_redis_state() -> RedisState:
    """A RedisState on the test Redis with timeouts generous enough for a loaded CI machine (the
    behaviour under test is the semantics; the failover tests keep the short defaults)."""
    return RedisState(REDIS_URL, connect_timeout_s=2, socket_timeout_s=2, pool_timeout_s=2)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def wait_until(condition: Callable[[], Awaitable[bool] | bool], timeout_s: float,
                     what: str) -> None:
    """Poll ``condition`` every 20 ms until it holds; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout_s} s: {what}")
        await asyncio.sleep(0.02)


def wait_for(condition: Callable[[], T], timeout_s: float = SETTLE_TIMEOUT_S, what: str | Callable[[], str] = "",
             every_s: float = 0.02) -> T:
    """The synchronous ``wait_until``: poll ``condition`` until it returns something true and return
    that; fail naming ``what`` (what did not happen; a callable to say it as it is then) after
    ``timeout_s``. For a test that waits on work behind a response: never a sleep that stands for "it
    has finished by now"."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout_s} s: {what() if callable(what) else what}")
        time.sleep(every_s)


@pytest.fixture
def prefix() -> str:
    return f"test:shared-state:{uuid.uuid4().hex}:"


async def delete_prefix(prefix: str) -> None:
    """Delete every key under ``prefix`` in the test Redis."""
    state = make_redis_state()
    try:
        await state.delete_prefix(prefix)
    finally:
        await state.close()


@pytest_asyncio.fixture(loop_scope="function")
async def redis_state(prefix: str) -> AsyncIterator[RedisState]:
    state = make_redis_state()
    yield state
    await state.close()
    await delete_prefix(prefix)


@pytest_asyncio.fixture(loop_scope="function", params=["memory", "redis"])
async def state(request: pytest.FixtureRequest, prefix: str) -> AsyncIterator[SharedState]:
    shared: SharedState = MemoryState() if request.param == "memory" else make_redis_state()
    yield shared
    await shared.close()
    if request.param == "redis":
        await delete_prefix(prefix)


class RedisServer:
    """A throwaway ``redis-server`` (no persistence) on one port, started and killed at will."""

    def __init__(self) -> None:
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            pytest.fail("redis-server is not on PATH (the failover tests start their own)")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        self.kill()
        pytest.fail(f"redis-server on port {self.port} did not start within {START_TIMEOUT_S} s")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    yield server
    server.kill()
