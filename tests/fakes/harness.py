"""A small real HTTP server for fake upstreams: a free 127.0.0.1 port, a background thread.

It records every request (method, path, query, headers, raw body, decoded JSON) and answers each
one from the queue of scripted responses first (status, headers, body, delay), then from its
``handle`` method, which a fake upstream overrides to behave as its spec documents.

Hostile modes, for the gateway's hardening tests (each answers the next request only):

* ``echo_key_next(status, json=..., headers=...)``: every ``{key}`` in the JSON strings and header
  values becomes the credential the request carried (``Authorization: Bearer`` or ``x-api-key``).
* ``bomb_next(decoded_bytes)``: a small gzip body that inflates to ``decoded_bytes`` of zeros.
* ``hang_next(seconds)``: accept the request and answer nothing until ``seconds`` pass, ``release()``
  is called or the fake stops.
* ``reset_next(when)``: reset the TCP connection (RST, not a clean close) before answering
  (``"before"``) or after the status line, headers and part of the body (``"mid_body"``).

    with FakeServer() as fake:
        fake.queue(status=429, headers={"Retry-After": "1"}, json={"error": "slow down"})
        ...  # call fake.url
        assert fake.requests[0].headers["authorization"] == "Bearer k"
"""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: bytes
    json: Any = None  # the decoded JSON body, or None
    time: float = field(default_factory=time.monotonic)  # when it arrived (order across fakes)

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)


@dataclass
class Scripted:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    delay: float = 0.0  # seconds to wait before answering (to provoke client timeouts)
    hang: float = 0.0  # seconds to hold the request unanswered (cut short by release() or stop())
    reset: str = ""  # "before" / "mid_body": reset the connection instead of answering (see reset_next)

    @classmethod
    def of_json(cls, status: int, payload: Any, headers: dict[str, str] | None = None, delay: float = 0.0) -> Scripted:
        return cls(status, {"Content-Type": "application/json", **(headers or {})},
                   json.dumps(payload).encode(), delay)


class FakeServer:
    """Override ``handle(rec) -> Scripted``; the default answers 404."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._scripted: deque[Scripted | Callable[[Recorded], Scripted]] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._released = threading.Event()
        self.hanging = 0  # requests being held by hang_next right now
        self.abandoned = 0  # held requests whose client closed the connection (a cancelled call)

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY: the head and the body go out as two writes, and with Nagle's algorithm the
            # body waited for the client's delayed ACK of the head: 40 ms on every kept-alive answer.
            disable_nagle_algorithm = True

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                rec = Recorded(self.command, parts.path, parse_qs(parts.query),
                               {k.lower(): v for k, v in self.headers.items()}, raw, _json_or_none(raw))
                answer = fake._answer(rec)
                if answer.delay:
                    time.sleep(answer.delay)
                if answer.hang and not fake._hold(answer.hang, self.connection):
                    self.close_connection = True  # the client went away while held: nothing to answer
                    return
                if answer.reset:
                    _reset(self, answer)
                    return
                try:
                    self.send_response(answer.status)
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
                    pass

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, *args) -> None:  # keep test output clean
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the fake first"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ---- scripting and records -------------------------------------------------------------

    def queue(self, status: int = 200, *, json: Any = None, body: bytes | str | None = None,
              headers: dict[str, str] | None = None, delay: float = 0.0) -> None:
        """Answer the next request with this instead of ``handle`` (FIFO)."""
        if json is not None:
            scripted = Scripted.of_json(status, json, headers, delay)
        else:
            raw = body.encode() if isinstance(body, str) else (body or b"")
            scripted = Scripted(status, dict(headers or {}), raw, delay)
        with self._lock:
            self._scripted.append(scripted)

    def queue_answer(self, answer: Callable[[Recorded], Scripted]) -> None:
        """Answer the next request with ``answer(recorded_request)``."""
        with self._lock:
            self._scripted.append(answer)

    def echo_key_next(self, status: int = 401, *, json: Any = None, headers: dict[str, str] | None = None) -> None:
        """The next answer repeats the request's own credential wherever ``{key}`` is written."""
        def answer(rec: Recorded) -> Scripted:
            key = credential(rec)
            return Scripted.of_json(status, _fill(json, key), {k: _fill(v, key) for k, v in (headers or {}).items()})

        self.queue_answer(answer)

    def bomb_next(self, decoded_bytes: int = 1 << 30, *, status: int = 200) -> None:
        """The next answer: about 1 KB of gzip per MiB, inflating to ``decoded_bytes`` of zeros."""
        self.queue(status, body=gzip_bomb(decoded_bytes),
                   headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})

    def hang_next(self, seconds: float = 60.0) -> None:
        """Hold the next request without an answer for ``seconds`` (or until ``release()``)."""
        with self._lock:
            self._scripted.append(Scripted(200, {"Content-Type": "application/json"}, b"{}", hang=seconds))

    def reset_next(self, when: str = "before") -> None:
        """Reset the next request's connection: ``"before"`` any byte of an answer, or ``"mid_body"``."""
        if when not in ("before", "mid_body"):
            raise ValueError("reset_next: 'before' or 'mid_body'")
        with self._lock:
            self._scripted.append(Scripted(200, {"Content-Type": "application/json"}, b'{"answers": {}}',
                                           reset=when))

    def release(self) -> None:
        """Let every held request go (they answer ``{}``); later hang_next calls hold again."""
        released, self._released = self._released, threading.Event()
        released.set()

    def _hold(self, seconds: float, connection: socket.socket | None = None) -> bool:
        """Hold a request until released or ``seconds`` pass; False (and ``abandoned`` counted) when
        the client closed the connection meanwhile, as a cancelled upstream call does."""
        released = self._released
        with self._lock:
            self.hanging += 1
        try:
            deadline = time.monotonic() + seconds
            while not released.wait(0.02):
                if connection is not None and _closed_by_peer(connection):
                    with self._lock:
                        self.abandoned += 1
                    return False
                if time.monotonic() >= deadline:
                    break
            return True
        finally:
            with self._lock:
                self.hanging -= 1

    @property
    def last(self) -> Recorded:
        return self.requests[-1]

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._scripted.clear()

    def _answer(self, rec: Recorded) -> Scripted:
        with self._lock:
            self.requests.append(rec)
            scripted = self._scripted.popleft() if self._scripted else None
        if callable(scripted):
            return scripted(rec)
        if scripted is not None:
            return scripted
        try:
            return self.handle(rec)
        except Exception as exc:  # a bug in a fake must show up, not hang the client
            return Scripted.of_json(500, {"fake_error": f"{type(exc).__name__}: {exc}"})

    def handle(self, rec: Recorded) -> Scripted:
        return Scripted.of_json(404, {"detail": "Not Found"})


def _reset(handler: BaseHTTPRequestHandler, answer: Scripted) -> None:
    """Send part of the answer (``mid_body``) or nothing, then close with SO_LINGER 0: a TCP RST."""
    handler.close_connection = True
    sock = handler.connection
    try:
        if answer.reset == "mid_body":
            head = (f"HTTP/1.1 {answer.status} OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(answer.body) + 1000}\r\n\r\n").encode()
            handler.wfile.write(head + answer.body[: max(1, len(answer.body) // 2)])
            handler.wfile.flush()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    except OSError:
        pass


def _closed_by_peer(connection: socket.socket) -> bool:
    """Whether the client closed its side: the socket is readable and a peek reads end-of-file."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def credential(rec: Recorded) -> str:
    """The key a request carried: ``Authorization: Bearer <key>`` or ``x-api-key``."""
    auth = rec.header("authorization") or ""
    return auth.removeprefix("Bearer ").strip() or rec.header("x-api-key") or ""


def _fill(value: Any, key: str) -> Any:
    if isinstance(value, str):
        return value.replace("{key}", key)
    if isinstance(value, dict):
        return {_fill(k, key): _fill(v, key) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, key) for v in value]
    return value


@lru_cache(maxsize=4)
def gzip_bomb(decoded_bytes: int, block: int = 1 << 20) -> bytes:
    """A valid gzip stream of ``decoded_bytes`` zeros (a multiple of ``block``), built in about 0.3 s
    per GiB: one fully flushed deflate block of zeros, repeated, with the right CRC and length."""
    if decoded_bytes % block or decoded_bytes <= 0:
        raise ValueError(f"decoded_bytes must be a positive multiple of {block}")
    zeros = bytes(block)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    repeat = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    end = deflate.flush(zlib.Z_FINISH)
    blocks = decoded_bytes // block
    crc = 0
    for _ in range(blocks):
        crc = zlib.crc32(zeros, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + first + repeat * (blocks - 1) + end + struct.pack("<II", crc, decoded_bytes & 0xFFFFFFFF)


def _json_or_none(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):  # a hostile test's deeply nested body
        return None
