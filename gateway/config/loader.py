"""Configuration: a LiteLLM-shaped YAML file -> ``GatewayConfig`` with ``Deployment`` objects.

An existing LiteLLM config works as is: ``model_list`` (``model_name``, ``litellm_params``,
``model_info``), ``general_settings``, ``router_settings``, ``litellm_settings``; a value
``os.environ/NAME`` anywhere is read from the environment. Every problem fails the start with a
``ConfigError`` naming the entry (``model_list[1].litellm_params.api_key``) and the rule; a file that
is not UTF-8, too large, or whose aliases expand too far (``config/yaml_bounds.py``) names the file.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gateway.config import keys as config_keys
from gateway.config.errors import ConfigError
from gateway.config.params import param_problem
from gateway.config.yaml_bounds import MAX_CONFIG_BYTES, load_yaml
from providers.base import Deployment
from translators.errors import DecisionError

ENV_PREFIX = "os.environ/"
SECRET_KEYS = frozenset({"api_key", "master_key", "salt_key"})

# The embedded default: the bundled backend with the small model, no key needed.
DEFAULT_CONFIG: dict = {"model_list": [{"model_name": "smollm2", "litellm_params": {"model": "local/smollm2"}}]}


@dataclass
class GatewayConfig:
    deployments: list[Deployment]
    general_settings: dict = field(default_factory=dict)
    router_settings: dict = field(default_factory=dict)
    litellm_settings: dict = field(default_factory=dict)
    environment_variables: dict = field(default_factory=dict)
    extra_sections: dict = field(default_factory=dict)  # credential_list, guardrails, ...: kept, unused
    request_limits: Any = None  # translators.limits.RequestLimits
    limits: Any = None  # gateway.config.limits.LimitsSettings: body, JSON, multipart, upstream and time caps
    source: str = "<built-in default>"
    digest: str = ""  # sha256 of the file's bytes ("" when not read from a file): which file a worker runs

    @property
    def master_key(self) -> str | None:
        return self.general_settings.get("master_key")

    @property
    def database_url(self) -> str | None:
        return self.general_settings.get("database_url")


def load_config(path: str | Path | None, environ: Mapping[str, str] | None = None) -> GatewayConfig:
    """Read and validate a config file; ``None`` gives the embedded default."""
    environ = os.environ if environ is None else environ
    if path is None:
        return build_config(DEFAULT_CONFIG, environ, source="<built-in default>")
    path = Path(path)
    try:
        with path.open("rb") as file:
            data = file.read(MAX_CONFIG_BYTES + 1)  # past the bound load_yaml refuses it, without reading on
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        raw = load_yaml(data)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text: byte {exc.start} is 0x{data[exc.start]:02x} ({exc.reason}); "
                          "save the file as UTF-8") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    config = build_config(raw if raw is not None else {}, environ, source=str(path))
    config.digest = hashlib.sha256(data).hexdigest()
    return config


def build_config(raw: Any, environ: Mapping[str, str], source: str = "<config>") -> GatewayConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be a mapping with model_list, general_settings, ...")
    _reject_unknown(raw, config_keys.TOP_LEVEL, "top level")
    env_section = _mapping(raw.get("environment_variables"), "environment_variables")
    environ = {**{k: str(v) for k, v in env_section.items()}, **environ}
    resolved = resolve_env(raw, environ)
    general = _mapping(resolved.get("general_settings"), "general_settings")
    router = _mapping(resolved.get("router_settings"), "router_settings")
    settings = _mapping(resolved.get("litellm_settings"), "litellm_settings")
    _reject_unknown(general, config_keys.GENERAL_SETTINGS, "general_settings")
    _reject_unknown(router, config_keys.ROUTER_SETTINGS, "router_settings")
    _reject_unknown(settings, config_keys.LITELLM_SETTINGS, "litellm_settings")
    model_list = resolved.get("model_list") or []
    if not isinstance(model_list, list):
        raise ConfigError("model_list: must be a list of entries with model_name and litellm_params")
    deployments = [_deployment(entry, raw["model_list"][i], i, environ, router) for i, entry in enumerate(model_list)]
    if not deployments:
        raise ConfigError("model_list: no models configured; add at least one entry with model_name and "
                          "litellm_params.model")
    extra = {k: v for k, v in resolved.items() if k not in
             {"model_list", "general_settings", "router_settings", "litellm_settings", "environment_variables"}}
    config = GatewayConfig(
        deployments=deployments, general_settings=general, router_settings=router, litellm_settings=settings,
        environment_variables=env_section, extra_sections=extra,
        request_limits=build_request_limits(general.get("decision_limits")), source=source,
        limits=build_limits_settings(general),
    )
    _check_router(config)
    return config


def _check_router(config: GatewayConfig) -> None:
    """The router's and the shared state's settings, checked at load (the gateway builds them at start)."""
    from gateway.router.settings import router_settings_of
    from gateway.shared_state.factory import redis_url_from_config

    try:
        router_settings_of(config)
        redis_url_from_config(config.general_settings, config.router_settings)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    from gateway.cache.settings import cache_settings_of

    cache_settings_of(config)  # the answer cache's keys (a ConfigError names the bad one)
    failure = config.general_settings.get("limits_on_redis_failure")
    if failure is not None and failure not in ("fail_open", "fail_closed"):
        raise ConfigError("general_settings.limits_on_redis_failure: must be fail_open or fail_closed, "
                          f"got {failure!r}")
    store = config.general_settings.get("store_content")
    if store is not None and store not in ("none", "digest", "full"):
        raise ConfigError(f"general_settings.store_content: must be none, digest or full, got {store!r}")
    for key in ("ready_while_db_down", "ready_while_redis_down"):
        value = config.general_settings.get(key)
        if value is not None and not isinstance(value, bool):
            raise ConfigError(f"general_settings.{key}: must be true or false, got {value!r}")


def resolve_env(value: Any, environ: Mapping[str, str], where: str = "") -> Any:
    """Replace every ``os.environ/NAME`` string (at any depth) by the variable's value."""
    if isinstance(value, str) and value.startswith(ENV_PREFIX):
        name = value[len(ENV_PREFIX):].strip()
        if not name:
            raise ConfigError(f"{where or 'config'}: 'os.environ/' needs a variable name")
        if name not in environ:
            raise ConfigError(f"{where or 'config'}: environment variable {name} is not set")
        return environ[name]
    if isinstance(value, dict):
        return {k: resolve_env(v, environ, _join(where, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_env(v, environ, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def build_request_limits(raw: Any):
    """``general_settings.decision_limits`` -> ``translators.limits.RequestLimits``."""
    from translators.limits import RequestLimits

    if raw is not None and not isinstance(raw, dict):
        raise ConfigError("general_settings.decision_limits: must be a mapping such as {max_questions: 400}")
    try:
        return RequestLimits.from_dict(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"general_settings.decision_limits: {exc}") from None


def build_limits_settings(general: dict):
    """The limits and hardening keys of ``general_settings`` -> ``gateway.config.limits.LimitsSettings``."""
    from gateway.config.limits import limits_from_settings

    try:
        return limits_from_settings(general)
    except ValueError as exc:
        raise ConfigError(f"general_settings.{exc}") from None


def check_api_base(api_base: str | None, where: str) -> None:
    """An ``api_base`` (``where`` names it) must be an http(s) or local:// URL without ``user:password@``.

    A base with credentials made every request to it fail; the message never echoes them.
    """
    if api_base is None:
        return
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(api_base.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise ConfigError(f"{where}: not a valid URL") from None
    if parts.scheme.lower() == "local":
        return
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{where}: must be an http:// or https:// URL with a host")
    if "@" in parts.netloc:
        raise ConfigError(f"{where}: must not carry a user name or password (user:password@host); "
                          "put the credential in api_key instead")


def _deployment(entry: Any, raw_entry: Any, index: int, environ: Mapping[str, str], router: dict) -> Deployment:
    where = f"model_list[{index}]"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: must be a mapping with model_name and litellm_params")
    _reject_unknown(entry, config_keys.MODEL_ENTRY, where)
    model_name = entry.get("model_name")
    if not isinstance(model_name, str) or not model_name.strip():
        raise ConfigError(f"{where}.model_name: missing; every entry needs the name callers use")
    where = f"model_list[{index}] ({model_name})"
    params = entry.get("litellm_params")
    if not isinstance(params, dict):
        raise ConfigError(f"{where}.litellm_params: missing; it needs at least model: provider/name")
    model = params.get("model")
    if not isinstance(model, str) or not model.strip():
        raise ConfigError(f"{where}.litellm_params.model: missing; write it as provider/name, e.g. typesafe/jev-latest")
    provider, upstream_model = _split_model(model, f"{where}.litellm_params.model")
    known_params = config_keys.LITELLM_PARAMS | config_keys.PROVIDER_PARAMS | _provider_params(provider)
    _reject_unknown(params, known_params, f"{where}.litellm_params")
    model_info = entry.get("model_info") or {}
    if not isinstance(model_info, dict):
        raise ConfigError(f"{where}.model_info: must be a mapping")
    typed = {
        "api_key": _optional(params, "api_key", str, where),
        "api_base": _optional(params, "api_base", str, where),
        "timeout": _optional(params, "timeout", float, where),
        "input_cost_per_token": _optional(params, "input_cost_per_token", float, where),
        "output_cost_per_token": _optional(params, "output_cost_per_token", float, where),
        "rpm": _optional(params, "rpm", int, where),
        "tpm": _optional(params, "tpm", int, where),
    }
    if typed["timeout"] is None:
        typed["timeout"] = _optional(router, "timeout", float, "router_settings") or 60.0
    _check_ranges(typed, where)
    _check_per_request_price(params, where)
    problem = param_problem(params)
    if problem:
        raise ConfigError(f"{where}.litellm_params.{problem}")
    check_api_base(typed["api_base"], f"{where}.litellm_params.api_base")
    rest = {k: v for k, v in params.items() if k not in typed and k != "model"}
    dep = Deployment(
        model_name=model_name.strip(), provider=provider, model=upstream_model,
        model_info=model_info, params=rest, id=_deployment_id(raw_entry),
        **{k: v for k, v in typed.items() if v is not None},
    )
    from providers.limits import limit_problems

    problems = limit_problems(dep)
    if problems:
        raise ConfigError(f"{where}.{problems[0]}")
    dep = _resolve_provider_defaults(dep, environ, where)
    check_api_base(dep.api_base, f"{where}: the api_base from the provider's environment variable")
    return dep


def _check_ranges(typed: dict, where: str) -> None:
    """A timeout must be positive (0 would fail every call with a 504); prices and limits not negative; all
    finite (a NaN price made every response's cost ``nan``)."""
    import math

    if not math.isfinite(typed["timeout"]) or typed["timeout"] <= 0:
        raise ConfigError(f"{where}.litellm_params.timeout: must be a positive number of seconds, "
                          f"got {typed['timeout']:g}")
    for key in ("input_cost_per_token", "output_cost_per_token", "rpm", "tpm"):
        if typed[key] is not None and typed[key] < 0:
            raise ConfigError(f"{where}.litellm_params.{key}: must not be negative, got {typed[key]!r}")
        if typed[key] is not None and not math.isfinite(typed[key]):
            raise ConfigError(f"{where}.litellm_params.{key}: must be a finite number, got {typed[key]!r}")


def _check_per_request_price(params: dict, where: str) -> None:
    """``cost_per_request`` (and LiteLLM's ``input_cost_per_query``): a finite number, not negative."""
    import math

    for key in ("cost_per_request", "input_cost_per_query"):
        value = params.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ConfigError(f"{where}.litellm_params.{key}: must be a non-negative number of USD, got {value!r}")


def _split_model(model: str, where: str) -> tuple[str, str]:
    from providers import registry

    known = sorted(registry.PROVIDERS)
    if "/" not in model:
        raise ConfigError(f"{where}: '{model}' has no provider prefix; write provider/name "
                          f"with one of the known providers: {', '.join(known)}")
    try:
        provider, name = registry.split_model(model)
    except (DecisionError, ValueError, KeyError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if provider not in registry.PROVIDERS:
        raise ConfigError(f"{where}: unknown provider '{provider}' in '{model}'; known providers: {', '.join(known)}")
    if not name:
        raise ConfigError(f"{where}: '{model}' names no model after the provider")
    return provider, name


def _provider_params(provider: str) -> frozenset[str]:
    """Extra litellm_params the provider reads (``known_params`` on its class)."""
    from providers import registry

    return registry.PROVIDERS[provider].known_params


def _resolve_provider_defaults(dep: Deployment, environ: Mapping[str, str], where: str) -> Deployment:
    """Default keys and bases from the provider (``providers.registry.resolve``), when it offers them."""
    from providers import registry

    resolve = getattr(registry, "resolve", None)
    if resolve is None:
        return dep
    try:
        return resolve(dep, environ)
    except (DecisionError, ValueError, KeyError, LookupError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _optional(params: dict, key: str, kind: type, where: str):
    value = params.get(key)
    if value is None:
        return None
    try:
        if kind is str:
            if not isinstance(value, str):
                raise TypeError
            return value
        if isinstance(value, bool):
            raise TypeError
        converted = kind(value)
        if kind is int and converted != float(value):
            raise TypeError
        return converted
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(.inf)
        shown = f"a value of type {type(value).__name__}" if key in SECRET_KEYS else repr(value)  # never echo a key
        raise ConfigError(f"{where}.{key}: expected {kind.__name__}, got {shown}") from None


def _mapping(value: Any, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a mapping")
    return value


def _reject_unknown(section: dict, known: frozenset[str] | set[str], where: str) -> None:
    unknown = [k for k in section if k not in known]
    if unknown:
        raise ConfigError(f"{where}: unknown key {', '.join(repr(str(k)) for k in unknown)}; "
                          f"known keys: {', '.join(sorted(known))}")


def _deployment_id(raw_entry: Any) -> str:
    """A stable id from the entry as written (``os.environ/`` references, not the secrets)."""
    text = json.dumps(raw_entry, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _join(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)
