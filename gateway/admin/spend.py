"""Spend: ``GET /spend/logs`` as LiteLLM answers it (a plain list: the rows, newest first, at most
``MAX_LIST_ROWS`` with ``x-litellm-spend-logs-truncated: true`` past them, sent a chunk at a time as they are
read; or with ``start_date`` and ``end_date`` and ``summarize`` (the default) one entry per day; the rows also
filter by ``key_alias``, ``team_id`` and ``model``, as on v2; ``user_id`` filters the rows' ``user``, the key's
user), ``GET /spend/logs/v2`` (LiteLLM's paginated form: ``data``, ``total``, ``page``, ``page_size``,
``total_pages``; the UI reads it as ``/spend/logs/ui``, LiteLLM's UI route) and ``GET /global/spend/report``
(per day, model, model group, team, key or user, from the daily roll-ups). Every filter is a bound parameter
(``gateway/db/queries.py``) and is validated here first.

Who reads what (``gateway/auth/roles.py``, ``_visible``): a proxy admin or viewer (the master key
included) every row; an internal user or internal user viewer its own user's rows; a team admin its
teams' rows (an internal user who administers teams: both). Without a filter the rows narrow silently
to those; a ``user_id``, ``team_id`` or ``api_key`` filter outside them is a 403 naming it, and a key
of no user reads no spend here (403; its own spend is in ``/key/info``)."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Query, Response
from fastapi.responses import StreamingResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy.exc import SQLAlchemyError

from gateway.admin import schemas
from gateway.admin.common import AdminRoute, AnyCaller, Caller, pages
from gateway.admin.service import Admin
from gateway.auth import roles, store
from gateway.auth.errors import PermissionDenied
from gateway.db import queries
from gateway.spend.cost import shown_cost
from gateway.utc import utc
from translators.errors import RequestInvalid, Where

router = APIRouter(route_class=AdminRoute, tags=["spend"])
log = logging.getLogger("gateway.admin")

MAX_SPEND_PAGE = 1000
REPORT_DAYS = 30  # the report's span when no start_date is given
SUMMARY_DAYS = 3660  # the longest span /spend/logs summarizes (one entry a day, padded to end_date)
RequestId = Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=r"^[\x21-\x7e]+$")]
UserId = RequestId  # a user id: the same rule, 1 to 255 printable ASCII characters, no spaces
When = Annotated[dt.date | dt.datetime, AfterValidator(queries.in_range)]  # 400 naming the field when out of range


class SpendLogRow(BaseModel):
    """One request's spend (``spend_logs``); ``api_key`` is the key's id, never the key."""

    model_config = ConfigDict(extra="allow")
    request_id: str
    api_key: str
    key_alias: str | None = None
    team_id: str | None = None
    user: str | None = None  # the key's user id (LiteLLM's column)
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


def _json(body: bytes, headers: dict[str, str] | None = None) -> Response:
    return Response(body, media_type="application/json", headers=headers)


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


async def _visible(caller: Caller, token: str | None, team_id: str | None, user_id: str | None
                   ) -> queries.Visible | None:
    """The spend rows this caller may read (None: every row), once its filters are checked to lie within
    them; see the module docstring."""
    identity = caller.identity
    if roles.reads_all(identity):
        return None
    own = (identity.user_id,) if identity.user_id is not None else ()
    teams = roles.admin_teams(identity)
    if not own and not teams:
        raise PermissionDenied("A key of no user reads no spend here; its own spend is in /key/info.",
                               code="admin_only")
    may = "its own user's spend" if own else ""
    may += (" and " if may else "") + "the spend of the teams it administers" if teams else ""
    if user_id is not None and user_id not in own:
        raise _not_visible("user_id", may)
    if team_id is not None and not roles.reads_team_spend(identity, team_id):
        raise _not_visible("team_id", may)
    if token is not None:
        key = await store.get_key(caller.admin.db, token=token)
        if key is None or not roles.reads_key(identity, key):
            raise _not_visible("api_key", may)
    return queries.Visible(user_ids=own, team_ids=teams)


def _not_visible(field: str, may: str) -> PermissionDenied:
    return PermissionDenied(f"{field}: this caller reads only {may}; leave {field} out to see that.",
                            code="spend_not_visible", loc=Where(field))


def _check_span(start: When | None, end: When | None) -> None:
    if start is not None and end is not None and _as_date(start) > _as_date(end):
        raise RequestInvalid("start_date is after end_date.", ("start_date",), code="invalid_value")


def _as_date(value: dt.date | dt.datetime) -> dt.date:
    return value.date() if isinstance(value, dt.datetime) else value


@router.get("/spend/logs", summary="LiteLLM's /spend/logs: the rows, newest first, or a summary per day",
            response_model=list[dict[str, Any]])
async def spend_logs_list(caller: AnyCaller,
                          api_key: Annotated[schemas.KeyRef | None, Query(description="A key or its id")] = None,
                          user_id: Annotated[UserId | None, Query(description="The key's user (the rows' "
                                                                          "user)")] = None,
                          request_id: Annotated[RequestId | None, Query()] = None,
                          key_alias: Annotated[schemas.Alias | None, Query(description="Rows only")] = None,
                          team_id: Annotated[schemas.TeamId | None, Query()] = None,
                          model: Annotated[schemas.ModelName | None, Query(description="Rows only: model group or "
                                                                           "provider/model")] = None,
                          start_date: Annotated[When | None, Query(description="YYYY-MM-DD (whole day) or ISO time")
                                                ] = None,
                          end_date: Annotated[When | None, Query(description="YYYY-MM-DD (included) or ISO time")
                                              ] = None,
                          summarize: Annotated[bool, Query(description="With start_date and end_date: one entry "
                                                           "a day (spend, per key, per model)")] = True,
                          ) -> Response:
    admin = caller.admin
    _check_span(start_date, end_date)
    token = _key_filter(admin, api_key)
    visible = await _visible(caller, token, team_id, user_id)
    extra = {"key_alias": key_alias, "model": model}
    if start_date is not None and end_date is not None and summarize:
        named = next((name for name, value in extra.items() if value is not None), None)
        if named is not None:
            raise RequestInvalid(f"{named}: filters rows, not LiteLLM's daily summary; pass summarize=false.",
                                 (named,), code="invalid_value")
        return _json(orjson.dumps(await _summary(admin, token, request_id, start_date, end_date,
                                                 user_id=user_id, team_id=team_id, visible=visible)))
    matching = queries.SpendFilter(api_key=token, request_id=request_id, start_date=start_date, end_date=end_date,
                                   key_alias=key_alias, team_id=team_id, model=model, user_id=user_id,
                                   visible=visible)
    return await _streamed_list(admin, matching)


async def _streamed_list(admin: Admin, matching: queries.SpendFilter) -> Response:
    """Up to ``MAX_LIST_ROWS`` rows as one JSON array, sent a chunk at a time as they are read (a 10,000-row
    list is 6 MB: held whole, as rows, then objects, then bytes, it cost ~10 times that per request in
    flight). Whether rows lie past the cap is asked first (LiteLLM's header must precede the body) and the
    first chunk is read before the answer starts, so a database that is away is still the 503 of every
    admin route; one lost mid-list cuts the answer off (no closing chunk), never a shorter list that
    reads as complete."""
    truncated = await queries.more_spend_logs_than(admin.db, queries.MAX_LIST_ROWS, matching)
    chunks = queries.stream_spend_logs(admin.db, queries.MAX_LIST_ROWS, matching)
    first: list[dict[str, Any]] = await anext(chunks, [])
    headers = {"x-litellm-spend-logs-truncated": "true"} if truncated else None
    return StreamingResponse(_json_array(first, chunks), media_type="application/json", headers=headers)


async def _json_array(first: list[dict[str, Any]], rest: AsyncGenerator[list[dict[str, Any]], None],
                      ) -> AsyncIterator[bytes]:
    yield b"[" + _rows_json(first)
    try:
        async for rows in rest:
            yield b"," + _rows_json(rows)
    except (SQLAlchemyError, OSError) as exc:
        log.error("GET /spend/logs: database error %s mid-list; the answer is cut off", type(exc).__name__)
        raise ListCutOff from None
    finally:
        await rest.aclose()
    yield b"]"


class ListCutOff(RuntimeError):
    """The database went away while the list was being sent: the connection is dropped, so the reader sees
    a broken answer instead of a short one."""


COSTS = ("spend", "cost_saved")  # SpendLogRow's fields typed schemas.Cost
JSON_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS  # column names are SQLAlchemy's str subclass


def _rows_json(rows: list[dict[str, Any]]) -> bytes:
    """The rows as the inside of a JSON array (no brackets), with the values ``SpendLogRow`` writes (costs
    shown without float noise, UTC times with ``Z``; tests/admin/test_spend_stream.py compares them with
    v2's). orjson on the rows as read: pydantic's validation and dump of each row cost ~3 times as much,
    and they are the database's own rows, not input."""
    for row in rows:
        for name in COSTS:
            if row.get(name) is not None:
                row[name] = shown_cost(row[name])
    return orjson.dumps(rows, option=JSON_OPTIONS)[1:-1] if rows else b""


async def _summary(admin: Admin, token: str | None, request_id: str | None, start: dt.date | dt.datetime,
                   end: dt.date | dt.datetime, *, user_id: str | None, team_id: str | None,
                   visible: queries.Visible | None) -> list[dict[str, Any]]:
    """LiteLLM's summary: per UTC day with spend ``{<key id>: spend, "startTime", "spend", "users": {user
    id: spend}, "models": {model: spend}}`` (spend of no user under ``""``, LiteLLM's default for the
    column), oldest first, then a zero entry for each day after the last one up to ``end_date``."""
    first, last = _as_date(start), _as_date(end)
    if (last - first).days >= SUMMARY_DAYS:
        raise RequestInvalid(f"end_date: the summary covers at most {SUMMARY_DAYS} days; narrow the dates or "
                             "pass summarize=false.", ("end_date",), code="invalid_value")
    if request_id is None:
        sums = await queries.daily_summary_spend(admin.db, start_date=first, end_date=last, api_key=token,
                                                 user_id=user_id, team_id=team_id, visible=visible)
    else:  # one request: its row, not the roll-ups
        rows, _ = await queries.spend_logs(admin.db, api_key=token, request_id=request_id, start_date=start,
                                           end_date=end, user_id=user_id, team_id=team_id, visible=visible)
        sums = [(utc(row["startTime"]).date(), kind, name, row["spend"] or 0.0) for row in rows
                for kind, name in (("key", row["api_key"]), ("user", row["user"] or ""), ("model", row["model"] or ""))]
    days: dict[dt.date, dict[str, Any]] = {}
    for day, kind, name, spend in sums:
        entry = days.get(day)
        if entry is None:
            entry = days[day] = {"startTime": day, "spend": 0.0, "users": {}, "models": {}}
        if kind == "key":
            entry["spend"] += spend
            if name:
                entry[name] = entry.get(name, 0.0) + spend
        else:
            named = entry["users" if kind == "user" else "models"]
            named[name] = named.get(name, 0.0) + spend
    out = [_shown(days[day]) for day in sorted(days)]
    if out:
        final = max(days)
        out += [{"startTime": (final + dt.timedelta(days=n)).isoformat(), "spend": 0, "users": {}, "models": {}}
                for n in range(1, (last - final).days + 1)]
    return out


def _shown(entry: dict[str, Any]) -> dict[str, Any]:
    """A summary entry as JSON shows it: the day as text, costs without float noise."""
    return {name: value.isoformat() if name == "startTime" else
            {k: shown_cost(v) for k, v in value.items()} if isinstance(value, dict) else shown_cost(value)
            for name, value in entry.items()}


@router.get("/spend/logs/v2", summary="Spend rows, newest first, a page at a time (LiteLLM's paginated route)")
@router.get("/spend/logs/ui", include_in_schema=False)  # LiteLLM's UI route: the admin UI reads this one
async def spend_logs(caller: AnyCaller,
                     api_key: Annotated[schemas.KeyRef | None, Query(description="A key or its id")] = None,
                     key_alias: Annotated[schemas.Alias | None, Query()] = None,
                     team_id: Annotated[schemas.TeamId | None, Query()] = None,
                     user_id: Annotated[UserId | None, Query(description="The key's user")] = None,
                     model: Annotated[schemas.ModelName | None, Query(description="Model group or provider/model")
                                      ] = None,
                     request_id: Annotated[RequestId | None, Query()] = None,
                     start_date: Annotated[When | None, Query(description="YYYY-MM-DD (whole day) or ISO time")
                                           ] = None,
                     end_date: Annotated[When | None, Query(description="YYYY-MM-DD (included) or ISO time")] = None,
                     page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
                     page_size: Annotated[int, Query(ge=1, le=MAX_SPEND_PAGE)] = 50) -> SpendLogsResponse:
    admin = caller.admin
    _check_span(start_date, end_date)
    token = _key_filter(admin, api_key)
    visible = await _visible(caller, token, team_id, user_id)
    rows, total = await queries.spend_logs(admin.db, api_key=token, key_alias=key_alias,
                                           team_id=team_id, model=model, request_id=request_id,
                                           start_date=start_date, end_date=end_date, page=page,
                                           page_size=page_size, user_id=user_id, visible=visible)
    return SpendLogsResponse(data=[SpendLogRow(**row) for row in rows], total=total, page=page,
                             page_size=page_size, total_pages=pages(total, page_size))


GroupBy = Literal["day", "model", "model_group", "team", "key", "api_key", "user"]


@router.get("/global/spend/report", summary="Spend per day, model, model group, team, key or user")
async def spend_report(caller: AnyCaller,
                       start_date: Annotated[When | None, Query(description=f"Default: {REPORT_DAYS} days ago")
                                             ] = None,
                       end_date: Annotated[When | None, Query(description="Default: today (UTC)")] = None,
                       group_by: Annotated[GroupBy, Query()] = "day",
                       api_key: Annotated[schemas.KeyRef | None, Query(description="A key or its id")] = None,
                       team_id: Annotated[schemas.TeamId | None, Query()] = None,
                       user_id: Annotated[UserId | None, Query(description="The key's user")] = None,
                       ) -> list[SpendReportEntry]:
    admin = caller.admin
    token = _key_filter(admin, api_key)
    visible = await _visible(caller, token, team_id, user_id)
    today = dt.datetime.now(dt.UTC).date()
    end = end_date or today
    last = _as_date(end)
    start = start_date or last - dt.timedelta(days=min(REPORT_DAYS - 1, (last - queries.EARLIEST).days))
    _check_span(start, end)
    entries: list[dict[str, Any]] = await queries.spend_report(
        admin.db, start_date=start, end_date=end, group_by="key" if group_by == "api_key" else group_by,
        api_key=token, team_id=team_id, user_id=user_id, visible=visible)
    return [SpendReportEntry(**entry) for entry in entries]
