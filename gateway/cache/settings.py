"""The answer cache's settings, in LiteLLM's names, read once at start.

    litellm_settings:
      cache: true                      # on for every model group (LiteLLM's switch; off by default)
      cache_params:
        type: local | redis            # default: redis when the gateway has a Redis URL, else local
        ttl: 86400                     # seconds an answer is kept (default one day)
        max_entries: 10000             # the in-memory cache's bounds (least recently used goes first)
        max_bytes: 67108864
        namespace: decisions-cache     # the key prefix in Redis
        scope: team | key | global     # who shares entries (default team: a key without a team, its own)
        host / port / password / url   # a Redis of the cache's own (else the gateway's redis_url)
    model_list[i].model_info:
      cache: true | false              # per model group: on or off whatever litellm_settings.cache says
      cache_ttl: 3600                  # per model group

and per key or team, ``metadata.cache``: ``true``/``"on"`` or ``false``/``"off"`` (the key's wins
over its team's, which wins over the group's, which wins over ``litellm_settings.cache``).

``scope`` keeps one tenant's answers from another: by default an entry is seen only by the team
whose request paid for it (by the key alone when it has no team); ``key`` narrows that to the key;
``global`` shares every entry with every caller, which makes ``x-decisions-cache: only-if-cached`` an
oracle: a caller learns, at no cost, whether anyone asked about an input, and reads the answer
another tenant paid for. The master key has a scope of its own (its key); an open gateway (no
master key) has one caller.

Every unusable value fails the start with a ``ConfigError`` naming the key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gateway.config.errors import ConfigError
from gateway.shared_state.factory import redis_url_from_config
from gateway.shared_state.memory import CACHE_MAX_BYTES, CACHE_MAX_ENTRIES
from providers.base import Deployment

Backend = Literal["local", "redis"]
Scope = Literal["team", "key", "global"]
SCOPES: tuple[Scope, ...] = ("team", "key", "global")
DEFAULT_TTL_S = 86_400.0
DEFAULT_NAMESPACE = "decisions-cache"
# cache_params keys: ours, and LiteLLM's (those it reads for a local or Redis cache; the others
# name cache types the gateway does not offer, which ``type`` refuses).
CACHE_PARAMS = frozenset({
    "type", "ttl", "max_entries", "max_bytes", "namespace", "host", "port", "password", "url", "redis_url",
    "default_in_memory_ttl", "default_in_redis_ttl", "supported_call_types", "mode", "scope",
})
ON_WORDS = {"on": True, "true": True, "enabled": True, "off": False, "false": False, "disabled": False}


@dataclass(frozen=True)
class GroupCache:
    """A model group's own settings, from its deployments' ``model_info`` (the first that sets each)."""

    on: bool | None = None  # model_info.cache
    ttl_s: float | None = None  # model_info.cache_ttl


@dataclass(frozen=True)
class CacheSettings:
    on: bool = False  # litellm_settings.cache
    backend: Backend = "local"
    redis_url: str | None = None  # the Redis the entries live in (backend "redis")
    ttl_s: float = DEFAULT_TTL_S
    max_entries: int = CACHE_MAX_ENTRIES
    max_bytes: int = CACHE_MAX_BYTES
    namespace: str = DEFAULT_NAMESPACE
    scope: Scope = "team"  # who shares an entry (see the module docstring)

    def on_for(self, group: GroupCache, key_meta: Mapping[str, Any] | None,
               team_meta: Mapping[str, Any] | None) -> bool:
        """Whether a request of this key (and team) to a group uses the cache: the narrowest setting wins."""
        for meta in (key_meta, team_meta):
            if meta:
                switch = switch_of(meta.get("cache"))
                if switch is not None:
                    return switch
        return self.on if group.on is None else group.on

    def ttl_for(self, group: GroupCache) -> float:
        return self.ttl_s if group.ttl_s is None else group.ttl_s


def group_cache(deps: Sequence[Deployment]) -> GroupCache:
    """``model_info.cache`` and ``cache_ttl`` of a group (``ConfigError`` naming the group for a bad value)."""
    on: bool | None = None
    ttl: float | None = None
    for dep in deps:
        where = f"model_info of model group {dep.model_name!r}"
        switch = dep.model_info.get("cache")
        if switch is not None and on is None:
            if not isinstance(switch, bool):
                raise ConfigError(f"{where}: cache must be true or false, got {switch!r}")
            on = switch
        value = dep.model_info.get("cache_ttl")
        if value is not None and ttl is None:
            ttl = _positive(value, f"{where}: cache_ttl")
    return GroupCache(on, ttl)


def switch_of(value: Any) -> bool | None:
    """``metadata.cache`` -> on (True), off (False), or not set (None): a bool or on/off, true/false."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return ON_WORDS.get(value.strip().lower())
    return None


def cache_settings(litellm_settings: Mapping[str, Any], general_settings: Mapping[str, Any],
                   router_settings: Mapping[str, Any], deployments: Sequence[Deployment]) -> CacheSettings:
    """The settings from the config's sections (``ConfigError`` naming the key for a bad value)."""
    on = litellm_settings.get("cache", False)
    if not isinstance(on, bool):
        raise ConfigError(f"litellm_settings.cache: must be true or false, got {on!r}")
    params = litellm_settings.get("cache_params") or {}
    if not isinstance(params, Mapping):
        raise ConfigError("litellm_settings.cache_params: must be a mapping")
    unknown = sorted(set(map(str, params)) - CACHE_PARAMS)
    if unknown:
        raise ConfigError(f"litellm_settings.cache_params.{unknown[0]}: unknown key; the cache takes "
                          f"{', '.join(sorted(CACHE_PARAMS))}")
    gateway_redis = _gateway_redis(general_settings, router_settings)
    own_redis = _own_redis(params)
    backend: Backend = params.get("type") or ("redis" if own_redis or gateway_redis else "local")
    if backend not in ("local", "redis"):
        raise ConfigError(f"litellm_settings.cache_params.type: must be local or redis, got {backend!r} (the "
                          "gateway's answer cache lives in memory or in Redis)")
    redis_url = (own_redis or gateway_redis) if backend == "redis" else None
    if backend == "redis" and not redis_url:
        raise ConfigError("litellm_settings.cache_params.type: redis needs a Redis: cache_params.url (or host, "
                          "port, password) or general_settings.redis_url")
    ttl_key = "default_in_redis_ttl" if backend == "redis" else "default_in_memory_ttl"
    ttl_name = "ttl" if params.get("ttl") is not None else ttl_key
    ttl = _positive(params.get(ttl_name, DEFAULT_TTL_S), f"litellm_settings.cache_params.{ttl_name}")
    namespace = params.get("namespace") or DEFAULT_NAMESPACE
    if not isinstance(namespace, str):
        raise ConfigError(f"litellm_settings.cache_params.namespace: must be a string, got {namespace!r}")
    scope = params.get("scope", "team")
    if scope not in SCOPES:
        raise ConfigError(f"litellm_settings.cache_params.scope: must be team, key or global, got {scope!r}")
    groups: dict[str, list[Deployment]] = {}
    for dep in deployments:
        groups.setdefault(dep.model_name, []).append(dep)
    for deps in groups.values():
        group_cache(deps)  # checked at load; read per request (a reload may change it)
    return CacheSettings(
        on=on, backend=backend, redis_url=redis_url, ttl_s=ttl,
        max_entries=_count(params.get("max_entries", CACHE_MAX_ENTRIES), "litellm_settings.cache_params.max_entries"),
        max_bytes=_count(params.get("max_bytes", CACHE_MAX_BYTES), "litellm_settings.cache_params.max_bytes"),
        namespace=namespace.rstrip(":") + ":", scope=scope)


def cache_settings_of(config) -> CacheSettings:
    """``cache_settings`` of a ``GatewayConfig``."""
    return cache_settings(config.litellm_settings, config.general_settings, config.router_settings,
                          config.deployments)


def _gateway_redis(general: Mapping[str, Any], router: Mapping[str, Any]) -> str | None:
    try:
        return redis_url_from_config(general, router)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _own_redis(params: Mapping[str, Any]) -> str | None:
    """A Redis named in cache_params itself (``url``/``redis_url``, else ``host``, ``port``, ``password``)."""
    url = params.get("url") or params.get("redis_url")
    if url:
        return str(url)
    if not params.get("host"):
        return None
    section = {"redis_host": params["host"], "redis_port": params.get("port"), "redis_password": params.get("password")}
    try:
        return redis_url_from_config(None, section)
    except ValueError:
        raise ConfigError(f"litellm_settings.cache_params.port: must be a port number, got "
                          f"{params.get('port')!r}") from None


def _positive(value: Any, where: str) -> float:
    number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    if not (math.isfinite(number) and number > 0):
        raise ConfigError(f"{where}: must be a positive number of seconds, got {value!r}")
    return number


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: must be a whole number of at least 1, got {value!r}")
    return value
