"""Spend rows into ``spend_logs`` and their daily roll-ups, idempotent by ``request_id``.

``insert_spend_rows(db, rows)`` runs one transaction: ``INSERT ... ON CONFLICT (request_id) DO NOTHING
RETURNING request_id`` (both dialects), then adds only the rows that came back to ``daily_spend``
(``INSERT ... ON CONFLICT DO UPDATE SET spend = daily_spend.spend + excluded.spend, ...``) and to
their key's and team's ``spend`` (what auth reads, and a budget counter is seeded with). A row sent
twice (a drain replayed after a crash between the database's commit and the outbox's delete) is
neither stored nor counted twice. Rows and roll-up keys are written in sorted order, so two drainers
on PostgreSQL never wait on each other in a cycle.

``normalise_row(row)`` is what the outbox runs at append: the spend_logs columns only (anything else
is a ``ValueError``, a programming error caught in tests rather than a row lost later), defaults
filled, strings cut to their column's length (PostgreSQL would refuse the row otherwise), numbers
coerced, times as timezone-aware UTC.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from gateway.db.decisions import check_extras, insert_decisions, split_extras
from gateway.db.engine import Database
from gateway.db.models import SPEND_LOG_COLUMNS, daily_spend, spend_logs, teams, users, verification_tokens
from gateway.utc import utc

INT_COLUMNS = ("prompt_tokens", "cached_tokens", "completion_tokens", "total_tokens", "retries", "fallbacks",
               "cache_hits", "cache_misses")
FLOAT_COLUMNS = ("spend", "cost_saved")
TIME_COLUMNS = ("startTime", "endTime")
ROLLUP_KEY = ("date", "api_key", "team_id", "user_id", "model_group", "model")
ROLLUP_SUMS = ("spend", "requests", "failed_requests", "prompt_tokens", "completion_tokens", "cached_tokens",
               "cache_hits", "cache_misses")
_LENGTHS = {c.name: c.type.length for c in spend_logs.columns
            if isinstance(c.type, sa.String) and c.type.length is not None}


def normalise_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A spend row with every spend_logs column, in the types the table takes (and its decisions, when it
    carries them: gateway/db/decisions.py); ``ValueError`` when unusable."""
    row = dict(row)
    extras = check_extras(split_extras(row))
    unknown = set(row) - SPEND_LOG_COLUMNS
    if unknown:
        raise ValueError(f"spend row: unknown columns {sorted(unknown)}")
    request_id = row.get("request_id")
    if not isinstance(request_id, str) or not request_id:
        raise ValueError("spend row: request_id must be a non-empty string")
    out: dict[str, Any] = {name: None for name in SPEND_LOG_COLUMNS}
    out.update(row)
    out["api_key"] = out["api_key"] or ""
    for name in INT_COLUMNS:
        out[name] = int(out[name] or 0)
    for name in FLOAT_COLUMNS:
        value = float(out[name] or 0.0)
        out[name] = value if math.isfinite(value) else 0.0
    if out["status"] is not None:
        out["status"] = int(out["status"])
    if not out["total_tokens"]:
        out["total_tokens"] = out["prompt_tokens"] + out["completion_tokens"]
    now = dt.datetime.now(dt.UTC)
    out["startTime"] = as_utc(out["startTime"]) if out["startTime"] is not None else now
    out["endTime"] = as_utc(out["endTime"]) if out["endTime"] is not None else out["startTime"]
    out["metadata"] = dict(out["metadata"] or {})
    for name, length in _LENGTHS.items():
        if out[name] is not None:
            out[name] = str(out[name]).replace("\x00", "")[:length]  # PostgreSQL's text takes no NUL
    if out["content"] is not None:
        out["content"] = str(out["content"]).replace("\x00", "")
    if out["request_id"] != request_id:
        raise ValueError(f"spend row: request_id longer than {_LENGTHS['request_id']} characters")
    out.update(extras)
    return out


def as_utc(value: dt.datetime | str | float | int) -> dt.datetime:
    """A datetime, an ISO 8601 string or epoch seconds as an aware UTC datetime (naive means UTC)."""
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, str):
        moment = dt.datetime.fromisoformat(value)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        return dt.datetime.fromtimestamp(value, dt.UTC)
    else:
        raise ValueError(f"spend row: not a time: {value!r}")
    return utc(moment)


def _insert(dialect: str) -> Any:
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


async def insert_spend_rows(db: Database, rows: Iterable[Mapping[str, Any]]) -> int:
    """Insert the rows not already present and add them to the roll-ups, in one transaction; returns how many
    were new. Rows must be ``normalise_row``'s output (the outbox's are)."""
    unique: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        unique.setdefault(row["request_id"], row)
    if not unique:
        return 0
    ordered = [dict(unique[k]) for k in sorted(unique)]
    extras = {row["request_id"]: found for row in ordered if (found := split_extras(row))}
    stmt = _new_rows_insert(db.dialect)
    async with db.engine.begin() as conn:
        inserted: set[str] = set()
        for chunk in _shaped(ordered):
            inserted.update(r[0] for r in (await conn.execute(stmt, chunk)).all())
        if inserted:
            new = [unique[k] for k in sorted(inserted)]
            upsert = _rollup_upsert(db.dialect)
            for totals in _shaped(rollup(new)):
                await conn.execute(upsert, totals)
            for table, column, amounts in ((verification_tokens, "token", _spent_by(new, "api_key")),
                                           (teams, "team_id", _spent_by(new, "team_id")),
                                           (users, "user_id", _spent_by(new, "user"))):
                if amounts:
                    await conn.execute(_add_spend(table, column), amounts)
            logged = {k: extras[k] for k in inserted if k in extras}
            if logged:
                await insert_decisions(conn, db.dialect, logged, {k: as_utc(unique[k]["startTime"]) for k in logged})
    return len(inserted)


# The statements are built once per dialect: they are immutable, and building them for every batch made
# SQLAlchemy objects in reference cycles (garbage for the collector) besides the work.
@functools.cache
def _new_rows_insert(dialect: str) -> Any:
    return (_insert(dialect)(spend_logs).on_conflict_do_nothing(index_elements=["request_id"])
            .returning(spend_logs.c.request_id))


def _spent_by(rows: Sequence[Mapping[str, Any]], field: str) -> list[dict[str, Any]]:
    """The rows' spend summed per key hash, team id or user id (in key order), for their ``spend``:
    the database spend that auth reads and admission seeds a budget counter with."""
    sums: dict[str, float] = {}
    for row in rows:
        owner, spend = row.get(field), row.get("spend") or 0.0
        if owner and spend:
            sums[owner] = sums.get(owner, 0.0) + spend
    return [{"owner": owner, "amount": sums[owner]} for owner in sorted(sums)]


@functools.cache
def _add_spend(table: Any, column: str) -> Any:
    return (sa.update(table).where(table.c[column] == sa.bindparam("owner"))
            .values(spend=table.c.spend + sa.bindparam("amount")))


def _shaped(items: list[Any]) -> Iterator[list[Any]]:
    """``items`` in runs whose lengths are powers of two, longest first (300 rows: 256, 32, 8, 4).

    A many-row INSERT is rendered as one statement of that many VALUES, and the SQLite driver keeps
    the last 128 statements it prepared per connection: batches of every length from 1 to 500 kept
    128 different statements of up to 15,000 parameters each, a hundred megabytes that looked like a
    leak. Powers of two make at most ten shapes, so the driver's cache holds only those."""
    start, size = 0, 1 << max(0, len(items).bit_length() - 1)
    while start < len(items):
        while size > len(items) - start:
            size >>= 1
        yield items[start:start + size]
        start += size


def rollup(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows summed per (UTC date of startTime, api_key, team_id, user, model_group, model), in key order."""
    sums: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = (as_utc(row["startTime"]).date(), row.get("api_key") or "", row.get("team_id") or "",
               row.get("user") or "", row.get("model_group") or "", row.get("model") or "")
        entry = sums.get(key)
        if entry is None:
            entry = sums[key] = dict(zip(ROLLUP_KEY, key), **{name: 0 for name in ROLLUP_SUMS})
            entry["spend"] = 0.0
        entry["spend"] += row.get("spend") or 0.0
        entry["requests"] += 1
        status = row.get("status")
        entry["failed_requests"] += 1 if (status is not None and status >= 400) or row.get("error_class") else 0
        for name in ("prompt_tokens", "completion_tokens", "cached_tokens", "cache_hits", "cache_misses"):
            entry[name] += row.get(name) or 0
    return [sums[k] for k in sorted(sums)]


@functools.cache
def _rollup_upsert(dialect: str) -> Any:
    stmt = _insert(dialect)(daily_spend)
    return stmt.on_conflict_do_update(
        index_elements=list(ROLLUP_KEY),
        set_={name: daily_spend.c[name] + stmt.excluded[name] for name in ROLLUP_SUMS},
    )
