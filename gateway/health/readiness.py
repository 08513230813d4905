"""``GET /health/readiness``: may this gateway take traffic now, and what is down if not.

Each dependency is checked for real, not read from a flag set at start: the database with a
``SELECT 1``, Redis with a ``PING`` (when the config names one), the ``local/`` models by their
load state. The checks run at once, each within ``CHECK_TIMEOUT_S`` (a load balancer's probe
gives up after about a second); probes arriving while a check is running share its answer, so a
burst of probes costs one query, and an answer is never older than the probe that reads it.

    state of a dependency          readiness
    everything up                  200  status "healthy"
    local/ models still loading    503  status "starting"
    database down                  503  status "unhealthy", "down": ["database"]
                                   200  status "degraded" with general_settings.ready_while_db_down: true
                                        (the spend rows wait in the durable outbox and drain when it is back)
    Redis down                     200  status "degraded" (limits and routing state fall back to this
                                        process's memory as limits_on_redis_failure says)
                                   503  with general_settings.ready_while_redis_down: false
    a local/ model failed to load  200  status "degraded" (its group answers 400 naming it)
    a deployment has no API key    200  status "degraded", checks.deployments "unconfigured" (only with
                                        general_settings.allow_missing_keys: true, else the start failed);
                                        a request only it could take answers 503 naming it and the setting

Readiness is open (load balancers probe it without a key). With a master key set, only a caller
presenting the master key also gets the details (errors, the Redis URL, local model names, the
config generation, the outbox depth of each file, the gateway's version as ``version`` and as
``litellm_version``, where LiteLLM's ``lite version`` reads it...); every other caller gets the states alone.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import sqlalchemy as sa

from gateway import __version__
from gateway.db.outbox import brief
from gateway.shared_state import SharedState

if TYPE_CHECKING:
    from gateway.admission.admission import Admission
    from gateway.config.loader import GatewayConfig
    from gateway.config.registry import ModelRegistry
    from gateway.health.local_models import LocalModels
    from gateway.spend.log import SpendLog
    from gateway.upstream.upstream import Upstream

CHECK_TIMEOUT_S = 0.5

Check = dict[str, Any]


class SharedCheck:
    """One check; callers arriving while it runs share that run instead of starting their own."""

    def __init__(self, run: Callable[[], Awaitable[Check]]):
        self._run = run
        self._flight: asyncio.Future[Check] | None = None

    async def __call__(self) -> Check:
        if self._flight is None or self._flight.done():
            self._flight = asyncio.ensure_future(self._timed())
        return await asyncio.shield(self._flight)

    async def _timed(self) -> Check:
        try:
            async with asyncio.timeout(CHECK_TIMEOUT_S):
                return await self._run()
        except TimeoutError:
            return {"state": "down", "error": f"no answer within {CHECK_TIMEOUT_S:g} s"}


async def database_check(spend: SpendLog) -> Check:
    db = spend.db
    if db is None:
        return {"state": "down", "error": spend.error or "not open yet"}
    try:
        async with db.engine.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001 - any failure is the answer: down, and why (no statement, no URL)
        return {"state": "down", "error": brief(exc)}
    return {"state": "up"}


async def redis_check(shared: SharedState) -> Check:
    if shared.backend != "redis":
        return {"state": "not_configured"}
    check = getattr(shared, "check", None)  # FailoverState: pings Redis unless it is known to be away
    up = await check() if check is not None else not shared.degraded
    status = shared.status()
    return {"state": "up"} if up else {"state": "down", "error": status.get("error") or "unreachable"}


class RunningGateway(Protocol):
    """What readiness reads of the running gateway (``gateway.state.GatewayState``, which builds it)."""

    config: GatewayConfig
    registry: ModelRegistry
    upstream: Upstream
    spend: SpendLog
    shared: SharedState
    admission: Admission
    local_models: LocalModels

    @property
    def models_loaded(self) -> bool: ...


class Readiness:
    """The checks of one gateway (one per process); ``report(detailed)`` -> (HTTP status, body)."""

    def __init__(self, state: RunningGateway):
        self.state = state
        self.database = SharedCheck(lambda: database_check(state.spend))
        self.redis = SharedCheck(lambda: redis_check(state.shared))

    async def report(self, detailed: bool) -> tuple[int, dict[str, Any]]:
        state = self.state
        general = state.config.general_settings
        database, redis = await asyncio.gather(self.database(), self.redis())
        database, redis = {**database, **_outbox(state.spend)}, dict(redis)  # a shared answer stays whole
        local = self.local_check()
        deployments = self.deployments_check()
        down: list[str] = []
        degraded: list[str] = []
        notes: list[str] = []
        if database["state"] == "down":
            if general.get("ready_while_db_down") is True:
                degraded.append("database")
                notes.append("The database is down: spend rows wait in the outbox and are written when it is "
                             "back (general_settings.ready_while_db_down: true keeps the gateway ready).")
            else:
                down.append("database")
                notes.append("The database is down (set general_settings.ready_while_db_down: true to stay "
                             "ready while the outbox holds the spend rows).")
        if redis["state"] == "down":
            if general.get("ready_while_redis_down", True) is False:
                down.append("redis")
                notes.append("Redis is down (general_settings.ready_while_redis_down: false).")
            else:
                degraded.append("redis")
                notes.append("Redis is unreachable: routing state is kept in this process's memory until it is "
                             "back, and limits fall back as general_settings.limits_on_redis_failure says.")
        if local["state"] == "failed":
            degraded.append("local_models")
            notes.append("A local/ model failed to load: its model group answers 400 naming it.")
        if deployments["state"] == "unconfigured":
            degraded.append("deployments")
            notes.append(f"{len(state.registry.unconfigured)} deployment(s) have no API key (general_settings."
                         "allow_missing_keys: true): requests go to the other deployments of their group, or "
                         "answer 503 naming the deployment and the setting.")
        starting = local["state"] == "loading" or not state.upstream.started
        if starting:
            status_text = "starting"
        else:
            status_text = "unhealthy" if down else "degraded" if degraded else "healthy"
        ready = not starting and not down
        body: dict[str, Any] = {"status": status_text, "ready": ready,
                                "checks": {"database": database, "redis": redis, "local_models": local,
                                           "deployments": deployments},
                                "down": down, "degraded": degraded}
        if notes:
            body["warnings"] = notes
        if detailed:
            body.update(self.details(local))
        else:
            _strip_details(body)
        return (200 if ready else 503), body

    def local_check(self) -> Check:
        state = self.state
        refs = state.registry.local_model_refs()
        if not refs:
            return {"state": "none"}
        models = state.local_models.report(refs)
        states = {entry["state"] for entry in models.values()}
        summary = "loading" if "loading" in states or not state.models_loaded else \
            "failed" if "failed" in states else "loaded"
        return {"state": summary, "models": models}

    def deployments_check(self) -> Check:
        """The deployments left without their provider key (gateway/config/credentials.py), each named."""
        registry = self.state.registry
        if not registry.unconfigured:
            return {"state": "configured"}
        missing = [{"deployment": f"{dep.provider}/{dep.model}", "model_group": dep.model_name,
                    "error": registry.unconfigured[dep.id]}
                   for dep in registry.deployments if dep.id in registry.unconfigured]
        return {"state": "unconfigured", "unconfigured": missing}

    def details(self, local: Check) -> dict[str, Any]:
        """What only the operator sees: the counts, each part's own status, the config in force."""
        state = self.state
        errors = {ref: entry["error"] for ref, entry in local.get("models", {}).items() if "error" in entry}
        out: dict[str, Any] = {
            "version": __version__, "litellm_version": __version__,  # LiteLLM's Client reads litellm_version
            "models": len(state.registry.names), "deployments": len(state.registry.deployments),
            "upstream_client": "ready" if state.upstream.started else "closed",
            "local_models": "loading" if local["state"] == "loading" else "loaded",
            "database": state.spend.status(), "limits": state.admission.status(),
            "shared_state": state.shared.status(), "pid": os.getpid(),
        }
        if errors:
            out["local_model_errors"] = errors
        reload = getattr(state, "reload", None)
        if reload is not None:
            out["config"] = reload.status()
        return out


def _outbox(spend: SpendLog) -> dict[str, Any]:
    return {"outbox_depth": spend.outbox.depth()} if spend.outbox is not None else {}


def _strip_details(body: dict[str, Any]) -> None:
    """Without the master key: states only (no error text, no model references)."""
    for check in body["checks"].values():
        check.pop("error", None)
        for key in ("models", "unconfigured"):  # local model references, unconfigured deployments
            listed = check.pop(key, None)
            if listed is not None:
                check["count"] = len(listed)
