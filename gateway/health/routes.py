"""The health routes.

    GET /health/liveliness   (and /health/liveness)  open: the process answers HTTP
    GET /health/readiness    open; the details only for the master key (gateway/health/readiness.py)
    GET /health/providers    (and LiteLLM's /health) the master key when one is set; ?probe=true
                             also calls every deployment, billed (gateway/health/providers.py);
                             ?model=<group> (or a model_group_alias of it) narrows both to one model group
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from gateway.admin.common import error_response
from gateway.auth.errors import PermissionDenied
from gateway.auth.keys import key_from_headers
from gateway.health.providers import probe_all, providers_report
from gateway.state import GatewayState
from translators.errors import DecisionError, RequestInvalid

router = APIRouter(tags=["health"])

TRUE, FALSE = ("true", "1", "yes"), ("false", "0", "no", "")


@router.get("/health/liveliness")
@router.get("/health/liveness", include_in_schema=False)
async def liveliness() -> JSONResponse:
    return JSONResponse({"status": "healthy"})


@router.get("/health/readiness")
async def readiness(request: Request) -> JSONResponse:
    state: GatewayState = request.app.state.gateway
    auth = state.auth
    detailed = not auth.required or auth.is_master(key_from_headers(request.headers) or "")
    status, body = await state.readiness.report(detailed)
    return JSONResponse(body, status_code=status)


@router.get("/health/providers")
@router.get("/health", include_in_schema=False)
async def providers(request: Request) -> JSONResponse:
    state: GatewayState = request.app.state.gateway
    try:
        identity = await state.auth.resolve_headers(request.headers)
        if state.auth.required and not identity.is_master:
            raise PermissionDenied("Only the master key may read the deployments' health.", code="admin_only")
        probe = flag(request.query_params.get("probe"), "probe")
        group = request.query_params.get("model")
        if group is not None:
            group = state.registry.resolve(group)  # a model_group_alias reports its group
        if group is not None and group not in state.registry:
            raise RequestInvalid(f"model: unknown model group '{group[:100]}'; the configured models are "
                                 f"{state.registry.listing}.", ("model",), code="model_not_found")
    except DecisionError as err:
        return error_response(err)
    deps = list(state.registry.group(group) if group is not None else state.registry.deployments)
    report = await providers_report(state, deps)
    if probe:
        await probe_all(state, deps, request.scope["state"]["request_id"], identity, report)
    return JSONResponse(report)


def flag(value: str | None, name: str) -> bool:
    """A boolean query parameter: true/1/yes or false/0/no; anything else is a 400 naming it."""
    text = (value or "").strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise RequestInvalid(f"{name}: must be true or false, got '{text[:20]}'.", (name,), code="invalid_query")
