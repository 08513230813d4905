"""``GET /health/providers``: each deployment's last outcome, latency and cooldown, from real traffic.

By default nothing is sent upstream and nothing is billed: the report reads what the router
recorded of the calls it made (gateway/router/outcomes.py, shared through Redis between
processes) and the cooldowns in the shared state. With ``?probe=true`` each deployment (or each of
``?model=<group>``) is also asked one real question, LiteLLM's health check (state "health
check", one ``noul`` question "Is the service reachable?"): the answer says ``"billable": true``,
each probe's cost, and each probe's spend row goes to the spend log with ``call_type``
``health_probe`` and a request id of its own. Probes do not change the router's health state.

No key and no credential is ever in the answer: ``api_base`` is shown without user, password,
query or fragment, and error messages have the deployment's key masked. A deployment left without its
provider key (``general_settings.allow_missing_keys``) is ``"state": "unconfigured"`` and its probe the
503 a request would get, with no call.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gateway.admin.models import shown_base
from gateway.config.credentials import not_configured
from gateway.context import RequestContext
from gateway.router import key_of
from gateway.router.outcomes import Outcome, masked
from gateway.spend.cost import response_cost, shown_cost
from gateway.upstream import call as calls
from providers.base import Deployment
from translators import systemone as systemone_wire
from translators.errors import DecisionError

if TYPE_CHECKING:
    from gateway.state import GatewayState

PROBE_CALL_TYPE = "health_probe"
PROBE_TIMEOUT_S = 30.0
PROBE_BODY = {"state": "health check",
              "questions": {"reachable": {"type": "noul", "instructions": "Is the service reachable?"}}}


def outcome_body(outcome: Outcome | None, now: float) -> dict[str, Any] | None:
    if outcome is None:
        return None
    body: dict[str, Any] = {
        "outcome": "success" if outcome.ok else "error", "status": outcome.status, "latency_ms": outcome.latency_ms,
        "at": datetime.fromtimestamp(outcome.at, UTC).isoformat(), "age_s": round(max(0.0, now - outcome.at), 3)}
    if not outcome.ok:
        body["error"], body["message"] = outcome.error, outcome.message
    return body


def deployment_state(outcome: Outcome | None, cooling: bool) -> str:
    if cooling:
        return "cooling_down"
    if outcome is None:
        return "unknown"
    return "healthy" if outcome.ok else "unhealthy"


async def providers_report(state: GatewayState, deps: list[Deployment]) -> dict[str, Any]:
    health = state.pipeline.router.health
    outcomes, cooldowns = await asyncio.gather(health.outcomes.read([key_of(dep) for dep in deps]),
                                               health.cooldowns(deps))
    now = time.time()
    entries = []
    for dep, outcome, (reason, seconds_left) in zip(deps, outcomes, cooldowns):
        cooling = reason is not None
        cooldown: dict[str, Any] = {"cooling": cooling}
        if cooling:
            cooldown["reason"] = reason
            cooldown["seconds_left"] = round(seconds_left, 1) if seconds_left is not None else None
        entries.append({
            "model_group": dep.model_name, "id": key_of(dep), "provider": dep.provider, "model": dep.model,
            "api_base": shown_base(dep.api_base),
            "state": "unconfigured" if dep.id in state.registry.unconfigured else deployment_state(outcome, cooling),
            "last": outcome_body(outcome, now), "cooldown": cooldown,
        })
    return {
        "object": "health.providers", "billable": False, "source": "traffic",
        "healthy_count": sum(entry["state"] == "healthy" for entry in entries),
        "unhealthy_count": sum(entry["state"] in ("unhealthy", "cooling_down") for entry in entries),
        "unknown_count": sum(entry["state"] == "unknown" for entry in entries),
        "deployments": entries,
    }


async def probe(state: GatewayState, dep: Deployment, request_id: str, identity: Any) -> dict[str, Any]:
    """One real, billed call to ``dep``, written to the spend log as a ``health_probe``."""
    req = systemone_wire.parse_request({"model": dep.model_name, **PROBE_BODY}, None)
    ctx = RequestContext(request_id=request_id, route=PROBE_CALL_TYPE, wire=systemone_wire, req=req,
                         model_group=dep.model_name, identity=identity, deployment=dep)
    timed = replace(dep, timeout=min(dep.timeout, PROBE_TIMEOUT_S))
    try:
        problem = state.registry.unconfigured.get(dep.id)
        if problem is not None:  # no key (general_settings.allow_missing_keys): the 503 a request gets, no call
            raise not_configured(dep, problem)
        calls.fit(dep, req)
        async with asyncio.timeout(PROBE_TIMEOUT_S):
            ctx.result = await calls.call(state.upstream, req, timed)
        ctx.cost, ctx.status = response_cost(ctx.result.usage, dep, ctx.result.model), 200
    except DecisionError as err:
        ctx.error, ctx.status = err, err.status
    except TimeoutError:
        ctx.error = DecisionError(504, f"no answer within {PROBE_TIMEOUT_S:g} s", type="timeout", code="timeout")
        ctx.status = 504
    latency_ms = round((time.perf_counter() - ctx.started) * 1000.0, 3)
    state.spend.write(ctx)
    body: dict[str, Any] = {"request_id": request_id, "outcome": "success" if ctx.error is None else "error",
                            "status": ctx.status, "latency_ms": latency_ms, "billable": True,
                            "cost": shown_cost(ctx.cost) if ctx.cost is not None else None}
    if ctx.error is not None:
        body["error"] = ctx.error.code or ctx.error.type
        body["message"] = masked(ctx.error.message, dep.api_key)
    return body


async def probe_all(state: GatewayState, deps: list[Deployment], request_id: str, identity: Any,
                    report: dict[str, Any]) -> None:
    """Probe ``deps`` at once and add each probe to its entry of ``report``."""
    probes = await asyncio.gather(*(probe(state, dep, f"{request_id}-probe-{n}", identity)
                                    for n, dep in enumerate(deps)))
    for entry, result in zip(report["deployments"], probes):
        entry["probe"] = result
    report["billable"] = True
    report["source"] = "traffic and probe"
    costs = [p["cost"] for p in probes if p["outcome"] == "success"]  # a failed call is not billed
    report["probe_cost"] = None if any(cost is None for cost in costs) else shown_cost(sum(costs))
