"""A pass-through's key checks: the model it names, and the key's and team's limits and budget.

The pass-throughs relay the caller's body with the gateway's own upstream key, so they keep the
promises a key makes on ``/v1/systemone``, through the same objects (gateway/auth, the pipeline's
``Admission``):

    authenticate  (the pipeline's step) the key, and its ``allowed_passthrough_routes`` grant: 403
    authorize     the model the body names, as ``<provider>/<model>`` (``typesafe/jev-preview``), must be
                  among the key's and its team's models, by that name or by a configured model group
                  that a deployment of the same provider and model serves: 403 ``model_not_allowed``
                  (also for a body that names none, to a server whose default model is its own)
    admit         rpm, tpm, parallel requests and budget (429 / 400 / 503, as on the decision routes);
                  the tokens estimated from the body's size, the worst case priced at the named model
    settle        a 2xx answer settles the reservation to the priced cost (the pipeline's ``settle``);
                  any other relayed status spent nothing, and gives everything back
"""

from __future__ import annotations

import json

from gateway.auth.errors import PermissionDenied, model_not_allowed
from gateway.context import RequestContext
from gateway.pipeline import Pipeline
from gateway.pipeline import settle as settle_admission
from gateway.spend.cost import worst_case_cost
from providers.base import Deployment
from providers.capabilities import CHARS_PER_TOKEN
from translators.errors import MODEL

MAX_MODEL_CHARS = 200
TYPESAFE_DEFAULT_MODEL = "jev-latest"  # what TypeSafe answers a request that names no model with


def named_model(raw: bytes, default: str = "") -> str:
    """The model a JSON body asks for (``default`` when it names none or is not JSON)."""
    try:
        model = json.loads(raw).get("model")
    except (ValueError, UnicodeDecodeError, AttributeError, RecursionError):  # nested past the parser's stack
        model = None
    return model[:MAX_MODEL_CHARS] if isinstance(model, str) and model else default


def model_of(ctx: RequestContext) -> str | None:
    """The model a pass-through request names (None for one that names none: a GET, a laya body without
    ``model``); TypeSafe's default model for a TypeSafe POST without one."""
    if ctx.extra["method"] != "POST":
        return None
    model = named_model(ctx.raw, TYPESAFE_DEFAULT_MODEL if ctx.extra["target"].provider == "typesafe" else "")
    return model or None


def deployment_of(ctx: RequestContext, model: str) -> Deployment:
    provider = ctx.extra["target"].provider
    return Deployment(model_name=f"{provider}/{model}", provider=provider, model=model)


async def authorize(pipeline: Pipeline, ctx: RequestContext) -> None:
    """403 when the key or its team may not use the model the body names."""
    identity = ctx.identity
    model = model_of(ctx)
    if model is not None:
        ctx.model_group = deployment_of(ctx, model).model_name  # the spend row's model group
    if identity is None or identity.models is None or ctx.extra["method"] != "POST":
        return
    provider, allowed = ctx.extra["target"].provider, identity.models
    if model is None:  # the server would answer with a model of its own choosing
        raise PermissionDenied(f"This key may use only its models ({', '.join(sorted(allowed)[:20]) or 'none'}); "
                               f"name one of them in the body's model.", code="model_not_allowed", loc=MODEL)
    qualified = f"{provider}/{model}"
    if _grants(pipeline.registry, allowed, provider, model):
        return
    team = identity.team_models
    if team is not None and not _grants(pipeline.registry, team, provider, model):  # the team leaves it out
        raise model_not_allowed(qualified, sorted(team), team=identity.team_alias or identity.team_id or "")
    raise model_not_allowed(qualified, sorted(allowed))


def _grants(registry, names: frozenset[str], provider: str, model: str) -> bool:
    """Whether ``names`` (a key's or team's models: ``provider/model``, groups, aliases of groups) grant
    ``provider/model``: named as such, or served by a deployment of a group they name."""
    if f"{provider}/{model}" in names:
        return True
    return any(dep.provider == provider and dep.model == model
               for name in names for dep in registry.group(registry.resolve(name)))


async def admit(pipeline: Pipeline, ctx: RequestContext) -> None:
    """The key's and its team's rate limits and budget, reserved for this request."""
    identity = ctx.identity
    if pipeline.admission is None or identity is None or not identity.limited:
        return
    tokens = max(1, len(ctx.raw) // CHARS_PER_TOKEN) if ctx.raw else 0
    model = model_of(ctx)
    # Every byte one token at the worst (the body's JSON is more than the upstream counts), priced at
    # the named model; unpriced (or no model): None, and admission's rule for an unknown cost applies.
    worst = worst_case_cost(len(ctx.raw), [deployment_of(ctx, model)]) if model is not None else None
    ctx.estimated_tokens = tokens
    ctx.ticket = await pipeline.admission.admit(identity, estimated_tokens=tokens, worst_cost_usd=worst)
    ctx.headers.update(ctx.ticket.headers)


async def settle(pipeline: Pipeline, ctx: RequestContext) -> None:
    """A 2xx answer: the reservation settled to the cost (unknown: the worst case kept); otherwise the
    upstream refused or failed and nothing was spent: every reservation given back."""
    if ctx.ticket is None or pipeline.admission is None:
        return
    if 200 <= ctx.status < 300:
        await settle_admission(pipeline, ctx)
        return
    ticket, ctx.ticket = ctx.ticket, None
    await pipeline.admission.release(ticket)
