"""uvicorn's HTTP protocol with a deadline for the request line and headers (slowloris).

uvicorn times out idle kept-alive connections but has no deadline for a request's headers: a
client that opens a connection and sends its headers a byte at a time (or nothing at all) holds
the connection, and a slot of ``limit_concurrency``, for as long as it likes. 400 such
connections were all still open after 30 s. Here a timer starts when a connection opens and when
the first byte of each later request arrives; it stops when the request's headers are complete;
if it fires first, the connection is closed.

    uvicorn.Config(app, http=HeaderDeadlineProtocol, ...)   # the timeout: config.request_header_timeout_s
    uvicorn.run("...", http="gateway.edge.http_protocol:HeaderDeadlineProtocol", ...)
                                                    # the timeout: $DECISIONS_GATEWAY_HEADER_TIMEOUT_S

The body has its own deadline in the app (``gateway.decode.body.read_body_capped``).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from gateway.config.limits import DEFAULT_LIMITS_SETTINGS

HEADER_TIMEOUT_ENV = "DECISIONS_GATEWAY_HEADER_TIMEOUT_S"  # for worker processes (``--workers N``)


def header_timeout_s(config: Any) -> float:
    value = getattr(config, "request_header_timeout_s", None)
    if value is None:
        value = os.environ.get(HEADER_TIMEOUT_ENV) or DEFAULT_LIMITS_SETTINGS.request_header_timeout_s
    return float(value)


class HeaderDeadline:
    """Mixed into a uvicorn HTTP protocol class (before it in the bases)."""

    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._header_timeout_s = header_timeout_s(self.config)  # type: ignore[attr-defined]
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        before = self.cycle  # type: ignore[attr-defined]
        if self._header_timer is None and self._awaiting_headers():
            self._arm_header_timer()  # the first byte of another request on a kept-alive connection
        super().data_received(data)  # type: ignore[misc]
        if self.cycle is not before:  # type: ignore[attr-defined]
            self._stop_header_timer()  # a request's headers are complete: it is the app's now

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        super().connection_lost(exc)  # type: ignore[misc]

    def _awaiting_headers(self) -> bool:
        cycle = self.cycle  # type: ignore[attr-defined]
        return cycle is None or cycle.response_complete

    def _arm_header_timer(self) -> None:
        self._stop_header_timer()
        loop = asyncio.get_running_loop()
        self._header_timer = loop.call_later(self._header_timeout_s, self._header_deadline_passed)

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_deadline_passed(self) -> None:
        self._header_timer = None
        transport = self.transport  # type: ignore[attr-defined]
        if self._awaiting_headers() and transport is not None and not transport.is_closing():
            transport.close()


class HeaderDeadlineH11Protocol(HeaderDeadline, H11Protocol):  # type: ignore[misc]
    pass


HeaderDeadlineProtocol: type[asyncio.Protocol]
try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools is optional: uvicorn then speaks h11
    HeaderDeadlineProtocol = HeaderDeadlineH11Protocol
else:
    class HeaderDeadlineHttpToolsProtocol(HeaderDeadline, HttpToolsProtocol):  # type: ignore[misc]
        pass

    HeaderDeadlineProtocol = HeaderDeadlineHttpToolsProtocol
