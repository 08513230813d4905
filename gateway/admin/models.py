"""``GET /model/info`` (LiteLLM's name): every deployment of every model group, with its limits, its
prices and its health (the router's cooldown in the shared state). The master key only.

LiteLLM's shape: ``{"data": [{"model_name", "litellm_params", "model_info"}]}``. ``litellm_params``
never holds a key, and its ``api_base`` is shown without credentials or a query string.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from fastapi import APIRouter, Request

from gateway.admin.common import AdminRoute
from gateway.auth.errors import PermissionDenied
from gateway.router.health import key_of
from gateway.spend.cost import price_for
from providers.base import Deployment

router = APIRouter(route_class=AdminRoute, tags=["models"])


def master_only(request: Request) -> None:
    if not request.state.admin_identity.is_master:
        raise PermissionDenied("Only the master key may use this admin route.", code="admin_only")


def shown_base(api_base: str | None) -> str | None:
    """The upstream's address without user, password, query or fragment."""
    if not api_base:
        return None
    parts = urlsplit(api_base)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def prices(dep: Deployment) -> dict[str, Any]:
    """USD per token (and per request), or ``priced: false`` when the cost is unknown."""
    price = price_for(dep)
    if price is None:
        return {"priced": False}
    return {"priced": True, "input_cost_per_token": price.input, "output_cost_per_token": price.output,
            "cache_read_input_token_cost": price.cache_read, "cache_creation_input_token_cost": price.cache_write,
            "cost_per_request": price.per_request}


def _seconds(value: float | None) -> float | None:
    return round(value, 1) if value is not None and math.isfinite(value) else None


@router.get("/model/info", summary="Deployments of each model group: limits, prices, health")
async def model_info(request: Request) -> dict[str, Any]:
    master_only(request)
    gateway = request.app.state.gateway
    registry = gateway.registry
    health = gateway.pipeline.router.health
    data = []
    for name in registry.names:
        for dep in registry.group(name):
            reason, seconds_left = await health.cooldown(dep)
            cooling = reason is not None
            data.append({
                "model_name": name,
                "litellm_params": {"model": f"{dep.provider}/{dep.model}", "api_base": shown_base(dep.api_base),
                                   "rpm": dep.rpm, "tpm": dep.tpm, "timeout": dep.timeout},
                "model_info": {
                    "id": key_of(dep), "litellm_provider": dep.provider, "mode": "decisions",
                    "limits": registry.limits(dep).as_dict(), **prices(dep),
                    "health": {"status": "cooling_down" if cooling else "healthy", "cooldown_reason": reason,
                               "cooldown_seconds_left": _seconds(seconds_left) if cooling else None},
                },
            })
    return {"data": data}
