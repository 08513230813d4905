"""Spend: ``GET /spend/logs`` (rows, a page at a time) and ``GET /global/spend/report`` (per day, model,
model group, team or key, from the daily roll-ups). The master key only; every filter is a bound
parameter (``gateway/db/queries.py``) and is validated here first."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from gateway.admin import schemas
from gateway.admin.common import AdminRoute, MasterAdmin, pages
from gateway.admin.service import Admin
from gateway.db import queries
from translators.errors import RequestInvalid

router = APIRouter(route_class=AdminRoute, tags=["spend"])

MAX_SPEND_PAGE = 1000
REPORT_DAYS = 30  # the report's span when no start_date is given
RequestId = Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=r"^[\x21-\x7e]+$")]
When = Annotated[dt.date | dt.datetime, AfterValidator(queries.in_range)]  # 400 naming the field when out of range


class SpendLogRow(BaseModel):
    """One request's spend (``spend_logs``); ``api_key`` is the key's id, never the key."""

    model_config = ConfigDict(extra="allow")
    request_id: str
    api_key: str
    key_alias: str | None = None
    team_id: str | None = None
    model_group: str | None = None
    model: str | None = None
    spend: schemas.Cost = 0.0
    cost_saved: schemas.Cost | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    startTime: dt.datetime
    endTime: dt.datetime
    status: int | None = None


class SpendLogsResponse(BaseModel):
    data: list[SpendLogRow]
    total: int
    page: int
    page_size: int
    total_pages: int


class SpendReportEntry(BaseModel):
    model_config = ConfigDict(extra="allow")
    spend: schemas.Cost = Field(description="USD")
    requests: int


def _key_filter(admin: Admin, api_key: str | None) -> str | None:
    if api_key is None:
        return None
    token = admin.token_of(api_key)
    if token is None:
        raise RequestInvalid("api_key must be a key (sk-...) or a key id (64 hex digits).", ("api_key",),
                             code="invalid_value")
    return token


def _check_span(start: When | None, end: When | None) -> None:
    if start is not None and end is not None and _as_date(start) > _as_date(end):
        raise RequestInvalid("start_date is after end_date.", ("start_date",), code="invalid_value")


def _as_date(value: dt.date | dt.datetime) -> dt.date:
    return value.date() if isinstance(value, dt.datetime) else value


@router.get("/spend/logs", summary="Spend rows, newest first, a page at a time")
async def spend_logs(admin: MasterAdmin,
                     api_key: Annotated[schemas.KeyRef | None, Query(description="A key or its id")] = None,
                     key_alias: Annotated[schemas.Alias | None, Query()] = None,
                     team_id: Annotated[schemas.TeamId | None, Query()] = None,
                     model: Annotated[schemas.ModelName | None, Query(description="Model group or provider/model")
                                      ] = None,
                     request_id: Annotated[RequestId | None, Query()] = None,
                     start_date: Annotated[When | None, Query(description="YYYY-MM-DD (whole day) or ISO time")
                                           ] = None,
                     end_date: Annotated[When | None, Query(description="YYYY-MM-DD (included) or ISO time")] = None,
                     page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
                     page_size: Annotated[int, Query(ge=1, le=MAX_SPEND_PAGE)] = 50) -> SpendLogsResponse:
    _check_span(start_date, end_date)
    rows, total = await queries.spend_logs(admin.db, api_key=_key_filter(admin, api_key), key_alias=key_alias,
                                           team_id=team_id, model=model, request_id=request_id,
                                           start_date=start_date, end_date=end_date, page=page,
                                           page_size=page_size)
    return SpendLogsResponse(data=[SpendLogRow(**row) for row in rows], total=total, page=page,
                             page_size=page_size, total_pages=pages(total, page_size))


GroupBy = Literal["day", "model", "model_group", "team", "key", "api_key"]


@router.get("/global/spend/report", summary="Spend per day, model, model group, team or key")
async def spend_report(admin: MasterAdmin,
                       start_date: Annotated[When | None, Query(description=f"Default: {REPORT_DAYS} days ago")
                                             ] = None,
                       end_date: Annotated[When | None, Query(description="Default: today (UTC)")] = None,
                       group_by: Annotated[GroupBy, Query()] = "day",
                       api_key: Annotated[schemas.KeyRef | None, Query(description="A key or its id")] = None,
                       team_id: Annotated[schemas.TeamId | None, Query()] = None) -> list[SpendReportEntry]:
    today = dt.datetime.now(dt.UTC).date()
    end = end_date or today
    last = _as_date(end)
    start = start_date or last - dt.timedelta(days=min(REPORT_DAYS - 1, (last - queries.EARLIEST).days))
    _check_span(start, end)
    entries: list[dict[str, Any]] = await queries.spend_report(
        admin.db, start_date=start, end_date=end, group_by="key" if group_by == "api_key" else group_by,
        api_key=_key_filter(admin, api_key), team_id=team_id)
    return [SpendReportEntry(**entry) for entry in entries]
