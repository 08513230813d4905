"""The ASGI application: ``create_app(config)``; ``create_app_from_env()`` is the factory for workers.

The shared upstream client is created when the app starts (lifespan) and closed when it stops.
``local/`` models load in the background from the start; readiness answers 503 until they have.
SIGHUP reloads the config file (gateway/reload.py).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.responses import JSONResponse

from gateway import __version__, reload
from gateway.admin import admin_router
from gateway.config.limits import DEFAULT_LIMITS_SETTINGS
from gateway.config.loader import GatewayConfig, load_config
from gateway.edge import docs, info_routes, routes, slashes, ui, validate
from gateway.edge.cross_site import CrossSiteGuard, CrossSitePolicy
from gateway.edge.request_id import RequestIdMiddleware
from gateway.health.routes import router as health_router
from gateway.observability import logs, metrics_route
from gateway.passthrough import passthrough
from gateway.state import GatewayState
from gateway.upstream.upstream import Upstream
from translators import openai as openai_wire
from translators.errors import DecisionError

CONFIG_ENV = "DECISIONS_GATEWAY_CONFIG"  # config path for worker processes (``--workers N``)

log = logging.getLogger("gateway")

# A request leaves no reference cycles (tests/gateway/test_garbage.py), so what it allocates is freed as
# it ends; but at Python's default of 700 net allocations the collector still ran a young collection
# every few requests under load, walking the objects of the requests in flight each time. At 10,000 it
# runs a few times a minute; cyclic garbage that some rare path makes waits at most that long.
YOUNG_COLLECTION_THRESHOLD = 10_000


def create_app(config: GatewayConfig | None = None, *, upstream: Upstream | None = None) -> FastAPI:
    config = config if config is not None else load_config(None)
    limits = config.limits or DEFAULT_LIMITS_SETTINGS
    state = GatewayState(config=config, upstream=upstream or Upstream(
        max_response_bytes=limits.max_upstream_response_bytes))

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await state.upstream.start()
        await state.start()
        state.warmup = asyncio.ensure_future(state.local_models.warm(state.registry.local_model_refs()))
        remove_sighup = state.reload.install_sighup()  # SIGHUP reloads the config (gateway/reload.py)
        gc.collect()
        gc.freeze()  # what start-up made lives as long as the process: out of every later collection
        gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])
        try:
            yield
        finally:
            remove_sighup()
            state.warmup.cancel()
            await state.close()
            await state.upstream.close()

    app = GatewayApp(title="decisions-gateway", version=__version__, lifespan=lifespan,
                     docs_url=None, redoc_url=None)  # /docs: gateway/edge/docs.py
    app.state.gateway = state
    app.router.routes.extend(routes.ROUTES)
    app.router.routes.extend(validate.ROUTES)  # the server's checks without a call (the UI's playground)
    app.include_router(info_routes.router)
    app.router.routes.extend(metrics_route.ROUTES)  # GET /metrics (gateway/observability)
    app.include_router(health_router)
    app.router.routes.extend(passthrough.ROUTES)
    app.include_router(admin_router())
    app.include_router(reload.router)
    app.router.routes.extend(ui.ROUTES)  # the admin UI's static files at /ui
    app.router.routes.extend(docs.ROUTES)  # Swagger UI from the package, under a CSP
    slashes.install(app.router)  # the trailing-slash redirect, relative (never to the Host sent)
    app.add_middleware(RequestIdMiddleware)
    spending = tuple(route.path.split("{")[0] for route in passthrough.ROUTES)  # every method may spend
    app.guard(CrossSitePolicy.from_settings(config.general_settings, spending))
    return app


class GatewayApp(FastAPI):
    """FastAPI for every route, except that a ``POST`` to a decision route goes straight to the
    pipeline and its answer straight to the server: the decision routes read their own bodies and
    render every error themselves, so FastAPI's middleware stack (error page, exception handlers,
    exit stack, router matching) and the request-id middleware's wrapping of ``send`` are only
    per-request work on the hot path (``routes.DecisionRoute`` names the request itself)."""

    def setup(self) -> None:
        super().setup()
        self._fast_paths = routes.APPS
        self._not_allowed_app = RequestIdMiddleware(not_allowed_in_openai_envelope)
        self._entry = self._route

    def guard(self, policy: CrossSitePolicy) -> None:
        """Browser requests from other origins are refused before any route runs (gateway/edge/cross_site.py)."""
        self._entry = CrossSiteGuard(self._route, policy)

    async def __call__(self, scope, receive, send) -> None:
        await self._entry(scope, receive, send)

    async def _route(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in self._fast_paths:
            scope["app"] = self
            await self._fast_paths[scope["path"]](scope, receive, send)
        elif scope["type"] == "http" and scope["method"] != "POST" and scope["path"] in OPENAI_POST_PATHS:
            await self._not_allowed_app(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)


# The OpenAI-wire routes take POST only; another method gets a 405 in OpenAI's error envelope (FastAPI's
# default, {"detail": ...}, is System One's shape, which the System One routes keep).
OPENAI_POST_PATHS = frozenset({"/v1/decisions", "/decisions", "/v1/decisions/validate"})


async def not_allowed_in_openai_envelope(scope, receive, send) -> None:
    err = DecisionError(status=405, message=f"{scope['method']} is not allowed on {scope['path']}; send a POST.",
                        type="invalid_request_error", code="method_not_allowed")
    status, body = openai_wire.render_error(err)
    await JSONResponse(body, status_code=status, headers={"Allow": "POST"})(scope, receive, send)


def create_app_from_env() -> FastAPI:
    """App factory for uvicorn workers: the config path comes from ``DECISIONS_GATEWAY_CONFIG``, the
    log format and level the CLI chose from the environment."""
    logs.configure_from_env()
    reload.ignore_sighup_until_started()  # the lifespan installs the reload handler
    return create_app(load_config(os.environ.get(CONFIG_ENV) or None))
