"""Reads for the admin API: spend logs page by page, spend reports from the daily roll-ups.

Every filter is a bound parameter of a SQLAlchemy expression; no SQL text is built from input.
Dates: a ``date`` (or ``"YYYY-MM-DD"``) is a whole UTC day, so ``end_date=2026-11-30`` includes that day;
a ``datetime`` (or an ISO string with a time) is that instant, ``start_date`` inclusive and ``end_date``
inclusive. A bad value is a ``ValueError`` naming the parameter, and so is one whose UTC day lies outside
``EARLIEST`` .. ``LATEST`` (``in_range``: beyond them a day's end or a time's offset cannot be computed).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator, Collection
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import sqlalchemy as sa

from gateway.db.engine import Database
from gateway.db.models import daily_spend, teams, users, verification_tokens
from gateway.db.models import spend_logs as spend_logs_table
from gateway.db.spend import ROLLUP_SUMS
from gateway.utc import utc

MAX_PAGE_SIZE = 1000
MAX_LIST_ROWS = 10_000  # LiteLLM's cap on /spend/logs' unpaged list (SPEND_LOGS_PAGINATION_COUNT_CAP)
STREAM_CHUNK = 1000  # rows per chunk of the unpaged list, read and sent as one
GroupBy = Literal["day", "model", "model_group", "team", "key", "user"]
GROUP_BY: tuple[str, ...] = ("day", "model", "model_group", "team", "key", "user")
EARLIEST, LATEST = dt.date(1, 1, 2), dt.date(9999, 12, 30)
When = TypeVar("When", dt.date, dt.datetime)


def in_range(value: When) -> When:
    """``value`` when its UTC day lies from ``EARLIEST`` to ``LATEST``, else ``ValueError`` (the rule, not the
    name: the caller names the parameter)."""
    try:
        day = utc(value).date() if isinstance(value, dt.datetime) else value
    except OverflowError:  # 9999-12-31T23:59:59-01:00 is in year 10000 in UTC
        day = None
    if day is None or not EARLIEST <= day <= LATEST:
        raise ValueError(f"is out of range: give a day from {EARLIEST} to {LATEST} (UTC)")
    return value


def _checked(value: When, name: str) -> When:
    try:
        return in_range(value)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _moment(value: dt.date | dt.datetime | str | None, name: str, *, end: bool) -> tuple[dt.datetime, bool] | None:
    """The bound as an aware UTC instant, and whether it is included: a whole day given as ``end`` ends at the
    next day's midnight, excluded."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value) if ("T" in value or " " in value) else dt.date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{name}: not a date (YYYY-MM-DD) or an ISO 8601 time: {value!r}") from None
    if isinstance(value, dt.datetime):
        return utc(_checked(value, name)), True
    if isinstance(value, dt.date):
        day = _checked(value, name) + dt.timedelta(days=1) if end else _checked(value, name)
        return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC), not end
    raise ValueError(f"{name}: not a date: {value!r}")


def _day(value: dt.date | dt.datetime | str, name: str) -> dt.date:
    if isinstance(value, dt.datetime):
        return utc(_checked(value, name)).date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value[:10])
        except ValueError:
            raise ValueError(f"{name}: not a date (YYYY-MM-DD): {value!r}") from None
    raise ValueError(f"{name}: not a date: {value!r}")


async def keys_with_alias_like(db: Database, alias: str, limit: int = 2) -> list[str]:
    """The ids of keys whose alias is ``alias`` ignoring case and surrounding spaces (the ASCII letters' case
    on SQLite, whose ``lower`` folds only those; every letter's on PostgreSQL)."""
    c = verification_tokens.c
    query = (sa.select(c.token).where(sa.func.lower(sa.func.trim(c.key_alias)) == sa.func.lower(alias.strip()))
             .limit(limit))
    async with db.engine.connect() as conn:
        return [row[0] for row in (await conn.execute(query)).all()]


@dataclass(frozen=True, slots=True)
class Visible:
    """The spend a caller who does not read everything sees: the rows of these users, and the rows of these
    teams (either; gateway/admin/spend.py builds it from the caller's role). None instead of one: every row."""

    user_ids: Collection[str] = ()
    team_ids: Collection[str] = ()

    def where(self, user: sa.ColumnElement[Any], team: sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
        either = [column.in_(sorted(values)) for column, values in ((user, self.user_ids), (team, self.team_ids))
                  if values]
        return sa.or_(*either) if either else sa.false()


def _log_row(row: sa.Row[Any]) -> dict[str, Any]:
    return dict(row._mapping)


@dataclass(frozen=True)
class SpendFilter:
    """What a spend-log read matches. ``api_key`` is the key's hash (``verification_tokens.token``);
    ``model`` matches the model group or the deployment's provider/model; ``user_id`` the row's ``user``
    (the key's user); ``visible`` narrows to what the caller may see."""

    api_key: str | None = None
    key_alias: str | None = None
    team_id: str | None = None
    model: str | None = None
    request_id: str | None = None
    start_date: dt.date | dt.datetime | str | None = None
    end_date: dt.date | dt.datetime | str | None = None
    user_id: str | None = None
    visible: Visible | None = None

    def where(self) -> list[sa.ColumnElement[bool]]:
        c = spend_logs_table.c
        where: list[sa.ColumnElement[bool]] = []
        for column, value in ((c.api_key, self.api_key), (c.key_alias, self.key_alias), (c.team_id, self.team_id),
                              (c.request_id, self.request_id), (c.user, self.user_id)):
            if value is not None:
                where.append(column == value)
        if self.visible is not None:
            where.append(self.visible.where(c.user, c.team_id))
        if self.model is not None:
            where.append(sa.or_(c.model_group == self.model, c.model == self.model))
        start = _moment(self.start_date, "start_date", end=False)
        if start is not None:
            where.append(c.startTime >= start[0])
        end = _moment(self.end_date, "end_date", end=True)
        if end is not None:
            where.append(c.startTime <= end[0] if end[1] else c.startTime < end[0])
        return where

    def newest_first(self) -> sa.Select[Any]:
        c = spend_logs_table.c
        return sa.select(spend_logs_table).where(*self.where()).order_by(c.startTime.desc(), c.request_id.desc())


async def spend_logs(db: Database, *, page: int = 1, page_size: int = 50, cap: int = MAX_PAGE_SIZE,
                     **filters: Any) -> tuple[list[dict[str, Any]], int]:
    """One page of spend rows, newest first, and the number of rows matching ``filters`` (``SpendFilter``'s
    fields). ``page_size`` is at most ``cap`` (``MAX_PAGE_SIZE``)."""
    if not isinstance(page, int) or page < 1:
        raise ValueError("page: must be a whole number from 1")
    if not isinstance(page_size, int) or not 1 <= page_size <= cap:
        raise ValueError(f"page_size: must be a whole number from 1 to {cap}")
    matching = SpendFilter(**filters)
    offset = (page - 1) * page_size
    rows_q = matching.newest_first().limit(page_size).offset(offset)
    count_q = sa.select(sa.func.count()).select_from(spend_logs_table).where(*matching.where())
    async with db.engine.connect() as conn:
        rows = [_log_row(r) for r in (await conn.execute(rows_q)).all()]
        if 0 < len(rows) < page_size or (page == 1 and not rows):  # the last page: no count over every match
            return rows, offset + len(rows)
        return rows, int((await conn.execute(count_q)).scalar_one())


async def more_spend_logs_than(db: Database, limit: int, matching: SpendFilter) -> bool:
    """Whether more than ``limit`` rows match: one row looked up past the first ``limit`` in the index's
    order, not a count of every match."""
    beyond = matching.newest_first().with_only_columns(spend_logs_table.c.request_id).offset(limit).limit(1)
    async with db.engine.connect() as conn:
        return (await conn.execute(beyond)).first() is not None


async def stream_spend_logs(db: Database, limit: int, matching: SpendFilter,
                            chunk: int | None = None) -> AsyncGenerator[list[dict[str, Any]], None]:
    """The first ``limit`` matching rows, newest first, ``chunk`` (``STREAM_CHUNK``) rows at a time from one cursor (a
    server-side cursor on PostgreSQL): a reader holds one chunk in memory, not the whole list. The
    connection is held until the last chunk is read or the generator is closed."""
    async with db.engine.connect() as conn:
        result = await conn.stream(matching.newest_first().limit(limit))
        try:
            async for part in result.partitions(chunk or STREAM_CHUNK):
                yield [_log_row(r) for r in part]
        finally:
            await result.close()


def _daily_where(start_date: dt.date | dt.datetime | str, end_date: dt.date | dt.datetime | str,
                 api_key: str | None, team_id: str | None, user_id: str | None, visible: Visible | None,
                 ) -> list[sa.ColumnElement[bool]]:
    """The roll-ups of the UTC days ``start_date`` .. ``end_date`` (both included) with these filters."""
    first, last = _day(start_date, "start_date"), _day(end_date, "end_date")
    d = daily_spend.c
    where = [d.date >= first, d.date <= last]
    for column, value in ((d.api_key, api_key), (d.team_id, team_id), (d.user_id, user_id)):
        if value is not None:
            where.append(column == value)
    if visible is not None:
        where.append(visible.where(d.user_id, d.team_id))
    return where


async def daily_summary_spend(db: Database, *, start_date: dt.date | dt.datetime | str,
                              end_date: dt.date | dt.datetime | str, api_key: str | None = None,
                              user_id: str | None = None, team_id: str | None = None,
                              visible: Visible | None = None) -> list[tuple[dt.date, str, str, float]]:
    """(UTC day, ``key`` | ``user`` | ``model``, the key hash, user id (``""``: none) or provider/model,
    spend) over the days ``start_date`` .. ``end_date`` (both included), from ``daily_spend``: what
    LiteLLM's summarized ``/spend/logs`` adds up per day. The three sums are made by the database, in
    one statement (a union of three groupings), unordered: the caller orders the days. Grouping by
    (day, key, user, model) at once and summing in Python sent every roll-up row (1,000 keys, 7 days:
    14,000 rows) through the driver, the half of the route's time."""
    d = daily_spend.c
    where = _daily_where(start_date, end_date, api_key, team_id, user_id, visible)
    parts = [sa.select(d.date, sa.literal(kind).label("kind"), column.label("name"), sa.func.sum(d.spend))
             .where(*where).group_by(d.date, column)
             for kind, column in (("key", d.api_key), ("user", d.user_id), ("model", d.model))]
    async with db.engine.connect() as conn:
        rows = (await conn.execute(sa.union_all(*parts))).all()
    return [(row[0], str(row[1]), str(row[2] or ""), float(row[3] or 0.0)) for row in rows]


def _key_label(api_key: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
    """A key's alias in a report: its row's, or for a key without one (deleted, or the master key, which
    has none) the alias its latest spend row carried ("master key" for the master's: gateway/spend/log.py),
    so a report never shows such spend as a bare hash."""
    s, v = spend_logs_table.c, verification_tokens.c
    logged = (sa.select(s.key_alias).where(s.api_key == api_key, s.key_alias.is_not(None))
              .order_by(s.startTime.desc()).limit(1).scalar_subquery())
    return sa.case((sa.func.max(v.token).is_(None), logged), else_=sa.func.max(v.key_alias)).label("key_alias")


async def spend_report(db: Database, *, start_date: dt.date | dt.datetime | str,
                       end_date: dt.date | dt.datetime | str, group_by: GroupBy,
                       api_key: str | None = None, team_id: str | None = None, user_id: str | None = None,
                       visible: Visible | None = None) -> list[dict[str, Any]]:
    """Spend and counts per group over the UTC days ``start_date`` .. ``end_date`` (both included), from
    ``daily_spend``. ``group_by``: ``day`` (key ``date``, oldest first), ``model`` (the deployment's
    provider/model), ``model_group``, ``team`` (``team_id``, ``team_alias``), ``key`` (``api_key``, the hash,
    with ``key_alias``, also for a deleted key and the master key: ``_key_label``) or ``user`` (``user_id``,
    ``user_alias``, ``user_email``); all but ``day`` are ordered
    by spend, highest first. Each entry also carries ``spend``, ``requests``, ``failed_requests``,
    ``prompt_tokens``, ``completion_tokens``, ``cached_tokens``, ``cache_hits``, ``cache_misses``.
    A row without a key, team or user is grouped under ``""``. ``visible`` narrows to what the caller may see."""
    if group_by not in GROUP_BY:
        raise ValueError(f"group_by: one of {', '.join(GROUP_BY)}")
    d = daily_spend.c
    sums = [sa.func.sum(d[name]).label(name) for name in ROLLUP_SUMS]
    source: sa.FromClause = daily_spend
    keys: list[sa.ColumnElement[Any]]
    labels: list[sa.ColumnElement[Any]] = []  # per group, not grouped by
    if group_by == "day":
        keys = [d.date]
    elif group_by == "model":
        keys = [d.model]
    elif group_by == "model_group":
        keys = [d.model_group]
    elif group_by == "team":
        source = daily_spend.outerjoin(teams, teams.c.team_id == d.team_id)
        keys = [d.team_id, teams.c.team_alias]
    elif group_by == "user":
        source = daily_spend.outerjoin(users, users.c.user_id == d.user_id)
        keys = [d.user_id, users.c.user_alias, users.c.user_email]
    else:
        source = daily_spend.outerjoin(verification_tokens, verification_tokens.c.token == d.api_key)
        keys = [d.api_key]
        labels = [_key_label(d.api_key)]
    where = _daily_where(start_date, end_date, api_key, team_id, user_id, visible)
    order = keys[0].asc() if group_by == "day" else sa.desc("spend")
    query = sa.select(*keys, *labels, *sums).select_from(source).where(*where).group_by(*keys).order_by(order, keys[0])
    async with db.engine.connect() as conn:
        result = (await conn.execute(query)).all()
    out = []
    for row in result:
        entry = dict(row._mapping)
        entry["spend"] = float(entry["spend"] or 0.0)
        for name in ROLLUP_SUMS[1:]:
            entry[name] = int(entry[name] or 0)
        out.append(entry)
    return out
