"""Calibration reports and fit samples, read from ``decisions`` (their outcomes on the same rows).

``bin_totals(db, filters)`` is the one aggregate the reports need, added up in SQL: per (model group,
model version, site, bin) the outcomes' weight, their weighted top-1 probability, the weight of the
right ones, and the weighted Brier and log-loss sums, once over the raw probabilities' bins and once
over the served (calibrated) ones. Bins are additive, so the per-site and per-model figures are sums of
these rows (``gateway/calibration/report.py``), and no decision is loaded into Python.
``samples(db, ...)`` loads the decisions a fit or a threshold needs (capped: the newest first).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from gateway.db.engine import Database
from gateway.db.models import decisions
from gateway.db.outcomes import Scope

MAX_SAMPLES = 200_000


@dataclass(frozen=True)
class Filters:
    scope: Scope = Scope(everything=True)
    model_group: str | None = None
    model_id: str | None = None  # the deployment
    model_version: str | None = None
    site: str | None = None
    team_id: str | None = None
    start: dt.datetime | None = None
    end: dt.datetime | None = None

    def where(self, with_outcomes: bool = True) -> list[Any]:
        """The filters as clauses; by default only decisions with an outcome."""
        c = decisions.c
        clauses = [self.scope.clause()]
        if with_outcomes:
            clauses.append(c.outcome_index.is_not(None))
        for column, value in ((c.model_group, self.model_group), (c.model_id, self.model_id),
                              (c.model_version, self.model_version), (c.site, self.site), (c.team_id, self.team_id)):
            if value is not None:
                clauses.append(column == value)
        if self.start is not None:
            clauses.append(c.created_at >= self.start)
        if self.end is not None:
            clauses.append(c.created_at < self.end)
        return clauses


@dataclass(frozen=True)
class BinRow:
    model_group: str
    model_version: str
    site: str
    calibrated: bool
    bin: int
    n: float
    confidence_sum: float
    correct_sum: float
    brier_sum: float
    log_loss_sum: float


async def bin_totals(db: Database, filters: Filters) -> list[BinRow]:
    c = decisions.c
    weight = c.outcome_weight
    out: list[BinRow] = []
    async with db.engine.connect() as conn:
        for calibrated, bin_, conf, correct, brier, loss in (
                (False, c.bin, c.confidence, c.correct, c.brier, c.log_loss),
                (True, c.cal_bin, c.cal_confidence, c.cal_correct, c.cal_brier, c.cal_log_loss)):
            keys = (sa.func.coalesce(c.model_group, ""), sa.func.coalesce(c.model_version, ""), c.site, bin_)
            query = (sa.select(*keys, sa.func.sum(weight), sa.func.sum(weight * conf), sa.func.sum(weight * correct),
                               sa.func.sum(weight * brier), sa.func.sum(weight * loss))
                     .where(*filters.where()).group_by(*keys))
            for row in (await conn.execute(query)).all():
                out.append(BinRow(row[0], row[1], row[2], calibrated, int(row[3]), *(float(v or 0.0) for v in row[4:])))
    return out


async def site_labels(db: Database, filters: Filters) -> dict[str, tuple[str, str]]:
    """site -> (kind, a question id or name it was asked as), for the sites the filters reach."""
    c = decisions.c
    query = (sa.select(c.site, sa.func.min(c.kind), sa.func.min(sa.func.coalesce(c.question_name, c.question)))
             .where(*filters.where()).group_by(c.site))
    async with db.engine.connect() as conn:
        return {row[0]: (row[1], row[2]) for row in (await conn.execute(query)).all()}


@dataclass(frozen=True)
class SampleRow:
    request_id: str
    question_index: int
    kind: str
    probabilities: tuple[float, ...]  # raw
    served: tuple[float, ...]  # what the caller got (the raw ones when nothing applied)
    outcome: int
    weight: float


async def samples(db: Database, filters: Filters, limit: int = MAX_SAMPLES) -> list[SampleRow]:
    """The newest ``limit`` decisions with outcomes that the filters reach."""
    c = decisions.c
    query = (sa.select(c.request_id, c.question_index, c.kind, c.probabilities, c.served, c.outcome_index,
                       c.outcome_weight)
             .where(*filters.where()).order_by(c.created_at.desc()).limit(limit))
    async with db.engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    return [SampleRow(r[0], int(r[1]), r[2], tuple(r[3]), tuple(r[4] or r[3]), int(r[5]), float(r[6] or 0.0))
            for r in rows]


async def kinds(db: Database, filters: Filters) -> Sequence[str]:
    c = decisions.c
    async with db.engine.connect() as conn:
        return [r[0] for r in (await conn.execute(sa.select(c.kind).where(*filters.where()).distinct())).all()]


async def options_of_site(db: Database, filters: Filters) -> list[Any]:
    """The options of the (one) site the filters name, as its newest decision logged them."""
    c = decisions.c
    query = sa.select(c.options).where(*filters.where()).order_by(c.created_at.desc()).limit(1)
    async with db.engine.connect() as conn:
        found = (await conn.execute(query)).scalar()
    return list(found or [])
