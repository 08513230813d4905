"""The decision log's rows into ``decisions`` and ``decision_inputs``, in the spend rows' transaction.

A spend row may carry ``decisions`` (its request's answered questions: ``gateway/decisionlog/rows.py``)
and ``decision_input`` (its captured input). ``split_extras(row)`` takes them off the row before
it is inserted; ``insert_decisions(conn, dialect, extras, times)`` inserts those of the requests
whose spend row was new (``ON CONFLICT DO NOTHING`` as well, so a replay writes nothing twice), each
decision stamped with its request's ``startTime``.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from gateway.db.models import decision_inputs, decisions
from gateway.utc import utc

EXTRA_FIELDS = ("decisions", "decision_input")
DECISION_COLUMNS: frozenset[str] = frozenset(str(c.name) for c in decisions.columns)


def split_extras(row: dict[str, Any]) -> dict[str, Any]:
    """The decision fields taken off ``row`` (which keeps only spend_logs columns)."""
    return {name: row.pop(name) for name in EXTRA_FIELDS if name in row}


def check_extras(extras: Mapping[str, Any]) -> dict[str, Any]:
    """What the outbox keeps of them: lists of column dicts; ``ValueError`` for anything else."""
    out: dict[str, Any] = {}
    rows = extras.get("decisions")
    if rows is not None:
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ValueError("spend row: decisions must be a list of rows")
        for r in rows:
            unknown = set(r) - DECISION_COLUMNS
            if unknown:
                raise ValueError(f"decision row: unknown columns {sorted(unknown)}")
        out["decisions"] = rows
    captured = extras.get("decision_input")
    if captured is not None:
        if not isinstance(captured, dict) or not isinstance(captured.get("content"), str):
            raise ValueError("spend row: decision_input must be {content: str}")
        out["decision_input"] = {"content": captured["content"].replace("\x00", "")}
    return out


@functools.cache
def _insert(dialect: str, table: sa.Table, keys: tuple[str, ...]) -> Any:
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return insert(table).on_conflict_do_nothing(index_elements=list(keys))


# The decision rows go to the driver as tuples (``exec_driver_sql``), not through SQLAlchemy's Core insert:
# its per-row, per-column parameter handling (40 columns, three JSON) cost about 27 µs a row of the
# drain thread's Python time, which holds the GIL the gateway's requests need (bench/calibration.py).
# Values are what SQLAlchemy would bind: JSON as text, times as the UTCDateTime type stores them.
LOGGED = ("request_id", "question_index", "question", "question_name", "site", "kind", "options", "probabilities",
          "top_index", "confidence", "bin", "sum_sq", "served", "calibrator_id", "cal_top_index", "cal_confidence",
          "cal_bin", "cal_sum_sq", "cached", "model_group", "model_id", "model", "model_version", "api_key",
          "team_id", "user", "input_digest", "created_at")
JSON_COLUMNS = frozenset({"options", "probabilities", "served"})
SQLITE_TIME = "%Y-%m-%d %H:%M:%S.%f"  # SQLAlchemy's SQLite DateTime storage format (naive UTC)


@functools.cache
def _driver_insert(dialect: str) -> str:
    columns = ", ".join(f'"{name}"' for name in LOGGED)
    marks = ", ".join("?" if dialect == "sqlite" else f"${i}" for i in range(1, len(LOGGED) + 1))
    return f"INSERT INTO decisions ({columns}) VALUES ({marks}) ON CONFLICT (request_id, question_index) DO NOTHING"


def _driver_row(decision: Mapping[str, Any], request_id: str, when: Any) -> tuple[Any, ...]:
    values = {**decision, "request_id": request_id, "created_at": when}
    out = []
    for name in LOGGED:
        value = values.get(name)
        if name in JSON_COLUMNS:
            value = None if value is None else orjson.dumps(value).decode()
        elif name == "cached":
            value = bool(value)
        out.append(value)
    return tuple(out)


async def insert_decisions(conn: Any, dialect: str, extras: Mapping[str, Mapping[str, Any]],
                           times: Mapping[str, dt.datetime]) -> int:
    """Insert the decisions and inputs of the requests in ``extras`` (request id -> its extras); returns the
    decisions inserted."""
    rows: list[tuple[Any, ...]] = []
    inputs: list[dict[str, Any]] = []
    for request_id in sorted(extras):
        found = extras[request_id]
        when = utc(times[request_id])
        stamp = when.astimezone(dt.UTC).replace(tzinfo=None).strftime(SQLITE_TIME) if dialect == "sqlite" else when
        for decision in found.get("decisions") or ():
            rows.append(_driver_row(decision, request_id, stamp))
        captured = found.get("decision_input")
        if captured is not None:
            inputs.append({"request_id": request_id, "content": captured["content"], "created_at": when})
    if rows:
        await conn.exec_driver_sql(_driver_insert(dialect), rows)
    if inputs:
        await conn.execute(_insert(dialect, decision_inputs, ("request_id",)), inputs)
    return len(rows)
