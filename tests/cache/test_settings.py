"""The cache's settings in LiteLLM's names: what switches it on, where it lives, and a start that fails
naming the key for every unusable value."""

from __future__ import annotations

import pytest

from gateway.cache.settings import GroupCache, cache_settings_of, switch_of
from gateway.config.errors import ConfigError
from gateway.config.loader import build_config

ENTRY = {"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": "k"}}


def config(litellm: dict | None = None, general: dict | None = None, model_info: dict | None = None):
    entry = {**ENTRY, "model_info": model_info} if model_info else ENTRY
    return build_config({"model_list": [entry], "litellm_settings": litellm or {},
                         "general_settings": general or {}}, {}, source="<test>")


def test_off_by_default_in_memory_with_litellms_switch():
    settings = cache_settings_of(config())
    assert (settings.on, settings.backend, settings.redis_url) == (False, "local", None)
    settings = cache_settings_of(config({"cache": True, "cache_params": {"ttl": 60, "max_entries": 5,
                                                                         "max_bytes": 1000, "namespace": "ns"}}))
    assert (settings.on, settings.ttl_s, settings.max_entries, settings.max_bytes, settings.namespace) == (
        True, 60.0, 5, 1000, "ns:")


def test_redis_by_default_when_the_gateway_has_one_and_local_when_asked():
    general = {"redis_url": "redis://127.0.0.1:6379/3"}
    assert cache_settings_of(config({"cache": True}, general)).redis_url == "redis://127.0.0.1:6379/3"
    assert cache_settings_of(config({"cache": True, "cache_params": {"type": "local"}}, general)).backend == "local"
    own = cache_settings_of(config({"cache": True, "cache_params": {"type": "redis", "host": "cache.internal",
                                                                    "port": 6380, "password": "p@ss"}}))
    assert own.redis_url == "redis://:p%40ss@cache.internal:6380"
    assert cache_settings_of(config({"cache": True, "cache_params": {"default_in_redis_ttl": 30}},
                                    general)).ttl_s == 30.0


@pytest.mark.parametrize(("litellm", "model_info", "words"), [
    ({"cache": "yes"}, None, "litellm_settings.cache: must be true or false"),
    ({"cache": True, "cache_params": {"type": "s3"}}, None, "cache_params.type: must be local or redis"),
    ({"cache": True, "cache_params": {"type": "redis"}}, None, "cache_params.type: redis needs a Redis"),
    ({"cache": True, "cache_params": {"ttl": 0}}, None, "cache_params.ttl: must be a positive number"),
    ({"cache": True, "cache_params": {"max_entries": 2.5}}, None, "cache_params.max_entries: must be a whole"),
    ({"cache": True, "cache_params": {"tll": 5}}, None, "cache_params.tll: unknown key"),
    ({"cache": True, "cache_params": {"host": "h", "port": "x"}}, None, "cache_params.port: must be a port"),
    ({}, {"cache": "on"}, "model group 'jev': cache must be true or false"),
    ({}, {"cache_ttl": -1}, "model group 'jev': cache_ttl: must be a positive number"),
])
def test_an_unusable_value_fails_the_load_naming_it(litellm, model_info, words):
    with pytest.raises(ConfigError) as caught:
        config(litellm, model_info=model_info)
    assert words in str(caught.value)


def test_the_narrowest_switch_wins():
    settings = cache_settings_of(config({"cache": True}))
    assert settings.on_for(GroupCache(), None, None) is True
    assert settings.on_for(GroupCache(on=False), None, None) is False
    assert settings.on_for(GroupCache(on=False), None, {"cache": "on"}) is True
    assert settings.on_for(GroupCache(on=True), {"cache": "off"}, {"cache": "on"}) is False
    assert settings.on_for(GroupCache(on=True), {"cache": "sometimes"}, {}) is True  # not a switch: ignored
    assert settings.ttl_for(GroupCache(ttl_s=5.0)) == 5.0 and settings.ttl_for(GroupCache()) == settings.ttl_s
    assert [switch_of(v) for v in (True, "OFF", " on ", "disabled", 1, None)] == [True, False, True, False, None, None]


def test_a_reloaded_registry_gives_the_group_its_new_settings():
    from gateway.cache import AnswerCache
    from gateway.cache.store import AnswerStore
    from gateway.config.registry import ModelRegistry
    from gateway.shared_state import MemoryState

    cache = AnswerCache(cache_settings_of(config({"cache": True})), AnswerStore(MemoryState()))
    before = ModelRegistry.from_config(config({"cache": True}))
    after = ModelRegistry.from_config(config({"cache": True}, model_info={"cache": False, "cache_ttl": 9}))
    assert cache.group("jev", before).policy == GroupCache()
    assert cache.group("jev", before) is cache.group("jev", before)  # kept while the registry is the same
    assert cache.group("jev", after).policy == GroupCache(on=False, ttl_s=9.0)
    # model_info answers nothing: the same identity, so the entries stay valid across the reload
    assert [i for i, _ in cache.group("jev", before).identities] == [i for i, _ in cache.group("jev", after).identities]
