"""Shared state for the router, the limits and the cache: one interface, memory or Redis behind it.

- ``base.py``: the interface, ``SharedState``.
- ``budget.py``: budget reservations (spent, held, the turn) and the rule that admits against them.
- ``memory.py``: ``MemoryState`` (one process).
- ``redis_state.py``: ``RedisState`` (one Redis shared by processes and machines; Lua scripts).
- ``failover.py``: ``FailoverState`` (Redis, and memory while Redis is unreachable).
- ``factory.py``: ``state_from_settings(redis_url)``, ``redis_url_from_config(general, router)``.
"""

from gateway.shared_state.base import LATENCY_SAMPLES, Backend, SharedState
from gateway.shared_state.factory import redis_url_from_config, state_from_settings
from gateway.shared_state.failover import FailoverState
from gateway.shared_state.memory import MemoryState
from gateway.shared_state.redis_state import REDIS_ERRORS, RedisState

__all__ = ["LATENCY_SAMPLES", "REDIS_ERRORS", "Backend", "FailoverState", "MemoryState", "RedisState",
           "SharedState", "redis_url_from_config", "state_from_settings"]
