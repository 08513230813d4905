"""The router's settings, in LiteLLM's names, resolved once at start per model group.

Read from ``router_settings`` (and the ``litellm_settings`` keys LiteLLM also reads there:
``num_retries``, ``fallbacks``, ``default_fallbacks``, ``context_window_fallbacks``,
``allowed_fails``, ``cooldown_time``, ``retry_policy``), then per group from
``router_settings.model_group_settings.<group>`` and the group's ``model_info`` (later wins), then
per deployment from ``litellm_params`` (``num_retries``, ``hedge_after_ms``, ``weight``, ``rpm``,
``tpm``). Every problem fails the start with a ``ValueError`` naming the key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.config.errors import ConfigError, closest
from gateway.config.registry import model_group_aliases

STRATEGIES = ("simple-shuffle", "least-busy", "latency-based-routing", "usage-based-routing",
              "usage-based-routing-v2", "cost-based-routing")
# LiteLLM's retry_policy / allowed_fails_policy keys -> the error classes of gateway/router/policy.py.
POLICY_KEYS = {
    "BadRequestErrorRetries": "bad_request", "AuthenticationErrorRetries": "authentication",
    "TimeoutErrorRetries": "timeout", "RateLimitErrorRetries": "rate_limit",
    "ContentPolicyViolationErrorRetries": "content_policy", "InternalServerErrorRetries": "internal",
    "BadRequestErrorAllowedFails": "bad_request", "AuthenticationErrorAllowedFails": "authentication",
    "TimeoutErrorAllowedFails": "timeout", "RateLimitErrorAllowedFails": "rate_limit",
    "ContentPolicyViolationErrorAllowedFails": "content_policy", "InternalServerErrorAllowedFails": "internal",
}
DEFAULT_NUM_RETRIES = 2
DEFAULT_ALLOWED_FAILS = 3
DEFAULT_COOLDOWN_S = 5.0
DEFAULT_MAX_FALLBACKS = 5
DEFAULT_LATENCY_TTL_S = 3600.0
MAX_RETRIES = 20  # num_retries and retry_policy: each retry is one more upstream call
MAX_COUNT = 10**6  # allowed_fails, max_fallbacks
MAX_NUMBER = 1e9  # seconds, milliseconds, prices: finite, and far below where arithmetic on them overflows
GROUP_KEYS = frozenset({"routing_strategy", "routing_strategy_args", "num_retries", "retry_policy", "allowed_fails",
                        "allowed_fails_policy", "cooldown_time", "hedge_after_ms", "deadline_ms", "timeout"})


@dataclass(frozen=True)
class GroupPolicy:
    """How the router treats one model group."""

    strategy: str = "simple-shuffle"
    latency_ttl_s: float = DEFAULT_LATENCY_TTL_S
    lowest_latency_buffer: float = 0.0
    num_retries: int = DEFAULT_NUM_RETRIES
    retry_policy: Mapping[str, int] = field(default_factory=dict)  # error class -> retries
    allowed_fails: int = DEFAULT_ALLOWED_FAILS
    allowed_fails_policy: Mapping[str, int] = field(default_factory=dict)  # error class -> allowed fails
    cooldown_time_s: float = DEFAULT_COOLDOWN_S
    hedge_after_ms: float | None = None
    deadline_ms: float | None = None
    fallbacks: tuple[str, ...] = ()  # groups tried in order when this one fails
    capacity_fallbacks: tuple[str, ...] = ()  # groups tried when no deployment here can take the request


@dataclass(frozen=True)
class RouterSettings:
    groups: Mapping[str, GroupPolicy]
    max_fallbacks: int = DEFAULT_MAX_FALLBACKS
    disable_cooldowns: bool = False

    def policy(self, group: str) -> GroupPolicy:
        return self.groups.get(group) or DEFAULT_POLICY


DEFAULT_POLICY = GroupPolicy()


def router_settings(router: Mapping[str, Any], litellm: Mapping[str, Any],
                    groups: Mapping[str, Sequence[Any]]) -> RouterSettings:
    """``groups``: model group name -> its deployments (``Deployment``, for their ``model_info``)."""
    inherited = {k: v for k, v in litellm.items() if k in _LITELLM_ROUTER_KEYS and k not in router}
    _group_values(inherited, "litellm_settings")  # a bad one is named where it is written
    merged = {**inherited, **router}
    base = _group_values(merged, "router_settings")
    per_group = _mapping(merged.get("model_group_settings"), "router_settings.model_group_settings")
    fallbacks = _fallback_map(merged.get("fallbacks"), "fallbacks")
    capacity = {**_fallback_map(merged.get("context_window_fallbacks"), "context_window_fallbacks"),
                **_fallback_map(merged.get("content_policy_fallbacks"), "content_policy_fallbacks"),
                **_fallback_map(merged.get("capacity_fallbacks"), "capacity_fallbacks")}
    defaults = tuple(_names(merged.get("default_fallbacks"), "default_fallbacks"))
    aliases = model_group_aliases(router.get("model_group_alias"), groups)  # the registry resolves them too
    fallbacks, capacity, defaults = _named_groups(fallbacks, capacity, defaults, groups, aliases)
    policies = {}
    for name, deps in groups.items():
        values = dict(base)
        info = {k: v for dep in deps for k, v in (getattr(dep, "model_info", None) or {}).items() if k in GROUP_KEYS}
        values.update(_group_values(info, f"model_info of {name}"))
        values.update(_group_values(_mapping(per_group.get(name), f"model_group_settings.{name}"),
                                    f"router_settings.model_group_settings.{name}"))
        own = fallbacks.get(name)
        values["fallbacks"] = tuple(own) if own is not None else tuple(g for g in defaults if g != name)
        values["capacity_fallbacks"] = tuple(capacity.get(name, ()))
        policies[name] = GroupPolicy(**values)
    max_fallbacks = _int(merged.get("max_fallbacks", DEFAULT_MAX_FALLBACKS), "router_settings.max_fallbacks", 0)
    return RouterSettings(groups=policies, max_fallbacks=max_fallbacks,
                          disable_cooldowns=bool(merged.get("disable_cooldowns", False)))


def _named_groups(fallbacks: dict[str, list[str]], capacity: dict[str, list[str]], defaults: tuple[str, ...],
                  groups: Mapping[str, Sequence[Any]], aliases: Mapping[str, Any],
                  ) -> tuple[dict[str, list[str]], dict[str, list[str]], tuple[str, ...]]:
    """The fallback settings with each ``model_group_alias`` written as its group; every name that is
    neither a group nor an alias is reported, all of them at once (a ``ConfigError``), with the closest
    configured names."""
    known = sorted({*groups, *aliases})
    problems: list[str] = []

    def group_of(name: str, where: str) -> str:
        if name in groups:
            return name
        if name in aliases:
            return str(aliases[name].target)
        close = closest(name, known)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        problem = f"router_settings.{where}: '{name}' is not a model_name in model_list{hint}"
        if problem not in problems:
            problems.append(problem)
        return name

    def resolved(mapping: dict[str, list[str]], where: str) -> dict[str, list[str]]:
        return {group_of(source, where): [group_of(n, where) for n in names] for source, names in mapping.items()}

    out = resolved(fallbacks, "fallbacks"), resolved(capacity, "capacity fallbacks")
    named_defaults = tuple(group_of(name, "default_fallbacks") for name in defaults)
    if problems:
        raise ConfigError(problems)
    return out[0], out[1], named_defaults


def router_settings_of(config) -> RouterSettings:
    """The settings of a ``GatewayConfig``; ``ValueError`` naming the key for an unusable one."""
    groups: dict[str, list[Any]] = {}
    for dep in config.deployments:
        groups.setdefault(dep.model_name, []).append(dep)
    return router_settings(config.router_settings, config.litellm_settings, groups)


_LITELLM_ROUTER_KEYS = frozenset({"num_retries", "fallbacks", "default_fallbacks", "context_window_fallbacks",
                                  "content_policy_fallbacks", "allowed_fails", "cooldown_time", "retry_policy"})


def _group_values(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "routing_strategy" in raw:
        strategy = raw["routing_strategy"]
        if strategy not in STRATEGIES:
            raise ValueError(f"{where}.routing_strategy: '{strategy}' is not one of {', '.join(STRATEGIES)}")
        out["strategy"] = strategy
    args = _mapping(raw.get("routing_strategy_args"), f"{where}.routing_strategy_args")
    if "ttl" in args:
        out["latency_ttl_s"] = _number(args["ttl"], f"{where}.routing_strategy_args.ttl", positive=True)
    if "lowest_latency_buffer" in args:
        out["lowest_latency_buffer"] = _number(args["lowest_latency_buffer"],
                                               f"{where}.routing_strategy_args.lowest_latency_buffer")
    if "num_retries" in raw:
        out["num_retries"] = _int(raw["num_retries"], f"{where}.num_retries", 0, MAX_RETRIES)
    if "allowed_fails" in raw:
        out["allowed_fails"] = _int(raw["allowed_fails"], f"{where}.allowed_fails", 0)
    if "cooldown_time" in raw:
        out["cooldown_time_s"] = _number(raw["cooldown_time"], f"{where}.cooldown_time")
    for key, target in (("retry_policy", "retry_policy"), ("allowed_fails_policy", "allowed_fails_policy")):
        if key in raw:
            out[target] = _policy(raw[key], f"{where}.{key}")
    for key in ("hedge_after_ms", "deadline_ms"):
        if raw.get(key) is not None:
            out[key] = _number(raw[key], f"{where}.{key}", positive=True)
    return out


def _policy(raw: Any, where: str) -> dict[str, int]:
    out = {}
    for key, value in _mapping(raw, where).items():
        if key not in POLICY_KEYS:
            raise ValueError(f"{where}: unknown key '{key}'; known keys: {', '.join(sorted(POLICY_KEYS))}")
        out[POLICY_KEYS[key]] = _int(value, f"{where}.{key}", 0)
    return out


def _fallback_map(raw: Any, where: str) -> dict[str, list[str]]:
    """LiteLLM's shape: ``[{jev: [luna, pplx]}, {luna: [jev]}]`` (a plain mapping is accepted too)."""
    if raw is None:
        return {}
    items = [raw] if isinstance(raw, Mapping) else raw
    if not isinstance(items, list):
        raise ValueError(f"router_settings.{where}: must be a list like [{{jev: [luna]}}]")
    out: dict[str, list[str]] = {}
    for item in items:
        if not isinstance(item, Mapping):
            raise ValueError(f"router_settings.{where}: each entry must map a model group to its fallbacks")
        for source, targets in item.items():
            out[str(source)] = _names(targets, f"{where}.{source}")
    return out


def _names(raw: Any, where: str) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        return [raw]
    if not isinstance(raw, list) or not all(isinstance(n, str) and n for n in raw):
        raise ValueError(f"router_settings.{where}: must be a list of model group names")
    return list(raw)


def _mapping(raw: Any, where: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: must be a mapping")
    return raw


def _number(raw: Any, where: str, positive: bool = False) -> float:
    if (isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw) or raw < 0
            or (positive and raw <= 0) or raw > MAX_NUMBER):
        raise ValueError(f"{where}: must be a {'positive' if positive else 'non-negative'} number (finite, at most "
                         f"{MAX_NUMBER:g}), got {raw!r}")
    return float(raw)


def _int(raw: Any, where: str, minimum: int, maximum: int = MAX_COUNT) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not minimum <= raw <= maximum:
        raise ValueError(f"{where}: must be an integer of at least {minimum} and at most {maximum}, got {raw!r}")
    return raw
