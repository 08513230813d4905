"""``GET /v1/models`` and the health routes.

The models body satisfies both clients at once: OpenAI's list (``object: "list"``, ``data`` of
``{id, object: "model", owned_by}``) and System One's (``models`` of ``{name, description,
release_date}``); Nimble requires both lists. Each model also reports its provider's limits.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from gateway.config import GatewayConfig
from gateway.state import GatewayState
from providers.base import Deployment

router = APIRouter()

UNKNOWN_RELEASE_DATE = "1970-01-01"


@router.get("/v1/models")
@router.get("/models", include_in_schema=False)
async def list_models(request: Request) -> JSONResponse:
    state: GatewayState = request.app.state.gateway
    return JSONResponse(models_body(state.config))


@router.get("/health/liveliness")
@router.get("/health/liveness", include_in_schema=False)
async def liveliness() -> JSONResponse:
    return JSONResponse({"status": "healthy"})


@router.get("/health/readiness")
async def readiness(request: Request) -> JSONResponse:
    state: GatewayState = request.app.state.gateway
    client_ready, loaded = state.upstream.started, state.models_loaded
    ready = client_ready and loaded
    body = {"status": "healthy" if ready else "starting", "models": len(state.config.model_names),
            "deployments": len(state.config.deployments), "upstream_client": "ready" if client_ready else "closed",
            "local_models": "loaded" if loaded else "loading"}
    failed = state.warmup.result() if loaded and state.warmup is not None and not state.warmup.cancelled() else {}
    if failed:
        body["local_model_errors"] = failed
    return JSONResponse(body, status_code=200 if ready else 503)


def models_body(config: GatewayConfig) -> dict:
    data, models = [], []
    for name in config.model_names:
        group = config.group(name)
        first = group[0]
        limits = provider_limits(first)
        info = first.model_info or {}
        data.append({
            "id": name, "object": "model", "created": _created(info.get("created")), "owned_by": first.provider,
            "deployments": [f"{dep.provider}/{dep.model}" for dep in group], "limits": limits,
        })
        models.append({
            "name": name,
            "description": str(info.get("description") or describe(group)),
            "release_date": str(info.get("release_date") or UNKNOWN_RELEASE_DATE),
            "limits": limits,
        })
    return {"object": "list", "data": data, "models": models}


def _created(value) -> int:
    """``model_info.created`` as Unix seconds; anything else (absent, a date string) is 0, never a 500."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def describe(group: list[Deployment]) -> str:
    targets = ", ".join(f"{dep.provider}/{dep.model}" for dep in group)
    return f"Decision model served by {targets}."


def provider_limits(dep: Deployment) -> dict:
    """The provider's limits with the deployment's overrides (``model_info``, ``limits``)."""
    from providers.limits import limits_for
    from providers.registry import get_provider

    return limits_for(get_provider(dep.provider).limits, dep).as_dict()
