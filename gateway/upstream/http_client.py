"""The upstream calls' HTTP/1.1 client: kept-alive connections per origin, on asyncio's transports and
httptools' response parser (the C parser uvicorn reads requests with).

    client = HttpClient(max_connections=1000, keepalive_expiry=30.0)
    answer = await client.request("POST", url, headers, body, timeout_s=10, max_bytes=16 << 20)
    answer.status, answer.headers, answer.body                  # headers: lower-case names
    await client.close()

Why not a library: the gateway makes one kind of call, a small request with its whole body at hand
and a bounded answer read to the end. On that call aiohttp's client spent about 80 µs of CPU in
Python (request and response objects, multidicts, timers, stream readers, tracing hooks), this
client about 25 µs (``python -m bench.upstream_client``, docs/benchmarks.md); with it the gateway on
one core answers about a fifth more requests per second. httpx costs more than aiohttp. What this client
does, and no more:

* **Connections.** One pool of idle connections per (scheme, host, port); a connection goes back to it
  only after a complete answer that allows keep-alive, and is dropped when the server closes it or
  after ``keepalive_expiry`` seconds idle. At most ``max_connections`` exchanges at once (the others
  wait). HTTPS with the system's CA store and hostname checks (``ssl.create_default_context``).
  Nothing is sent twice here: a connection closed before its answer (``ClosedBeforeAnswer`` when not
  a byte came back) is the caller's failure, and the router's retry, counted and reported, decides.
* **Requests.** ``Host``, ``Content-Length`` and ``Accept-Encoding: gzip, deflate`` are added; a header
  name or value holding CR, LF or NUL is refused (``ValueError``) before anything is sent.
* **Answers.** Content-Length, chunked, or read until the server closes; gzip and deflate are inflated
  as they arrive, and an answer over ``max_bytes`` decoded is refused (``AnswerTooLarge``) as soon as it
  is over, its connection closed: a 1 GiB gzip bomb costs the cap, not the memory.
* **Failures.** ``timeout_s`` bounds the whole exchange, connecting included (``TimeoutError``); a
  connection refused, reset or closed before the answer is complete is an ``OSError``; an answer that
  is not HTTP is ``UpstreamProtocolError`` (an ``OSError`` too). Redirects are not followed; no proxy
  from the environment, no cookies.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httptools

ACCEPT_ENCODING = b"gzip, deflate"
_FORBIDDEN = frozenset("\r\n\0")
_INFLATE_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class UpstreamProtocolError(OSError):
    """The answer is not well-formed HTTP/1.1 (or its encoding cannot be undone)."""


class ClosedBeforeAnswer(ConnectionResetError):
    """The server closed the connection before a byte of the answer came back."""


class AnswerTooLarge(Exception):
    """The decoded answer is over the caller's ``max_bytes``."""


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    body: bytes


@dataclass(frozen=True, slots=True)
class Origin:
    scheme: str
    host: str
    port: int
    target: str  # the path and query of the URL it was split from
    host_header: bytes


@functools.lru_cache(maxsize=256)
def split_url(url: str) -> Origin:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {parts.scheme}://{parts.hostname or ''}")
    default = 443 if parts.scheme == "https" else 80
    port = parts.port or default
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host
    host_header = (shown if port == default else f"{shown}:{port}").encode("idna")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Origin(parts.scheme, host, port, target, host_header)


def request_bytes(method: str, origin: Origin, headers: Mapping[str, str], body: bytes | None) -> bytes:
    lines = [f"{method} {origin.target} HTTP/1.1".encode("ascii"), b"Host: " + origin.host_header]
    has_encoding = False
    for name, value in headers.items():
        if not _FORBIDDEN.isdisjoint(name) or not _FORBIDDEN.isdisjoint(value) or not name:
            raise ValueError(f"the header {name[:40]!r} cannot be sent (empty, or CR, LF or NUL in it)")
        lowered = name.lower()
        if lowered in ("host", "content-length", "transfer-encoding", "connection"):
            continue  # this client's to set
        has_encoding = has_encoding or lowered == "accept-encoding"
        lines.append(f"{name}: {value}".encode())
    if not has_encoding:
        lines.append(b"Accept-Encoding: " + ACCEPT_ENCODING)
    if body is not None or method not in ("GET", "HEAD"):
        lines.append(b"Content-Length: %d" % len(body or b""))
    return b"\r\n".join(lines) + b"\r\n\r\n" + (body or b"")


class Connection(asyncio.Protocol):
    """One kept-alive connection; one exchange at a time (``exchange``)."""

    def __init__(self, client: HttpClient, origin_key: tuple[str, str, int]) -> None:
        self.client, self.origin_key = client, origin_key
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[Answer] | None = None
        self._reset(0)

    def _reset(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._headers: dict[str, str] = {}
        self._chunks: list[bytes] = []
        self._size = 0
        self._inflater: zlib._Decompress | None = None
        self._headers_done = False
        self._answered = False  # a byte of this exchange's answer has arrived
        self.reusable = False

    # -- asyncio.Protocol ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.client._forget(self)
        if self._waiter is not None and not self._waiter.done():
            if self._headers_done and self._reads_to_close():
                self._finish()  # an answer without a length ends when the server closes
            elif not self._answered:
                self._fail(ClosedBeforeAnswer("the upstream closed the connection without answering"))
            else:
                self._fail(ConnectionResetError("the upstream closed the connection before its answer was complete"))

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():
            self.close()  # bytes nobody asked for: this connection cannot be trusted with the next exchange
            return
        self._answered = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:  # raised by a callback below: its own error
            cause = exc.__context__
            self._fail(cause if isinstance(cause, AnswerTooLarge | UpstreamProtocolError) else
                       UpstreamProtocolError(f"the upstream's answer could not be read ({type(cause).__name__})"))
        except httptools.HttpParserUpgrade:
            self._fail(UpstreamProtocolError("the upstream switched protocols"))
        except httptools.HttpParserError as exc:
            self._fail(UpstreamProtocolError(f"the upstream's answer is not HTTP/1.1 ({exc})"))

    def eof_received(self) -> bool:
        return False  # close the transport (connection_lost follows)

    # -- httptools callbacks ------------------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self._headers_done = True
        encoding = self._headers.get("content-encoding", "").strip().lower()
        if encoding in _INFLATE_WBITS:
            self._inflater = zlib.decompressobj(_INFLATE_WBITS[encoding])
        length = self._headers.get("content-length", "")
        if self._inflater is None and length.isdigit() and int(length) > self._max_bytes:
            raise AnswerTooLarge()

    def on_body(self, chunk: bytes) -> None:
        if self._inflater is None:
            self._keep(chunk)
            return
        try:
            while chunk:
                out = self._inflater.decompress(chunk, self._max_bytes - self._size + 1)
                self._keep(out)
                chunk = self._inflater.unconsumed_tail
        except zlib.error as exc:
            raise UpstreamProtocolError(f"the upstream's answer is not valid {self._headers['content-encoding']} "
                                        f"({exc})") from None

    def on_message_complete(self) -> None:
        if self._inflater is not None:
            try:
                self._keep(self._inflater.flush())
            except zlib.error as exc:
                raise UpstreamProtocolError(f"the upstream's answer ends mid-stream ({exc})") from None
        self.reusable = self._parser.should_keep_alive()
        self._finish()

    # -- the exchange -------------------------------------------------------------------------------

    def _keep(self, data: bytes) -> None:
        self._size += len(data)
        if self._size > self._max_bytes:
            raise AnswerTooLarge()
        if data:
            self._chunks.append(data)

    def _reads_to_close(self) -> bool:
        return "content-length" not in self._headers and "chunked" not in self._headers.get("transfer-encoding", "")

    def _finish(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            body = self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)
            self._waiter.set_result(Answer(self._parser.get_status_code(), self._headers, body))

    def _fail(self, exc: BaseException) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)
        self.close()

    async def exchange(self, payload: bytes, max_bytes: int) -> Answer:
        assert self.transport is not None
        self._reset(max_bytes)
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(payload)
        try:
            return await self._waiter
        finally:
            self._waiter = None

    def close(self) -> None:
        self.closed = True
        self.reusable = False
        if self.transport is not None:
            self.transport.close()


class HttpClient:
    """Pools of kept-alive connections, one per origin. See the module docstring."""

    def __init__(self, max_connections: int = 1000, keepalive_expiry: float = 30.0,
                 tls: ssl.SSLContext | None = None) -> None:
        self.max_connections, self.keepalive_expiry = max_connections, keepalive_expiry
        self._idle: dict[tuple[str, str, int], list[Connection]] = {}
        self._open: set[Connection] = set()
        self._slots: asyncio.Semaphore | None = None
        self._ssl = tls  # None: the system's CA store, made on the first https call

    async def request(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, *,
                      timeout_s: float, max_bytes: int) -> Answer:
        origin = split_url(url)
        payload = request_bytes(method, origin, headers, body)
        slots = self._slots or self._make_slots()
        async with asyncio.timeout(timeout_s), slots:
            conn = self._take_idle((origin.scheme, origin.host, origin.port)) or await self._connect(origin)
            try:
                answer = await conn.exchange(payload, max_bytes)
            except BaseException:
                conn.close()
                raise
            if conn.reusable and not conn.closed:
                conn.idle_since = time.monotonic()
                self._idle.setdefault(conn.origin_key, []).append(conn)
            else:
                conn.close()
            return answer

    def _make_slots(self) -> asyncio.Semaphore:
        self._slots = asyncio.Semaphore(self.max_connections)
        return self._slots

    def _take_idle(self, key: tuple[str, str, int]) -> Connection | None:
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if not conn.closed and now - conn.idle_since < self.keepalive_expiry:
                return conn
            conn.close()
        return None

    async def _connect(self, origin: Origin) -> Connection:
        key = (origin.scheme, origin.host, origin.port)
        tls = self._tls() if origin.scheme == "https" else None
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(lambda: Connection(self, key), origin.host, origin.port, ssl=tls,
                                               server_hostname=origin.host if tls else None)
        self._open.add(conn)
        return conn

    def _tls(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl

    def _forget(self, conn: Connection) -> None:
        self._open.discard(conn)
        idle = self._idle.get(conn.origin_key)
        if idle and conn in idle:
            idle.remove(conn)

    async def close(self) -> None:
        for conn in list(self._open):
            conn.close()
        self._idle.clear()
        await asyncio.sleep(0)  # the transports' connection_lost run
