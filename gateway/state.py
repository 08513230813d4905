"""What the running gateway holds: its config, the model registry, the shared upstream client, the
pipeline over them, and the start-up warm-up of ``local/`` models."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from gateway.config import GatewayConfig
from gateway.passthrough import PassthroughSettings
from gateway.pipeline import Pipeline, RequestRecord
from gateway.registry import ModelRegistry
from gateway.upstream import Upstream


@dataclass
class GatewayState:
    config: GatewayConfig
    upstream: Upstream
    registry: ModelRegistry = field(init=False)
    pipeline: Pipeline = field(init=False)
    passthrough: PassthroughSettings = field(init=False)
    warmup: asyncio.Future[Any] | None = None  # loading the local/ models at start-up

    def __post_init__(self) -> None:
        self.registry = ModelRegistry.from_config(self.config)
        self.pipeline = Pipeline(self.registry, self.upstream, self.config.request_limits)
        self.passthrough = PassthroughSettings.from_environ()

    @property
    def models_loaded(self) -> bool:
        return self.warmup is None or self.warmup.done()

    def find(self, request_id: str) -> RequestRecord | None:
        return self.pipeline.find(request_id)
