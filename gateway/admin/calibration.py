"""Outcomes and calibration over HTTP (on with the gateway: open when it is, a key when it has a master key).

    POST /v1/outcomes              {"outcomes": [{request_id, question, outcome, weight?, observed_at?}, ...]}
    GET  /calibration/report       ?model_group&model_id&model_version&site&team_id&start&end
    POST /calibration/fit          {model_group, site?}                        (proxy admins)
    POST /calibration/rollback     {model_group, site?}                        (proxy admins)
    GET  /calibration/calibrators  ?model_group&site
    POST /calibration/thresholds   {model_group, site, option?, metric, target, probabilities?}

Who reaches which decisions (``Scope``): a proxy admin or viewer (and anyone, on an open gateway)
every one; a key of a team its team's; a key of no team its own. A batch of outcomes is taken whole
or refused whole, at its first bad item, with the item's index in the message: 404 for a request
that is not logged, 403 for another team's, 422 for an unknown question or an outcome that is not
one of its options, 413 past ``MAX_OUTCOMES`` items or ``MAX_BODY_BYTES``.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import AfterValidator, Field, StringConstraints

from gateway.admin import schemas
from gateway.admin.common import AdminRoute, AnyCaller, Caller
from gateway.auth import roles
from gateway.calibration import service
from gateway.db import queries
from gateway.db.calibration_report import Filters
from gateway.db.outcomes import OutcomeIn, OutcomeRefused, Scope, record_outcomes
from gateway.utc import utc
from translators.errors import DecisionError, RequestInvalid, Where

MAX_OUTCOMES = 1000
MAX_BODY_BYTES = 1024 * 1024


class CalibrationRoute(AdminRoute):
    requires_master_key = False
    body_limit = MAX_BODY_BYTES


router = APIRouter(route_class=CalibrationRoute, tags=["calibration"])

Site = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]
Moment = Annotated[dt.datetime, AfterValidator(queries.in_range)]  # 400 naming the field out of range (UTC year 10000)
QuestionRef = Annotated[str, StringConstraints(min_length=1, max_length=255)] | Annotated[int, Field(ge=0, le=10_000)]
OutcomeValue = bool | Annotated[str, StringConstraints(min_length=1, max_length=255)] | Annotated[int, Field(ge=0)]


class OutcomeItem(schemas.Strict):
    request_id: Annotated[str, StringConstraints(min_length=1, max_length=255)]
    question: QuestionRef = Field(description="The question's id (System One key), its OpenAI name, or its index")
    outcome: OutcomeValue = Field(description="The option's value, true / false for a yes/no question, or the "
                                              "level's index for a score")
    weight: Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False)] = 1.0
    observed_at: Moment | None = None


class OutcomesRequest(schemas.Strict):
    outcomes: Annotated[list[OutcomeItem], Field(min_length=1)]


class FitRequest(schemas.Strict):
    model_group: schemas.ModelName
    site: Site | None = Field(None, description="A site of the group; none: one calibrator for the whole group")


class ThresholdRequest(schemas.Strict):
    model_group: schemas.ModelName
    site: Site
    option: bool | Annotated[str, StringConstraints(min_length=1, max_length=255)] | None = Field(
        None, description="For a choice site: the option whose probability is thresholded")
    metric: Literal["precision", "recall", "accuracy"] = "precision"
    target: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
    probabilities: Literal["served", "raw"] = "served"


def scope_of(request: Request, caller: Caller) -> Scope:
    identity = caller.identity
    if getattr(request.state, "open_gateway", False) or roles.reads_all(identity):
        return Scope(everything=True)
    if identity.team_id is not None:
        return Scope(team_id=identity.team_id)
    return Scope(api_key=identity.key_hash or "")


def fitter(request: Request, caller: AnyCaller) -> Caller:
    """A caller that may fit and roll back calibrators: a proxy admin, or anyone on an open gateway (checked
    before the body is validated: a caller that may not learns nothing of it)."""
    if not (getattr(request.state, "open_gateway", False) or roles.writes_all(caller.identity)):
        raise DecisionError(status=403, message="Only a proxy admin (the master key, or a proxy_admin user's key) "
                            "fits or rolls back calibrators: they change the answers of every caller of the group.",
                            type="permission_error", code="admin_only")
    return caller


Fitter = Annotated[Caller, Depends(fitter)]


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body, option=orjson.OPT_UTC_Z), status_code=status, media_type="application/json")


def _refused(exc: service.Refused) -> DecisionError:
    return RequestInvalid(exc.message, (exc.field,) if exc.field else None, status=exc.status, code=exc.code)


@router.post("/v1/outcomes", summary="Post outcomes of answered decisions (a batch, idempotent per question)")
async def post_outcomes(request: Request, caller: AnyCaller, body: OutcomesRequest) -> Response:
    if len(body.outcomes) > MAX_OUTCOMES:
        raise RequestInvalid(f"outcomes: a batch holds at most {MAX_OUTCOMES} items, this one {len(body.outcomes)}; "
                             "split it.", ("outcomes",), status=413, code="batch_too_large")
    items = [OutcomeIn(i.request_id, i.question, i.outcome, i.weight,
                       utc(i.observed_at) if i.observed_at is not None else None) for i in body.outcomes]
    try:
        recorded = await record_outcomes(caller.admin.db, items, scope_of(request, caller))
    except OutcomeRefused as exc:
        raise DecisionError(status=exc.status, message=exc.message, loc=Where(f"outcomes[{exc.index}].{exc.field}"),
                            type="permission_error" if exc.status == 403 else "invalid_request_error",
                            code=exc.code) from None
    return _json({"recorded": recorded.written, "replaced": recorded.replaced})


@router.get("/calibration/report", summary="Calibration per site and per model: accuracy, Brier, log loss, ECE")
async def calibration_report(request: Request, caller: AnyCaller,
                             model_group: Annotated[schemas.ModelName | None, Query()] = None,
                             model_id: Annotated[schemas.Text | None, Query(description="A deployment's id")] = None,
                             model_version: Annotated[schemas.Text | None, Query()] = None,
                             site: Annotated[Site | None, Query()] = None,
                             team_id: Annotated[schemas.TeamId | None, Query()] = None,
                             start: Annotated[Moment | None, Query(description="ISO time, included")] = None,
                             end: Annotated[Moment | None, Query(description="ISO time, excluded")] = None,
                             ) -> Response:
    if start is not None and end is not None and utc(start) >= utc(end):
        raise RequestInvalid("start: must be before end.", ("start",), code="invalid_value")
    filters = Filters(scope_of(request, caller), model_group, model_id, model_version, site, team_id,
                      utc(start) if start else None, utc(end) if end else None)
    names = request.app.state.gateway.pipeline.decision_log.sites
    return _json(await service.report(caller.admin.db, filters, names))


@router.post("/calibration/fit", summary="Fit a calibrator for a site or a model group from its outcomes")
async def calibration_fit(request: Request, caller: Fitter, body: FitRequest) -> Response:
    try:
        fitted = await service.fit(caller.admin.db, body.model_group, body.site, caller.identity.key_alias)
    except service.Refused as exc:
        raise _refused(exc) from None
    await service.load_active(caller.admin.db, request.app.state.gateway.pipeline.calibrators)
    return _json(fitted)


@router.post("/calibration/rollback", summary="Deactivate a calibrator; the version before it applies again")
async def calibration_rollback(request: Request, caller: Fitter, body: FitRequest) -> Response:
    try:
        rolled = await service.rollback(caller.admin.db, body.model_group, body.site)
    except service.Refused as exc:
        raise _refused(exc) from None
    await service.load_active(caller.admin.db, request.app.state.gateway.pipeline.calibrators)
    return _json(rolled)


@router.get("/calibration/calibrators", summary="The fitted calibrators, newest version first")
async def calibration_calibrators(request: Request, caller: AnyCaller,
                                  model_group: Annotated[schemas.ModelName | None, Query()] = None,
                                  site: Annotated[Site | None, Query()] = None) -> Response:
    """Every group's for a proxy admin or viewer (or an open gateway); a key sees those of the groups it may call."""
    from gateway.db import calibrators

    listed = await calibrators.listing(caller.admin.db, model_group, site)
    allowed = caller.identity.models
    if not scope_of(request, caller).everything and allowed is not None:
        listed = [row for row in listed if row["model_group"] in allowed]
    return _json({"calibrators": listed})


@router.post("/calibration/thresholds", summary="The threshold reaching a target precision, recall or accuracy")
async def calibration_thresholds(request: Request, caller: AnyCaller, body: ThresholdRequest) -> Response:
    filters = Filters(scope_of(request, caller), model_group=body.model_group, site=body.site)
    try:
        found = await service.threshold(caller.admin.db, filters, body.option, body.metric, body.target,
                                        body.probabilities)
    except service.Refused as exc:
        raise _refused(exc) from None
    return _json(found)
