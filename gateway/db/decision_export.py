"""The decision log read out (``decisions-gateway outcomes export``) and its full captures purged.

``export_rows(db, ...)`` yields one dict per answered question, oldest first, joined with its
outcome (on the same row) and its captured input (``decision_inputs``, where the capture was
``full``), read in keyset pages of ``PAGE`` rows so an export of millions holds one page at a time.
``purge_inputs(db, before)`` deletes the captured inputs older than ``before``; the decisions stay.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import sqlalchemy as sa

from gateway.db.calibration_report import Filters
from gateway.db.engine import Database
from gateway.db.models import decision_inputs, decisions

PAGE = 1000
EXPORTED = ("request_id", "question_index", "question", "question_name", "site", "kind", "options",
            "probabilities", "served", "calibrator_id", "cached", "model_group", "model_id", "model", "model_version",
            "team_id", "user", "input_digest", "created_at", "outcome", "outcome_index", "outcome_weight",
            "observed_at")


async def export_rows(db: Database, filters: Filters,
                      with_outcomes_only: bool = False) -> AsyncIterator[dict[str, Any]]:
    c = decisions.c
    clauses = filters.where(with_outcomes=with_outcomes_only)
    columns = [c[name] for name in EXPORTED] + [decision_inputs.c.content.label("input")]
    after: tuple[Any, ...] | None = None
    while True:
        query = (sa.select(*columns).select_from(decisions.outerjoin(
            decision_inputs, decision_inputs.c.request_id == c.request_id)).where(*clauses))
        if after is not None:
            query = query.where(sa.tuple_(c.created_at, c.request_id, c.question_index) > sa.tuple_(*after))
        query = query.order_by(c.created_at, c.request_id, c.question_index).limit(PAGE)
        async with db.engine.connect() as conn:
            rows = [dict(r._mapping) for r in (await conn.execute(query)).all()]
        for row in rows:
            yield row
        if len(rows) < PAGE:
            return
        last = rows[-1]
        after = (last["created_at"], last["request_id"], last["question_index"])


async def purge_inputs(db: Database, before: dt.datetime) -> int:
    async with db.engine.begin() as conn:
        result = await conn.execute(sa.delete(decision_inputs).where(decision_inputs.c.created_at < before))
    return int(result.rowcount or 0)
