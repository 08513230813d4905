"""Reloading the config file without a restart and without dropping a request.

    kill -HUP <pid>                                   # logs the outcome; an error names the entry
    curl -X POST -H "Authorization: Bearer $MASTER" http://gateway/config/reload
                                                      # 200 with what changed, or 400 naming the entry

``Reloader.reload`` reads the file the gateway was started with, validates it as a start would
(``gateway.config.loader.load_config``: any problem is a ``ConfigError`` naming the entry, and the
running config stays), builds the new model registry, router settings, router and pipeline in
full, loads the ``local/`` models the new config adds, and only then swaps them in, in one step
of the event loop. A request that already began keeps the pipeline it started with (each endpoint
holds its own reference), so in-flight requests finish on the old config while new ones take the
new one. The new pipeline is a copy of the old one: the upstream client, the auth, the limits, the
spend log, the request log and the router's health state are shared, not rebuilt.

What a process binds at start is not changed by a reload: the database and Redis connections,
the master key and the key salt, spend logging, the connection-level limits and the answer
cache's settings (``litellm_settings.cache``, ``cache_params``, a group's ``model_info.cache``).
A reload that changes one of them keeps the running value, says so in ``restart_required`` (and
in a warning line); ``state.config`` is the config in force.

Any failure to reload (a file that is not UTF-8, or one the loader did not foresee) is a
``ConfigError`` naming the file: a 400 on ``POST /config/reload``, a log line for SIGHUP; the running
config stays.

Under ``--workers N`` the parent process validates the file on SIGHUP and forwards the signal to
every worker (gateway/edge/workers.py). ``POST /config/reload`` validates the file in the worker that
answered (a broken one is a 400 and no worker is signalled), signals the parent, and answers 200 only
once every live worker has reloaded to that same file (``gateway/config/generations.py``: each worker
publishes its generation and the digest of its file). A worker whose reload failed, workers that do
not all confirm within ``WORKERS_RELOAD_S``, or a supervisor that is gone make it a 503 naming them.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from gateway.admin.common import AdminRoute, error_response
from gateway.auth.errors import PermissionDenied
from gateway.config import generations
from gateway.config.errors import ConfigError
from gateway.config.limits import DEFAULT_LIMITS_SETTINGS
from gateway.config.loader import GatewayConfig, build_limits_settings, load_config
from gateway.config.registry import ModelRegistry
from gateway.decisionlog.settings import decision_log_settings
from gateway.pipeline import Pipeline
from gateway.router import Router, key_of
from gateway.router.settings import RouterSettings, router_settings_of
from translators.errors import DecisionError

if TYPE_CHECKING:
    from gateway.health.local_models import LocalModels
    from gateway.observability import Observer
    from gateway.upstream.upstream import Upstream

log = logging.getLogger("gateway.reload")

SUPERVISOR_ENV = "DECISIONS_GATEWAY_SUPERVISOR_PID"  # set for the workers of ``--workers N``
WORKERS_RELOAD_S = 60.0  # POST /config/reload under --workers: how long every worker has to confirm

# Bound at start: a reload keeps the running value and reports the key under restart_required.
START_BOUND = {
    "general_settings": frozenset({
        "master_key", "salt_key", "database_url", "redis_url", "redis_host", "redis_port", "redis_password",
        "auto_migrate", "disable_spend_logs", "store_content", "database_connection_pool_limit",
        "database_connection_timeout", "limits_on_redis_failure", "max_upstream_response_bytes",
        "request_header_timeout_s", "keep_alive_timeout_s", "max_concurrent_heavy_decodes",
        "max_concurrent_connections", "otel_endpoint"}),
    "router_settings": frozenset({"redis_url", "redis_host", "redis_port", "redis_password"}),
    "litellm_settings": frozenset({"cache", "cache_params"}),
}


@dataclasses.dataclass
class Built:
    config: GatewayConfig
    registry: ModelRegistry
    settings: RouterSettings
    pipeline: Pipeline
    restart_required: list[str]


def in_force(old: GatewayConfig, new: GatewayConfig) -> tuple[GatewayConfig, list[str]]:
    """``new`` with the start-bound keys of ``old``, and the names of those that differed."""
    changed: list[str] = []
    sections: dict[str, dict[str, Any]] = {}
    for section, keys in START_BOUND.items():
        before, after = getattr(old, section), dict(getattr(new, section))
        for key in sorted(keys):
            if before.get(key) != after.get(key):
                changed.append(f"{section}.{key}")
            if key in before:
                after[key] = before[key]
            else:
                after.pop(key, None)
        sections[section] = after
    before_cache, after_cache = _cache_of_groups(old), _cache_of_groups(new)
    if any(before_cache.get(name, NO_CACHE_KEYS) != after_cache.get(name, NO_CACHE_KEYS)
           for name in {*before_cache, *after_cache}):
        changed.append("model_list[].model_info.cache")
    merged = dataclasses.replace(new, general_settings=sections["general_settings"],
                                 router_settings=sections["router_settings"],
                                 litellm_settings=sections["litellm_settings"])
    merged.limits = build_limits_settings(merged.general_settings)
    return merged, changed


NO_CACHE_KEYS = (None, None)


def _cache_of_groups(config: GatewayConfig) -> dict[str, tuple[Any, Any]]:
    """The answer cache's per-group switches (read by the cache once at start)."""
    return {dep.model_name: ((dep.model_info or {}).get("cache"), (dep.model_info or {}).get("cache_ttl"))
            for dep in config.deployments}


class Reloadable(Protocol):
    """What a reload reads and swaps of the running gateway (``gateway.state.GatewayState``, which
    builds its ``Reloader``): the config, the registry and the pipeline are replaced together."""

    config: GatewayConfig
    registry: ModelRegistry
    pipeline: Pipeline
    upstream: Upstream
    local_models: LocalModels

    @property
    def observer(self) -> Observer | None: ...


def build(state: Reloadable, new: GatewayConfig) -> Built:
    """Everything a request needs from the new config, built beside the running one."""
    config, restart_required = in_force(state.config, new)
    registry = ModelRegistry.from_config(config)
    try:
        settings = router_settings_of(config)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    old = state.pipeline
    router = Router(registry, settings, old.router.health, state.upstream, rng=old.router.rng)
    router.tracing = old.router.tracing  # the spans of each attempt, when traces are on
    pipeline = copy.copy(old)  # shares the upstream, auth, limits, spend log, request log, background tasks
    pipeline.registry, pipeline.router = registry, router
    pipeline.limits, pipeline.settings = config.request_limits, config.limits or DEFAULT_LIMITS_SETTINGS
    pipeline.decision_log = decision_log_settings(config.general_settings, config.deployments)
    return Built(config, registry, settings, pipeline, restart_required)


def groups_of(registry: ModelRegistry) -> dict[str, frozenset[str]]:
    return {name: frozenset(key_of(dep) for dep in registry.group(name)) for name in registry.names}


class Reloader:
    """One per process: ``reload()`` (serialised), its SIGHUP handler, and what readiness shows of it."""

    def __init__(self, state: Reloadable):
        self.state = state
        source = state.config.source
        self.path: Path | None = Path(source).resolve() if not source.startswith("<") else None
        self.generation = 1
        self.loaded_at = time.time()
        self.last_error: str | None = None
        self.attempts = 0  # reloads attempted, failed ones included (published for POST /config/reload)
        self.last_summary: dict[str, Any] = {}
        self._lock = asyncio.Lock()
        self._signalled: set[asyncio.Task[None]] = set()
        self._publish()

    def _publish(self) -> None:
        try:
            generations.publish(generations.Generation(os.getpid(), self.generation, self.state.config.digest,
                                                       self.attempts, self.last_error))
        except OSError as exc:  # the folder went away: POST /config/reload then cannot confirm this worker
            log.warning("could not publish this worker's config generation: %s", exc)

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": str(self.path) if self.path else self.state.config.source,
                               "generation": self.generation, "loaded_at": self.loaded_at}
        if self.last_error:
            out["last_reload_error"] = self.last_error
        return out

    async def reload(self) -> dict[str, Any]:
        """Read, validate, build, warm, swap; ``ConfigError`` (nothing changed) when the file is unusable."""
        async with self._lock:
            self.attempts += 1
            try:
                built = await self._load()
            except ConfigError as exc:
                self.last_error = str(exc)
                self._publish()
                raise
            local_errors = await self.state.local_models.warm(built.registry.local_model_refs())
            before = groups_of(self.state.registry)
            self._swap(built)
            after = groups_of(built.registry)
        summary: dict[str, Any] = {
            "status": "reloaded", "source": str(self.path), "generation": self.generation,
            "models": list(built.registry.names),
            "added": [name for name in after if name not in before],
            "removed": [name for name in before if name not in after],
            "changed": [name for name in after if name in before and after[name] != before[name]],
            "restart_required": built.restart_required,
        }
        if local_errors:
            summary["local_model_errors"] = local_errors
        if built.registry.unconfigured:  # general_settings.allow_missing_keys: true (gateway/config/credentials.py)
            summary["unconfigured"] = list(built.registry.unconfigured.values())
            for problem in summary["unconfigured"]:
                log.warning("config reload: %s; the deployment answers 503 until it is set", problem)
        self.last_summary = summary
        self._publish()
        log.info("config reloaded from %s (generation %d): %d models; added %s, removed %s, changed %s",
                 self.path, self.generation, len(summary["models"]), summary["added"] or "none",
                 summary["removed"] or "none", summary["changed"] or "none")
        if built.restart_required:
            log.warning("config reload: %s changed but only take effect after a restart; the running values "
                        "stay", ", ".join(built.restart_required))
        return summary

    async def _load(self) -> Built:
        """The file read, validated and built beside the running config; any failure a ``ConfigError``."""
        if self.path is None:
            raise ConfigError("there is no config file to reload: the gateway was started without --config")
        try:
            return build(self.state, await asyncio.to_thread(load_config, self.path))
        except ConfigError:
            raise
        except Exception as exc:  # what the loader did not foresee: still no reload, said as such
            log.exception("config reload from %s failed", self.path)
            raise ConfigError(f"{self.path}: cannot be loaded: {type(exc).__name__}: {exc}") from None

    async def reload_everywhere(self) -> dict[str, Any]:
        """``POST /config/reload``: this process's reload, or under ``--workers N`` every worker's (see above)."""
        if not generations.shared():
            return await self.reload()
        digest = (await self._load()).config.digest  # a broken file is a 400 here, and no worker is signalled
        before = generations.running()
        if not signal_supervisor():
            raise WorkersDisagree("the supervisor process is gone, so the other workers cannot be told; "
                                  "restart the gateway")
        now = await self._confirmed(before)
        others = sorted(str(g.pid) for g in now.values() if g.digest != digest)
        if others:
            raise WorkersDisagree(f"workers {', '.join(others)} run another version of {self.path} (it changed "
                                  "during the reload); reload again")
        return {**self.last_summary, "generation": self.generation,
                "workers": {str(pid): g.generation for pid, g in sorted(now.items())}}

    async def _confirmed(self, before: dict[int, generations.Generation]) -> dict[int, generations.Generation]:
        """Every live worker's status once each has attempted a reload since ``before`` (a worker started
        since then loaded the file at start); ``WorkersDisagree`` when one failed or the time is up."""
        deadline = time.monotonic() + WORKERS_RELOAD_S
        while True:
            now = generations.running()
            done = {pid: g for pid, g in now.items() if pid not in before or g.attempts > before[pid].attempts}
            failed = [g for g in done.values() if g.pid in before and g.error]
            if failed:  # the others may have reloaded: the workers now disagree
                raise WorkersDisagree(f"worker {failed[0].pid} did not reload ({failed[0].error}); fix the file and "
                                      "reload again")
            if len(done) == len(now):
                return now
            if time.monotonic() > deadline:
                waiting = ", ".join(str(pid) for pid in sorted(set(now) - set(done)))
                raise WorkersDisagree(f"workers {waiting} did not reload within {WORKERS_RELOAD_S:g} s")
            await asyncio.sleep(0.05)

    def _swap(self, built: Built) -> None:
        """One step of the event loop: requests that started before keep the old pipeline."""
        state = self.state
        state.config, state.registry, state.pipeline = built.config, built.registry, built.pipeline
        built.pipeline.router.health.disable_cooldowns = built.settings.disable_cooldowns
        if state.observer is not None:  # the new groups and deployments become label values, their keys secrets
            state.observer.follow(built.registry)
        self.generation += 1
        self.loaded_at = time.time()
        self.last_error = None

    # ---- SIGHUP ----------------------------------------------------------------------------------

    def install_sighup(self) -> Callable[[], None]:
        """Reload on SIGHUP (main thread only: a gateway served from a thread has no signals); returns
        the function that removes the handler."""
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGHUP"):
            return lambda: None
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGHUP, self._on_signal)
        except (NotImplementedError, RuntimeError, ValueError):
            return lambda: None

        def remove() -> None:
            loop.remove_signal_handler(signal.SIGHUP)

        return remove

    def _on_signal(self) -> None:
        task = asyncio.ensure_future(self._reload_logged())
        self._signalled.add(task)
        task.add_done_callback(self._signalled.discard)

    async def _reload_logged(self) -> None:
        try:
            await self.reload()
        except ConfigError as exc:
            log.error("config reload on SIGHUP failed; the running config stays: %s", exc)
        except Exception:  # a gateway bug: say it, keep serving the running config
            log.exception("config reload on SIGHUP failed; the running config stays")


class WorkersDisagree(Exception):
    """Under ``--workers N``: not every worker confirmed the reload (the message says which, and why)."""


def ignore_sighup_until_started() -> None:
    """A SIGHUP before the app has installed its handler must not end the process (SIGHUP's default)."""
    if hasattr(signal, "SIGHUP") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGHUP, signal.SIG_IGN)


def signal_supervisor() -> bool:
    """Under ``--workers N``: ask the parent to reload every worker (it validates and forwards SIGHUP)."""
    raw = os.environ.get(SUPERVISOR_ENV, "")
    if not raw.isdigit() or int(raw) != os.getppid():
        return False
    os.kill(int(raw), signal.SIGHUP)
    return True


router = APIRouter(route_class=AdminRoute, tags=["operations"])


@router.post("/config/reload", summary="Reload the config file (the master key only)")
async def config_reload(request: Request) -> JSONResponse:
    if not request.state.admin_identity.is_master:
        raise PermissionDenied("Only the master key may reload the config.", code="admin_only")
    reloader: Reloader = request.app.state.gateway.reload
    try:
        summary = await reloader.reload_everywhere()
    except ConfigError as exc:
        return error_response(DecisionError(status=400, message=f"The config was not reloaded; the running "
                                            f"config stays. {exc}", type="invalid_request_error",
                                            code="invalid_config"))
    except WorkersDisagree as exc:
        return error_response(DecisionError(status=503, message=f"The config was not reloaded by every worker: "
                                            f"{exc}.", type="service_unavailable", code="reload_incomplete"))
    return JSONResponse(summary)
