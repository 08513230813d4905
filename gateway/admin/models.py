"""``GET /model/info`` and ``/v1/model/info`` (one entry per deployment) and ``GET /model_group/info``
(one entry per model group), LiteLLM's names and shapes, for any valid key: each lists only what the
caller's key may call (its models within its team's), the master key everything.

``/model/info``: ``{"data": [{"model_name", "litellm_params", "model_info"}]}``, ``?litellm_model_id=``
for one deployment (400 naming it when unknown or not the caller's). ``litellm_params`` never holds a
key; the master key also sees ``api_base`` (without credentials or query) and each deployment's
health (the router's cooldown in the shared state), which can name an upstream's error.

``/model_group/info``: ``{"data": [{"model_group", "providers", "mode": "decisions", "tpm", "rpm",
"input_cost_per_token", "output_cost_per_token", ...}]}`` with LiteLLM's ``supports_*`` flags (false:
decision models take no OpenAI chat parameters), ``?model_group=`` for one; an alias
(``model_group_alias``, unless hidden) is listed as its own group, described as its target.
"""

from __future__ import annotations

import math
from typing import Annotated, Any
from urllib.parse import urlsplit, urlunsplit

from fastapi import APIRouter, Query, Request

from gateway.admin import schemas
from gateway.admin.common import AdminRoute
from gateway.auth.records import Identity
from gateway.config.registry import ModelRegistry
from gateway.router.health import key_of
from gateway.spend.cost import price_for
from providers.base import Deployment
from translators.errors import RequestInvalid

router = APIRouter(route_class=AdminRoute, tags=["models"])

MODE = "decisions"  # LiteLLM's mode for decision models (litellm.types.utils.is_decisions_model_mode)


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


def visible_groups(registry: ModelRegistry, identity: Identity) -> list[str]:
    """The configured groups the caller may call, by name or by an alias (the master key: all of them)."""
    if identity.is_master or identity.models is None:
        return list(registry.names)
    allowed = {registry.resolve(name) for name in identity.models}
    return [name for name in registry.names if name in allowed]


@router.get("/model/info", summary="Deployments of the model groups the caller may call")
@router.get("/v1/model/info", summary="Deployments of the model groups the caller may call (LiteLLM's v1 path)")
async def model_info(request: Request, litellm_model_id: Annotated[schemas.KeyRef | None, Query(
        description="One deployment, by its model_info.id")] = None) -> dict[str, Any]:
    gateway = request.app.state.gateway
    identity: Identity = request.state.admin_identity
    registry: ModelRegistry = gateway.registry
    health = gateway.pipeline.router.health
    data = []
    for name in visible_groups(registry, identity):
        for dep in registry.group(name):
            if litellm_model_id is not None and key_of(dep) != litellm_model_id:
                continue
            params: dict[str, Any] = {"model": f"{dep.provider}/{dep.model}", "rpm": dep.rpm, "tpm": dep.tpm,
                                      "timeout": dep.timeout}
            info: dict[str, Any] = {"id": key_of(dep), "litellm_provider": dep.provider, "mode": MODE,
                                    "db_model": False, "limits": registry.limits(dep).as_dict(), **prices(dep)}
            if identity.is_master:
                reason, seconds_left = await health.cooldown(dep)
                cooling = reason is not None
                params["api_base"] = shown_base(dep.api_base)
                info["health"] = {
                    "status": "cooling_down" if cooling else "healthy", "cooldown_reason": reason,
                    "cooldown_seconds_left": _seconds(seconds_left) if cooling else None}
            data.append({"model_name": name, "litellm_params": params, "model_info": info})
    if litellm_model_id is not None and not data:
        raise RequestInvalid("litellm_model_id names no deployment this key may call (see model_info.id in "
                             "/model/info).", ("litellm_model_id",), code="model_not_found")
    return {"data": data}


def group_info(registry: ModelRegistry, name: str) -> dict[str, Any]:
    """LiteLLM's ``ModelGroupInfoProxy`` for one group or alias."""
    target = registry.resolve(name)
    deps = registry.group(target)
    priced = [p for p in (price_for(dep) for dep in deps) if p is not None]
    first = (deps[0].model_info or {}) if deps else {}
    description = first.get("description")
    if target != name:
        description = f"Alias of {target}" + (f": {description}" if description else "")
    return {
        "model_group": name, "providers": sorted({dep.provider for dep in deps}),
        "max_input_tokens": None, "max_output_tokens": None,
        "input_cost_per_token": max((p.input for p in priced), default=None),
        "output_cost_per_token": max((p.output for p in priced), default=None),
        "mode": MODE, "tpm": _total(dep.tpm for dep in deps), "rpm": _total(dep.rpm for dep in deps),
        "supports_parallel_function_calling": False, "supports_vision": False, "supports_function_calling": False,
        "supports_web_search": False, "supports_reasoning": False, "supported_openai_params": [],
        "description": str(description) if description else None, "is_public_model_group": False,
        "supports_background_chat": False, "limits": registry.limits(deps[0]).as_dict() if deps else None,
    }


def _total(values) -> int | None:
    """The group's limit: the sum of its deployments', or None when one of them has none."""
    listed = list(values)
    return None if not listed or any(v is None for v in listed) else sum(listed)


@router.get("/model_group/info", summary="The model groups the caller may call: providers, prices, limits")
async def model_group_info(request: Request, model_group: Annotated[schemas.ModelName | None, Query(
        description="One model group (or alias)")] = None) -> dict[str, Any]:
    registry: ModelRegistry = request.app.state.gateway.registry
    identity: Identity = request.state.admin_identity
    names = registry.usable(None if identity.is_master else identity.models)
    return {"data": [group_info(registry, name) for name in names if model_group is None or name == model_group]}
