"""One httpx client for a test process's polls (readiness, liveliness, a port coming up).

``httpx.get()`` builds a client for every call, and with it a TLS context (certifi's bundle parsed):
~55 ms of CPU each, on the cores the process being waited for is starting on, dozens of times per
start. This client is built once per test process; it keeps no connection alive, so each poll is a
fresh connection, as with ``httpx.get()``.
"""

from __future__ import annotations

import functools

import httpx


@functools.cache
def _client() -> httpx.Client:
    return httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))


def get(url: str, **kwargs) -> httpx.Response:
    return _client().get(url, **kwargs)
