"""What the running gateway holds: its config, the shared upstream client and a short request log."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from gateway.config import GatewayConfig
from gateway.upstream import Upstream
from providers.base import Deployment
from translators.ir import DecisionRequest, DecisionResult

REQUEST_LOG_SIZE = 256


@dataclass(frozen=True)
class RequestRecord:
    """How one decision request arrived (for logs and tests; no body, no headers with secrets)."""

    request_id: str
    path: str
    content_type: str | None
    content_encoding: str | None
    multipart: bool
    asset_parts: tuple[str, ...]
    model: str | None
    status: int


@dataclass
class GatewayState:
    config: GatewayConfig
    upstream: Upstream
    request_log: deque = field(default_factory=lambda: deque(maxlen=REQUEST_LOG_SIZE))
    rng: random.Random = field(default_factory=random.Random)
    dispatcher: Any = None  # gateway.dispatch.Dispatcher over the config's deployments
    warmup: Any = None  # asyncio task loading the local/ models at start-up

    @property
    def models_loaded(self) -> bool:
        return self.warmup is None or self.warmup.done()

    def __post_init__(self) -> None:
        if self.dispatcher is None:
            from gateway.dispatch import Dispatcher

            self.dispatcher = Dispatcher(self.config.deployments, self.upstream)

    async def decide(self, req: DecisionRequest, model_name: str) -> tuple[DecisionResult, Deployment]:
        """One deployment of the group, at random (the router is a later issue), then the call."""
        group = self.dispatcher.group(model_name)
        if not group:
            return tuple(await self.dispatcher.decide(req, model_name))  # its own unknown-model error
        dep = self.rng.choice(group)
        return await self.dispatcher.decide_on(req, dep), dep

    def record(self, entry: RequestRecord) -> None:
        self.request_log.append(entry)

    def find(self, request_id: str) -> RequestRecord | None:
        for entry in reversed(self.request_log):
            if entry.request_id == request_id:
                return entry
        return None
