"""The ASGI application: ``create_app(config)``; ``create_app_from_env()`` is the factory for workers.

The shared upstream client is created when the app starts (lifespan) and closed when it stops.
"""

from __future__ import annotations

import importlib
import logging
import os
from contextlib import asynccontextmanager

from fastapi import FastAPI

from gateway import __version__
from gateway.config import GatewayConfig, load_config
from gateway.request_id import RequestIdMiddleware
from gateway.state import GatewayState
from gateway.upstream import Upstream

CONFIG_ENV = "DECISIONS_GATEWAY_CONFIG"  # config path for worker processes (``--workers N``)

log = logging.getLogger("gateway")

# Routers other parts add (pass-through routes); included when their module exists.
OPTIONAL_ROUTERS = ("gateway.passthrough",)


def create_app(config: GatewayConfig | None = None, *, upstream: Upstream | None = None) -> FastAPI:
    config = config if config is not None else load_config(None)
    state = GatewayState(config=config, upstream=upstream or Upstream())

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await state.upstream.start()
        try:
            yield
        finally:
            await state.upstream.close()

    app = FastAPI(title="decisions-gateway", version=__version__, lifespan=lifespan,
                  docs_url="/docs", redoc_url=None)
    app.state.gateway = state
    from gateway import info_routes, routes

    app.include_router(routes.router)
    app.include_router(info_routes.router)
    for name in OPTIONAL_ROUTERS:
        router = _optional_router(name)
        if router is not None:
            app.include_router(router)
    app.add_middleware(RequestIdMiddleware)
    return app


def create_app_from_env() -> FastAPI:
    """App factory for uvicorn workers: the config path comes from ``DECISIONS_GATEWAY_CONFIG``."""
    return create_app(load_config(os.environ.get(CONFIG_ENV) or None))


def _optional_router(module_name: str):
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise
    return getattr(module, "router", None)
