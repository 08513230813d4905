"""The ASGI application: ``create_app(config)``; ``create_app_from_env()`` is the factory for workers.

The shared upstream client is created when the app starts (lifespan) and closed when it stops.
``local/`` models load in the background from the start; readiness answers 503 until they have.
"""

from __future__ import annotations

import asyncio
import logging
import os
from contextlib import asynccontextmanager

from fastapi import FastAPI

from gateway import __version__, info_routes, passthrough, routes
from gateway.config import GatewayConfig, load_config
from gateway.request_id import RequestIdMiddleware
from gateway.state import GatewayState
from gateway.upstream import Upstream, warm_local_models

CONFIG_ENV = "DECISIONS_GATEWAY_CONFIG"  # config path for worker processes (``--workers N``)

log = logging.getLogger("gateway")


def create_app(config: GatewayConfig | None = None, *, upstream: Upstream | None = None) -> FastAPI:
    config = config if config is not None else load_config(None)
    state = GatewayState(config=config, upstream=upstream or Upstream())

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await state.upstream.start()
        local_refs = [dep.model for dep in config.deployments if dep.provider == "local"]
        state.warmup = asyncio.ensure_future(warm_local_models(local_refs))
        try:
            yield
        finally:
            state.warmup.cancel()
            await state.upstream.close()

    app = FastAPI(title="decisions-gateway", version=__version__, lifespan=lifespan,
                  docs_url="/docs", redoc_url=None)
    app.state.gateway = state
    app.include_router(routes.router)
    app.include_router(info_routes.router)
    app.include_router(passthrough.router)
    app.add_middleware(RequestIdMiddleware)
    return app


def create_app_from_env() -> FastAPI:
    """App factory for uvicorn workers: the config path comes from ``DECISIONS_GATEWAY_CONFIG``."""
    return create_app(load_config(os.environ.get(CONFIG_ENV) or None))
