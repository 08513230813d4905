"""``GET /v1/models`` (the health routes are in gateway/health/).

The models body satisfies both clients at once: OpenAI's list (``object: "list"``, ``data`` of
``{id, object: "model", owned_by}``) and System One's (``models`` of ``{name, description,
release_date}``); Nimble requires both lists. Each model also reports its provider's limits. An alias
(``router_settings.model_group_alias``) is listed unless hidden, as its target group.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from gateway.config.registry import ModelRegistry
from gateway.state import GatewayState
from providers.base import Deployment
from translators import openai as openai_wire
from translators.errors import DecisionError

router = APIRouter()

UNKNOWN_RELEASE_DATE = "1970-01-01"


@router.get("/v1/models")
@router.get("/models", include_in_schema=False)
async def list_models(request: Request) -> JSONResponse:
    state: GatewayState = request.app.state.gateway
    try:
        identity = await state.auth.resolve_headers(request.headers)
    except DecisionError as err:
        status, body = openai_wire.render_error(err)
        return JSONResponse(body, status_code=status, headers=err.headers)
    return JSONResponse(models_body(state.registry, identity.models))


def models_body(registry: ModelRegistry, allowed: frozenset[str] | None = None) -> dict:
    """Both lists; with ``allowed`` (a key's models) only the names that key may call. The groups come
    first, then the ``model_group_alias`` names not hidden, each described as the group it answers as."""
    data, models = [], []
    for name in registry.usable(allowed):
        target = registry.resolve(name)
        group = registry.group(target)
        first = group[0]
        limits = registry.limits(first).as_dict()
        info = first.model_info or {}
        data.append({
            "id": name, "object": "model", "created": _created(info.get("created")), "owned_by": first.provider,
            "deployments": [f"{dep.provider}/{dep.model}" for dep in group], "limits": limits,
        })
        models.append({
            "name": name,
            "description": str(info.get("description") or describe(group)) if target == name else
            f"Alias of {target}: {info.get('description') or describe(group)}",
            "release_date": str(info.get("release_date") or UNKNOWN_RELEASE_DATE),
            "limits": limits,
        })
    return {"object": "list", "data": data, "models": models}


def _created(value) -> int:
    """``model_info.created`` as Unix seconds; anything else (absent, a date string) is 0, never a 500."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def describe(group: Sequence[Deployment]) -> str:
    targets = ", ".join(f"{dep.provider}/{dep.model}" for dep in group)
    return f"Decision model served by {targets}."
