"""Shared pieces of the hostile-input tests: raw HTTP over sockets, memory sampling, a gateway with
pass-through environment variables set before it starts."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

from tests.conftest import RunningGateway, start_gateway
from tests.shared_state.conftest import wait_for

PAGE = os.sysconf("SC_PAGE_SIZE")


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 80


def raw_exchange(gateway: RunningGateway, head: bytes, body: bytes = b"", *,
                 timeout: float = 10.0) -> tuple[int, bytes]:
    """Send ``head`` (request line + headers, without the blank line) and ``body`` as written;
    return (status, the whole response) read until the server closes or ``timeout``."""
    before = in_hand(gateway)
    with socket.create_connection(address(gateway.url), timeout=timeout) as sock:
        sock.sendall(head + b"\r\nConnection: close\r\n\r\n" + body)
        answer = read_response(sock, timeout)
    let_the_server_settle(gateway, before)
    return answer


def in_hand(gateway: RunningGateway) -> set[object]:
    """The connections the gateway's server holds open and the requests it is running, now."""
    state = gateway.server.server_state
    return {*state.connections, *state.tasks}


def let_the_server_settle(gateway: RunningGateway, before: set[object]) -> None:
    """Wait until the gateway's server has finished with the connections the test opened since
    ``before = in_hand(gateway)`` (closed, their requests ended); fail after the deadline.

    Should the gateway log a traceback for one (as it did before the body reader existed), Python
    3.11 renders the traceback's carets with ``ast.parse``, which is not safe to run in two threads
    at once: pytest formatting a failure at the same moment dies with "AST constructor recursion
    depth mismatch" and ends the whole session. Waiting first keeps a failure a plain failure.
    """
    wait_for(lambda: in_hand(gateway) <= before, what=lambda: "the gateway to finish with the test's "
             f"connections: {len(in_hand(gateway) - before)} still open or running")


def read_response(sock: socket.socket, timeout: float) -> tuple[int, bytes]:
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        except OSError:  # reset after the server answered and closed
            break
        if not chunk:
            break
        data += chunk
        if _complete(data):
            break
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return status, data


def _complete(data: bytes) -> bool:
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class PeakRss:
    """The process's peak resident memory above where it stood at the start, sampled every 5 ms."""

    def __init__(self) -> None:
        self.baseline = rss_bytes()
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_bytes())

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())

    @property
    def growth(self) -> int:
        return self.peak - self.baseline


@contextlib.contextmanager
def gateway_with_env(config: dict, env: dict[str, str]):
    """A gateway of its own, started with ``env`` set (pass-through targets are read at start)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        running: RunningGateway = start_gateway(config)
        try:
            yield running
        finally:
            running.stop()
