"""Configuration: a LiteLLM-shaped YAML file -> ``GatewayConfig`` with ``Deployment`` objects.

An existing LiteLLM config works as is: ``model_list`` (``model_name``, ``litellm_params``,
``model_info``), ``general_settings``, ``router_settings``, ``litellm_settings``; a value
``os.environ/NAME`` anywhere is read from the environment. Every entry and section is checked, and
every problem found is reported at once: one ``ConfigError`` whose ``problems`` each name the entry
(``model_list[1] (jev).litellm_params.api_kye``) and the rule, an unknown key with the closest known
names ("did you mean 'api_key'?"). A deployment without the key its provider needs is one of them,
unless ``general_settings.allow_missing_keys: true`` (then it is listed in ``unconfigured``). A file
that is not UTF-8, too large, or whose aliases expand too far (``config/yaml_bounds.py``) names the file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gateway.config import keys as config_keys
from gateway.config.credentials import SETTING as ALLOW_MISSING_KEYS
from gateway.config.entries import deployment_of
from gateway.config.errors import ConfigError, Problems, unknown_keys
from gateway.config.yaml_bounds import MAX_CONFIG_BYTES, load_yaml
from providers.base import Deployment

ENV_PREFIX = "os.environ/"

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
    # deployments without the key their provider needs (general_settings.allow_missing_keys: true):
    # deployment id -> the problem, naming the entry and the setting (gateway/config/credentials.py)
    unconfigured: dict[str, str] = field(default_factory=dict)

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
    url = config.general_settings.get("database_url")
    if isinstance(url, str) and url:  # sqlite:///x.db: the x.db beside this file, from any working directory
        from gateway.db.engine import sqlite_beside

        config.general_settings["database_url"] = sqlite_beside(url, path.resolve().parent)
    return config


def build_config(raw: Any, environ: Mapping[str, str], source: str = "<config>") -> GatewayConfig:
    """Check every entry of ``raw`` and build the config; one ``ConfigError`` listing every problem."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be a mapping with model_list, general_settings, ...")
    problems = Problems()
    problems.items.extend(unknown_keys(raw, config_keys.TOP_LEVEL, ""))
    env_section = _mapping(raw.get("environment_variables"), "environment_variables", problems)
    environ = {**{k: str(v) for k, v in env_section.items()}, **environ}
    unset: dict[str, str] = {}
    resolved = resolve_env(raw, environ, unset=unset)
    general = _mapping(resolved.get("general_settings"), "general_settings", problems)
    router = _mapping(resolved.get("router_settings"), "router_settings", problems)
    settings = _mapping(resolved.get("litellm_settings"), "litellm_settings", problems)
    for section, known, name in ((general, config_keys.GENERAL_SETTINGS, "general_settings"),
                                 (router, config_keys.ROUTER_SETTINGS, "router_settings"),
                                 (settings, config_keys.LITELLM_SETTINGS, "litellm_settings")):
        problems.items.extend(unknown_keys(section, known, name))
    allow_missing = general.get(ALLOW_MISSING_KEYS, False)
    if not isinstance(allow_missing, bool):
        problems.add(f"general_settings.{ALLOW_MISSING_KEYS}: must be true or false, got {allow_missing!r}")
    deployments, unconfigured, failed = _deployments(raw, resolved, environ, router, problems, unset,
                                                     allow_missing is True)
    for path, name in unset.items():  # the variables no deployment took as its missing key
        problems.add(f"{path}: 'os.environ/' needs a variable name" if not name else
                     f"{path}: environment variable {name} is not set")
    extra = {k: v for k, v in resolved.items() if k not in
             {"model_list", "general_settings", "router_settings", "litellm_settings", "environment_variables"}}
    config = GatewayConfig(deployments=deployments, general_settings=general, router_settings=router,
                           litellm_settings=settings, environment_variables=env_section, extra_sections=extra,
                           source=source, unconfigured=unconfigured)
    with problems.collect():
        config.request_limits = build_request_limits(general.get("decision_limits"))
    with problems.collect():
        config.limits = build_limits_settings(general)
    _check_settings(config, failed, problems)
    problems.raise_if_any(source)
    return config


def _deployments(raw: dict, resolved: dict, environ: Mapping[str, str], router: dict, problems: Problems,
                 unset: dict[str, str], allow_missing: bool) -> tuple[list[Deployment], dict[str, str], list[str]]:
    """The deployments of ``model_list``, the unconfigured ones' problems (missing keys allowed), and
    the model names of the entries that failed (so that settings naming them are not refused too)."""
    model_list = resolved.get("model_list") or []
    if not isinstance(model_list, list):
        problems.add("model_list: must be a list of entries with model_name and litellm_params")
        return [], {}, []
    if not model_list:
        problems.add("model_list: no models configured; add at least one entry with model_name and "
                     "litellm_params.model")
    deployments: list[Deployment] = []
    unconfigured: dict[str, str] = {}
    failed: list[str] = []
    for i, entry in enumerate(model_list):
        unset_key = unset.pop(f"model_list[{i}].litellm_params.api_key", None)
        dep = deployment_of(entry, raw["model_list"][i], i, environ, router, problems, unset_key,
                            unconfigured if allow_missing else None, unset)
        if dep is not None:
            deployments.append(dep)
        elif isinstance(entry, dict) and isinstance(entry.get("model_name"), str):
            failed.append(entry["model_name"].strip())
    return deployments, unconfigured, failed


def _check_settings(config: GatewayConfig, failed: list[str], problems: Problems) -> None:
    """The router's, the cache's, the shared state's and the other features' settings, checked at load
    (the gateway builds them at start); each section on its own, so each reports its problem."""
    from types import SimpleNamespace

    from gateway.cache.settings import cache_settings_of
    from gateway.decisionlog.settings import decision_log_settings
    from gateway.router.settings import router_settings
    from gateway.shared_state.factory import redis_url_from_config

    groups: dict[str, list[Any]] = {name: [SimpleNamespace(model_info={})] for name in failed}
    for dep in config.deployments:
        groups.setdefault(dep.model_name, []).append(dep)
    general = config.general_settings
    for check in (lambda: router_settings(config.router_settings, config.litellm_settings, groups),
                  lambda: redis_url_from_config(general, config.router_settings),
                  lambda: cache_settings_of(config),  # the answer cache's keys (a ConfigError names the bad one)
                  lambda: decision_log_settings(general, config.deployments),
                  lambda: _check_edge_and_database(general)):
        with problems.collect():
            try:
                check()
            except ValueError as exc:
                if isinstance(exc, ConfigError):
                    raise
                raise ConfigError(str(exc)) from None
    failure = general.get("limits_on_redis_failure")
    if failure is not None and failure not in ("fail_open", "fail_closed"):
        problems.add(f"general_settings.limits_on_redis_failure: must be fail_open or fail_closed, got {failure!r}")
    store = general.get("store_content")
    if store is not None and store not in ("none", "digest", "full"):
        problems.add(f"general_settings.store_content: must be none, digest or full, got {store!r}")
    for key in ("ready_while_db_down", "ready_while_redis_down"):
        value = general.get(key)
        if value is not None and not isinstance(value, bool):
            problems.add(f"general_settings.{key}: must be true or false, got {value!r}")


def _check_edge_and_database(general: dict) -> None:
    """``allowed_origins`` and the database settings, which the app reads only when it starts."""
    from gateway.db.engine import async_url, auto_migrate_from_settings
    from gateway.edge.cross_site import CrossSitePolicy

    CrossSitePolicy.from_settings(general)
    auto_migrate_from_settings(general)
    url = general.get("database_url")
    if isinstance(url, str) and url:
        async_url(url)
    elif url not in (None, ""):
        raise ConfigError("general_settings.database_url: must be a URL such as postgresql://user@host/db or "
                          "sqlite:///path/to/file.db")


def resolve_env(value: Any, environ: Mapping[str, str], where: str = "", unset: dict[str, str] | None = None) -> Any:
    """Replace every ``os.environ/NAME`` string (at any depth) by the variable's value. A variable that is
    not set is a ``ConfigError``, or, with ``unset`` given, recorded there (path -> name) as None."""
    if isinstance(value, str) and value.startswith(ENV_PREFIX):
        name = value[len(ENV_PREFIX):].strip()
        if name and name in environ:
            return environ[name]
        if unset is None:
            raise ConfigError(f"{where or 'config'}: 'os.environ/' needs a variable name" if not name else
                              f"{where or 'config'}: environment variable {name} is not set")
        unset[where or "config"] = name
        return None
    if isinstance(value, dict):
        return {k: resolve_env(v, environ, _join(where, k), unset) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_env(v, environ, f"{where}[{i}]", unset) for i, v in enumerate(value)]
    return value


def build_request_limits(raw: Any):
    """``general_settings.decision_limits`` -> ``translators.limits.RequestLimits``; every unknown key and
    bad value named."""
    from dataclasses import fields

    from translators.limits import RequestLimits

    where = "general_settings.decision_limits"
    if raw is not None and not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a mapping such as {{max_questions: 400}}")
    raw = raw or {}
    known = [f.name for f in fields(RequestLimits)]
    problems = unknown_keys(raw, known, where)
    for name, value in raw.items():
        if name in known and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            problems.append(f"{where}.{name}: must be a whole number, 0 or more, got {value!r}")
    if problems:
        raise ConfigError(problems)
    try:
        return RequestLimits.from_dict(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


def build_limits_settings(general: dict):
    """The limits and hardening keys of ``general_settings`` -> ``gateway.config.limits.LimitsSettings``."""
    from gateway.config.limits import limits_from_settings, limits_problems

    problems = limits_problems(general)
    if problems:
        raise ConfigError([f"general_settings.{problem}" for problem in problems])
    return limits_from_settings(general)


def _mapping(value: Any, where: str, problems: Problems) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.add(f"{where}: must be a mapping")
        return {}
    return value


def _join(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)
