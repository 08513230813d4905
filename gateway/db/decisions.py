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

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from gateway.db.models import decision_inputs, decisions

EXTRA_FIELDS = ("decisions", "decision_input")
DECISION_COLUMNS: frozenset[str] = frozenset(str(c.name) for c in decisions.columns)
INSERT_CHUNK = 256  # rows a statement (a request may hold many questions; parameters stay well under limits)


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


async def insert_decisions(conn: Any, dialect: str, extras: Mapping[str, Mapping[str, Any]],
                           times: Mapping[str, dt.datetime]) -> int:
    """Insert the decisions and inputs of the requests in ``extras`` (request id -> its extras); returns the
    decisions inserted."""
    rows: list[dict[str, Any]] = []
    inputs: list[dict[str, Any]] = []
    for request_id in sorted(extras):
        found = extras[request_id]
        when = times[request_id]
        for decision in found.get("decisions") or ():
            rows.append({**decision, "request_id": request_id, "created_at": when})
        captured = found.get("decision_input")
        if captured is not None:
            inputs.append({"request_id": request_id, "content": captured["content"], "created_at": when})
    for start in range(0, len(rows), INSERT_CHUNK):
        await conn.execute(_insert(dialect, decisions, ("request_id", "question_index")),
                           rows[start:start + INSERT_CHUNK])
    if inputs:
        await conn.execute(_insert(dialect, decision_inputs, ("request_id",)), inputs)
    return len(rows)
