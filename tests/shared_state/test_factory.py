"""Which state the gateway gets, and the Redis URL read from LiteLLM's config keys."""

from __future__ import annotations

import pytest

from gateway.shared_state import FailoverState, MemoryState, redis_url_from_config, state_from_settings


async def test_no_redis_url_is_memory_and_a_url_is_redis_with_memory_behind_it():
    memory = state_from_settings(None)
    assert isinstance(memory, MemoryState) and memory.backend == "memory"
    state = state_from_settings("redis://:pw@127.0.0.1:6379/0", socket_timeout_s=0.1, retry_after_s=2)
    try:
        assert isinstance(state, FailoverState)
        assert state.status() == {"backend": "redis", "degraded": False, "serving": "redis",
                                  "url": "redis://:***@127.0.0.1:6379/0"}
    finally:
        await state.close()


def test_redis_url_from_litellm_keys():
    assert redis_url_from_config({}, {}) is None
    assert redis_url_from_config(None, None) is None
    assert redis_url_from_config({"redis_url": "redis://a:1/0"}, {"redis_url": "redis://b:2/0"}) == "redis://a:1/0"
    assert redis_url_from_config({}, {"redis_url": "rediss://b:2/0"}) == "rediss://b:2/0"
    assert redis_url_from_config({}, {"redis_host": "cache"}) == "redis://cache:6379"
    assert redis_url_from_config({}, {"redis_host": "cache", "redis_port": "6380",
                                      "redis_password": "p@ss/word"}) == "redis://:p%40ss%2Fword@cache:6380"
    assert redis_url_from_config({"redis_host": "g"}, {"redis_host": "r", "redis_port": 1}) == "redis://r:1"
    assert redis_url_from_config({"redis_host": "g", "redis_port": 2}, {}) == "redis://g:2"
    assert redis_url_from_config({}, {"redis_host": "::1"}) == "redis://[::1]:6379"
    with pytest.raises(ValueError, match="router_settings.redis_port"):
        redis_url_from_config({}, {"redis_host": "cache", "redis_port": "sixty"})
