"""One ``model_list`` entry -> a ``Deployment``, every problem of the entry recorded, none raised.

``deployment_of`` adds each problem of the entry to the load's ``Problems`` (an unknown key with
its closest known names, a value of the wrong type or out of range, a price, a header, a limit
override, an ``api_base``), each named ``model_list[<i>] (<model_name>).<path>``, and returns the
deployment only when the entry has none. A deployment whose provider needs a key and has none is
refused the same way, or, with ``general_settings.allow_missing_keys: true``, kept and listed in
``unconfigured`` (gateway/config/credentials.py).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from gateway.config import keys as config_keys
from gateway.config.credentials import SETTING as ALLOW_MISSING_KEYS
from gateway.config.credentials import missing_key
from gateway.config.errors import ConfigError, Problems, unknown_keys
from gateway.config.params import param_problems
from providers.base import Deployment
from translators.errors import DecisionError

SECRET_KEYS = frozenset({"api_key", "master_key", "salt_key"})
TYPED = {"api_key": str, "api_base": str, "timeout": float, "input_cost_per_token": float,
         "output_cost_per_token": float, "rpm": int, "tpm": int}


def deployment_of(entry: Any, raw_entry: Any, index: int, environ: Mapping[str, str], router: dict,
                  problems: Problems, unset_key: str | None = None,
                  unconfigured: dict[str, str] | None = None, unset: Collection[str] = ()) -> Deployment | None:
    """The entry's deployment, or None when it has a problem (each one added to ``problems``).
    ``unset_key``: the variable of an ``api_key: os.environ/NAME`` that is not set. ``unconfigured``:
    given when missing keys are allowed; a deployment without its key goes there (id -> problem).
    ``unset``: the paths whose variable is not set (the loader names them; "missing" would say it twice)."""
    where = f"model_list[{index}]"
    said = {key for key in ("model_name", "litellm_params.model") if f"{where}.{key}" in unset}
    if not isinstance(entry, dict):
        problems.add(f"{where}: must be a mapping with model_name and litellm_params")
        return None
    before = len(problems)
    problems.items.extend(unknown_keys(entry, config_keys.MODEL_ENTRY, where))
    model_name = entry.get("model_name")
    if not isinstance(model_name, str) or not model_name.strip():
        if "model_name" not in said:
            problems.add(f"{where}.model_name: missing; every entry needs the name callers use")
    else:
        where = f"model_list[{index}] ({model_name})"
    params = entry.get("litellm_params")
    if not isinstance(params, dict):
        problems.add(f"{where}.litellm_params: missing; it needs at least model: provider/name")
        return None
    provider = upstream_model = None
    model = params.get("model")
    if not isinstance(model, str) or not model.strip():
        if "litellm_params.model" not in said:
            problems.add(f"{where}.litellm_params.model: missing; write it as provider/name, e.g. "
                         "typesafe/jev-latest")
    else:
        with problems.collect():
            provider, upstream_model = split_model(model, f"{where}.litellm_params.model")
    known = config_keys.LITELLM_PARAMS | config_keys.PROVIDER_PARAMS | (provider_params(provider) if provider
                                                                          else frozenset())
    problems.items.extend(unknown_keys(params, known, f"{where}.litellm_params"))
    model_info = entry.get("model_info") or {}
    if not isinstance(model_info, dict):
        problems.add(f"{where}.model_info: must be a mapping")
        model_info = {}
    typed: dict[str, Any] = {}
    for key, kind in TYPED.items():
        with problems.collect():
            typed[key] = optional(params, key, kind, f"{where}.litellm_params")
    if typed.get("timeout") is None:
        with problems.collect():
            typed["timeout"] = optional(router, "timeout", float, "router_settings") or 60.0
    for problem in range_problems(typed) + per_request_price_problems(params) + param_problems(params):
        problems.add(f"{where}.litellm_params.{problem}")
    with problems.collect():
        check_api_base(typed.get("api_base"), f"{where}.litellm_params.api_base")
    if len(problems) > before or provider is None or upstream_model is None or not isinstance(model_name, str):
        return None
    rest = {k: v for k, v in params.items() if k not in typed and k != "model"}
    dep = Deployment(
        model_name=model_name.strip(), provider=provider, model=upstream_model,
        model_info=model_info, params=rest, id=deployment_id(raw_entry),
        **{k: v for k, v in typed.items() if v is not None},
    )
    from providers.limits import limit_problems

    for problem in limit_problems(dep):
        problems.add(f"{where}.{problem}")
    with problems.collect():
        dep = resolve_provider_defaults(dep, environ, where)
        check_api_base(dep.api_base, f"{where}: the api_base from the provider's environment variable")
    if len(problems) > before:
        return None
    return _with_key(dep, where, problems, unset_key, unconfigured)


def _with_key(dep: Deployment, where: str, problems: Problems, unset_key: str | None,
              unconfigured: dict[str, str] | None) -> Deployment | None:
    """The deployment, unless its provider needs a key it lacks: then a problem, or (missing keys
    allowed) the deployment listed in ``unconfigured``. An ``os.environ/NAME`` that is not set is a
    missing key even when the provider's own variable is set: the entry asked for that one."""
    if unset_key is not None:
        dep = replace(dep, api_key=None)
    setting = missing_key(dep)
    if setting is None:
        if unset_key is not None:  # a provider that takes no key, asked for one that is not there
            problems.add(f"{where}.litellm_params.api_key: environment variable {unset_key} is not set")
            return None
        return dep
    why = (f"environment variable {unset_key} is not set" if unset_key is not None else
           f"missing; set {setting}")
    problem = f"{where}.litellm_params.api_key: {why}, and provider '{dep.provider}' needs an API key"
    if unconfigured is None:
        problems.add(f"{problem} (general_settings.{ALLOW_MISSING_KEYS}: true starts the gateway without it, "
                     "the deployment answering 503 until it is set)")
        return None
    unconfigured[dep.id] = problem
    return dep


def range_problems(typed: dict) -> list[str]:
    """A timeout must be positive (0 would fail every call with a 504); prices and limits not negative; all
    finite (a NaN price made every response's cost ``nan``)."""
    out = []
    timeout = typed.get("timeout")
    if timeout is not None and (not math.isfinite(timeout) or timeout <= 0):
        out.append(f"timeout: must be a positive number of seconds, got {timeout:g}")
    for key in ("input_cost_per_token", "output_cost_per_token", "rpm", "tpm"):
        value = typed.get(key)
        if value is not None and value < 0:
            out.append(f"{key}: must not be negative, got {value!r}")
        elif value is not None and not math.isfinite(value):
            out.append(f"{key}: must be a finite number, got {value!r}")
    return out


def per_request_price_problems(params: dict) -> list[str]:
    """``cost_per_request`` (and LiteLLM's ``input_cost_per_query``): a finite number, not negative."""
    out = []
    for key in ("cost_per_request", "input_cost_per_query"):
        value = params.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            out.append(f"{key}: must be a non-negative number of USD, got {value!r}")
    return out


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


def split_model(model: str, where: str) -> tuple[str, str]:
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


def provider_params(provider: str) -> frozenset[str]:
    """Extra litellm_params the provider reads (``known_params`` on its class)."""
    from providers import registry

    return registry.PROVIDERS[provider].known_params


def resolve_provider_defaults(dep: Deployment, environ: Mapping[str, str], where: str) -> Deployment:
    """Default keys and bases from the provider (``providers.registry.resolve``), when it offers them."""
    from providers import registry

    try:
        return registry.resolve(dep, environ)
    except (DecisionError, ValueError, KeyError, LookupError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


def optional(params: dict, key: str, kind: type, where: str):
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


def deployment_id(raw_entry: Any) -> str:
    """A stable id from the entry as written (``os.environ/`` references, not the secrets)."""
    text = json.dumps(raw_entry, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
