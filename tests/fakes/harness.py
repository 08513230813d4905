"""A small real HTTP server for fake upstreams: a free 127.0.0.1 port, a background thread.

It records every request (method, path, query, headers, raw body, decoded JSON) and answers each
one from the queue of scripted responses first (status, headers, body, delay), then from its
``handle`` method, which a fake upstream overrides to behave as its spec documents.

    with FakeServer() as fake:
        fake.queue(status=429, headers={"Retry-After": "1"}, json={"error": "slow down"})
        ...  # call fake.url
        assert fake.requests[0].headers["authorization"] == "Bearer k"
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
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

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)


@dataclass
class Scripted:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    delay: float = 0.0  # seconds to wait before answering (to provoke client timeouts)

    @classmethod
    def of_json(cls, status: int, payload: Any, headers: dict[str, str] | None = None, delay: float = 0.0) -> "Scripted":
        return cls(status, {"Content-Type": "application/json", **(headers or {})},
                   json.dumps(payload).encode(), delay)


class FakeServer:
    """Override ``handle(rec) -> Scripted``; the default answers 404."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._scripted: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> "FakeServer":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                rec = Recorded(self.command, parts.path, parse_qs(parts.query),
                               {k.lower(): v for k, v in self.headers.items()}, raw, _json_or_none(raw))
                answer = fake._answer(rec)
                if answer.delay:
                    time.sleep(answer.delay)
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
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeServer":
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
        if scripted is not None:
            return scripted
        try:
            return self.handle(rec)
        except Exception as exc:  # a bug in a fake must show up, not hang the client
            return Scripted.of_json(500, {"fake_error": f"{type(exc).__name__}: {exc}"})

    def handle(self, rec: Recorded) -> Scripted:
        return Scripted.of_json(404, {"detail": "Not Found"})


def _json_or_none(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
