"""What the running gateway holds: its config, the model registry, the shared upstream client, the
pipeline over them, and the start-up warm-up of ``local/`` models."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gateway.admission.admission import Admission
from gateway.auth.budget_resets import BudgetResets
from gateway.auth.cache import KeyCache
from gateway.auth.identity import Authenticator
from gateway.auth.keys import KeyHasher, load_secret, master_key_of
from gateway.auth.records import Entry
from gateway.cache import AnswerCache, cache_settings_of
from gateway.config.limits import DEFAULT_LIMITS_SETTINGS
from gateway.config.loader import GatewayConfig
from gateway.config.registry import ModelRegistry
from gateway.decisionlog.settings import decision_log_settings
from gateway.health.local_models import LocalModels
from gateway.health.readiness import Readiness
from gateway.observability import Observer
from gateway.passthrough.passthrough import PassthroughSettings
from gateway.pipeline import Pipeline, RequestRecord
from gateway.reload import Reloader
from gateway.router import Health, Router
from gateway.router.settings import router_settings_of
from gateway.shared_state import SharedState
from gateway.shared_state.factory import redis_url_from_config, state_from_settings
from gateway.spend.log import SpendLog
from gateway.upstream.upstream import Upstream

if TYPE_CHECKING:
    from gateway.db.engine import Database

log = logging.getLogger("gateway.state")
DB_START_WAIT_S = 10.0
CALIBRATION_GAUGES_S = 60.0
REDIS_TIMEOUT_S = 2.0  # how long start-up waits for the database before serving without it


def build_authenticator(general_settings: dict[str, Any], spend: SpendLog, shared: SharedState) -> Authenticator:
    """The key resolver: the master key from the config or the environment, virtual keys from the
    database the spend log opens (a lookup while it is away is a 503, never a pass)."""
    async def load(key_hash: str) -> Entry | None:
        from gateway.auth import store

        if spend.db is None:
            raise ConnectionError("the database is not open")
        return await store.load_entry(spend.db, key_hash)

    hasher = KeyHasher(load_secret(general_settings, os.environ))
    return Authenticator(hasher, master_key_of(general_settings, os.environ), load, KeyCache(shared))


@dataclass
class GatewayState:
    config: GatewayConfig
    upstream: Upstream
    registry: ModelRegistry = field(init=False)
    shared: SharedState = field(init=False)  # router state (and later limits, cache): memory or Redis
    pipeline: Pipeline = field(init=False)
    passthrough: PassthroughSettings = field(init=False)
    warmup: asyncio.Future[Any] | None = None  # loading the local/ models at start-up
    spend: SpendLog = field(init=False)  # the outbox and the database (keys, teams, spend logs)
    auth: Authenticator = field(init=False)  # keys -> identities, shared by the pipeline and the admin API
    admission: Admission = field(init=False)  # rate limits and budgets of keys and teams
    cache: AnswerCache = field(init=False)  # the per-question answer cache (memory, or Redis)
    observer: Observer = field(init=False)  # metrics, the request log line, traces (gateway/observability)
    local_models: LocalModels = field(init=False)  # each local/ model's load state (gateway/health)
    readiness: Readiness = field(init=False)  # the checks behind /health/readiness
    reload: Reloader = field(init=False)  # SIGHUP and POST /config/reload (gateway/reload.py)
    budget_resets: BudgetResets = field(init=False)  # budget periods end in the database too (gateway/auth)

    def __post_init__(self) -> None:
        config = self.config
        self.registry = ModelRegistry.from_config(config)
        # Redis timeouts for a gateway under load: a busy event loop delays the answers it reads, and
        # taking that for an outage would count limits per process exactly when they matter most. A
        # Redis that is really away refuses connections at once and is failed over without waiting.
        self.shared = state_from_settings(redis_url_from_config(config.general_settings, config.router_settings),
                                          socket_timeout_s=REDIS_TIMEOUT_S, pool_timeout_s=REDIS_TIMEOUT_S)
        settings = router_settings_of(config)
        router = Router(self.registry, settings, Health(self.shared, disable_cooldowns=settings.disable_cooldowns),
                        self.upstream)
        self.pipeline = Pipeline(self.registry, self.upstream, config.request_limits, router=router,
                                 settings=config.limits or DEFAULT_LIMITS_SETTINGS)
        self.passthrough = PassthroughSettings.from_environ()
        self.spend = SpendLog(config.general_settings)
        self.pipeline.spend = self.spend
        self.pipeline.decision_log = decision_log_settings(config.general_settings, config.deployments)
        self.auth = build_authenticator(config.general_settings, self.spend, self.shared)
        self.pipeline.auth = self.auth
        failure = config.general_settings.get("limits_on_redis_failure")
        self.admission = Admission(self.shared, on_redis_failure_rate_limits=failure or "fail_open",
                                   on_redis_failure_budgets=failure or "fail_closed")
        self.pipeline.admission = self.admission
        self.cache = AnswerCache.build(cache_settings_of(config))
        self.pipeline.cache = self.cache
        self.observer = Observer(config.general_settings, lambda: self.pipeline)
        self.local_models = LocalModels()
        self.readiness = Readiness(self)
        self.reload = Reloader(self)
        self.budget_resets = BudgetResets(lambda: self.spend.db, config.general_settings)

    @property
    def db(self) -> Database | None:
        """The database once it is open (the admin API answers 503 until then)."""
        return self.spend.db

    async def start(self) -> None:
        await self.spend.start()
        await self.spend.wait_open(DB_START_WAIT_S)
        await self.observer.start()
        self.budget_resets.start()
        self._calibrators_task = asyncio.ensure_future(self._follow_calibrators())

    async def _follow_calibrators(self) -> None:
        """The active calibrators, read from the database now and every ``REFRESH_S`` seconds (a fit or a
        rollback in this process refreshes them at once; in another, within that); the calibration gauges
        every ``CALIBRATION_GAUGES_S``."""
        from gateway.calibration.apply import REFRESH_S
        from gateway.calibration.service import gauge_figures, load_active

        failing = False
        last_gauges = -math.inf
        while True:
            db = self.db
            if db is not None:
                try:
                    await load_active(db, self.pipeline.calibrators)
                    if time.monotonic() - last_gauges >= CALIBRATION_GAUGES_S:
                        last_gauges = time.monotonic()
                        self.observer.metrics.calibration(await gauge_figures(db, self.pipeline.decision_log.sites))
                    failing = False
                except Exception as exc:  # noqa: BLE001 - the database's state; keep the calibrators there are
                    if not failing:
                        log.warning("calibrators cannot be read (%s); the ones loaded stay in force",
                                    type(exc).__name__)
                    failing = True
            await asyncio.sleep(REFRESH_S)

    async def close(self) -> None:
        task = getattr(self, "_calibrators_task", None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.budget_resets.close()
        await self.pipeline.router.health.drain()
        await self.pipeline.close()
        await self.spend.close()
        await self.admission.close()
        await self.shared.close()
        await self.cache.close()
        await self.observer.close()

    @property
    def models_loaded(self) -> bool:
        return self.warmup is None or self.warmup.done()

    def find(self, request_id: str) -> RequestRecord | None:
        return self.pipeline.find(request_id)
