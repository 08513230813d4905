"""Which shared state the gateway gets: memory, or Redis with memory behind it.

``redis_url_from_config`` reads LiteLLM's keys; ``state_from_settings`` builds the state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from gateway.shared_state.base import LATENCY_SAMPLES, SharedState
from gateway.shared_state.failover import RETRY_AFTER_S, FailoverState
from gateway.shared_state.memory import CACHE_MAX_BYTES, CACHE_MAX_ENTRIES, MemoryState
from gateway.shared_state.redis_state import (
    CONNECT_TIMEOUT_S,
    MAX_CONNECTIONS,
    POOL_TIMEOUT_S,
    SOCKET_TIMEOUT_S,
    RedisState,
)

DEFAULT_REDIS_PORT = 6379


def redis_url_from_config(general_settings: Mapping[str, Any] | None,
                          router_settings: Mapping[str, Any] | None) -> str | None:
    """The Redis URL from LiteLLM's config keys, or None when Redis is not configured.

    In order: ``general_settings.redis_url``, ``router_settings.redis_url``, then ``redis_host``
    (with ``redis_port``, default 6379, and ``redis_password``) from ``router_settings``, else from
    ``general_settings``; host, port and password are read from the same section. An unusable
    ``redis_port`` raises ``ValueError`` naming the key.
    """
    sections = [("router_settings", router_settings or {}), ("general_settings", general_settings or {})]
    for _, section in reversed(sections):
        if section.get("redis_url"):
            return str(section["redis_url"])
    for name, section in sections:
        host = section.get("redis_host")
        if not host:
            continue
        port = section.get("redis_port") or DEFAULT_REDIS_PORT
        try:
            port = int(port)
        except (TypeError, ValueError):
            raise ValueError(f"{name}.redis_port must be a port number, got {port!r}") from None
        host = str(host)
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"  # an IPv6 address
        password = section.get("redis_password")
        auth = f":{quote(str(password), safe='')}@" if password else ""
        return f"redis://{auth}{host}:{port}"
    return None


def state_from_settings(redis_url: str | None, *, connect_timeout_s: float = CONNECT_TIMEOUT_S,
                        socket_timeout_s: float = SOCKET_TIMEOUT_S,
                        max_connections: int = MAX_CONNECTIONS, pool_timeout_s: float = POOL_TIMEOUT_S,
                        retry_after_s: float = RETRY_AFTER_S, latency_samples: int = LATENCY_SAMPLES,
                        cache_max_entries: int = CACHE_MAX_ENTRIES,
                        cache_max_bytes: int = CACHE_MAX_BYTES) -> SharedState:
    """``MemoryState`` without a Redis URL, else ``FailoverState(RedisState, MemoryState)``.

    Connects to nothing yet (the pool connects on first use); ``await state.check()`` on a
    ``FailoverState`` pings Redis once, for a start-up line or readiness.
    """
    memory = MemoryState(latency_samples=latency_samples, cache_max_entries=cache_max_entries,
                         cache_max_bytes=cache_max_bytes)
    if not redis_url:
        return memory
    redis_state = RedisState(redis_url, connect_timeout_s=connect_timeout_s,
                             socket_timeout_s=socket_timeout_s, max_connections=max_connections,
                             pool_timeout_s=pool_timeout_s, latency_samples=latency_samples)
    return FailoverState(redis_state, memory, retry_after_s=retry_after_s)
