"""What the running gateway holds: its config, the model registry, the shared upstream client, the
pipeline over them, and the start-up warm-up of ``local/`` models."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from gateway.config import GatewayConfig
from gateway.limits_settings import DEFAULT_LIMITS_SETTINGS
from gateway.passthrough import PassthroughSettings
from gateway.pipeline import Pipeline, RequestRecord
from gateway.registry import ModelRegistry
from gateway.router import Health, Router
from gateway.router.settings import router_settings_of
from gateway.shared_state import SharedState
from gateway.shared_state.factory import redis_url_from_config, state_from_settings
from gateway.upstream import Upstream


@dataclass
class GatewayState:
    config: GatewayConfig
    upstream: Upstream
    registry: ModelRegistry = field(init=False)
    shared: SharedState = field(init=False)  # router state (and later limits, cache): memory or Redis
    pipeline: Pipeline = field(init=False)
    passthrough: PassthroughSettings = field(init=False)
    warmup: asyncio.Future[Any] | None = None  # loading the local/ models at start-up

    def __post_init__(self) -> None:
        config = self.config
        self.registry = ModelRegistry.from_config(config)
        self.shared = state_from_settings(redis_url_from_config(config.general_settings, config.router_settings))
        settings = router_settings_of(config)
        router = Router(self.registry, settings, Health(self.shared, disable_cooldowns=settings.disable_cooldowns),
                        self.upstream)
        self.pipeline = Pipeline(self.registry, self.upstream, config.request_limits, router=router,
                                 settings=config.limits or DEFAULT_LIMITS_SETTINGS)
        self.passthrough = PassthroughSettings.from_environ()

    async def close(self) -> None:
        await self.pipeline.router.health.drain()
        await self.pipeline.close()
        await self.shared.close()

    @property
    def models_loaded(self) -> bool:
        return self.warmup is None or self.warmup.done()

    def find(self, request_id: str) -> RequestRecord | None:
        return self.pipeline.find(request_id)
