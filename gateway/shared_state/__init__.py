"""Shared state for the router, the limits and the cache: one interface, memory or Redis behind it.

See ``gateway/shared_state/base.py`` for the interface (``SharedState``).
"""

from gateway.shared_state.base import LATENCY_SAMPLES, Backend, SharedState
from gateway.shared_state.memory import MemoryState

__all__ = ["LATENCY_SAMPLES", "Backend", "MemoryState", "SharedState"]
