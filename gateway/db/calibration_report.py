"""Calibration reports and fit samples, read from ``decisions`` (their outcomes on the same rows).

``totals(db, filters)`` is the one aggregate the reports need, added up in SQL in one scan: per (model
group, model version, site, bin) the outcomes' weight, their weighted top-1 probability, the weight of
the right ones, and the weighted Brier and log-loss sums, over the raw probabilities' bins and over
the served (calibrated) ones, and each site's kind and question. Bins are additive, so the per-site and
per-model figures are sums of these rows (``gateway/calibration/report.py``), and no decision is loaded into Python.
``samples(db, ...)`` loads the decisions a fit or a threshold needs (capped: the newest first).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from gateway.db.engine import Database
from gateway.db.models import decisions
from gateway.db.outcomes import Scope

MAX_SAMPLES = 200_000
# PostgreSQL's work_mem for the report's query (its transaction only): over 1,000,000 rows and 50 sites the
# planner expects ~26,000 groups and, at the default 4 MB, sorts them on disk (1.2 s) instead of hashing
# them (0.37 s; bench/calibration.py).
REPORT_WORK_MEM = "32MB"


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


@dataclass(frozen=True)
class Totals:
    rows: list[BinRow]  # raw and calibrated bins
    labels: dict[str, tuple[str, str]]  # site -> (kind, a question id or name it was asked as)


def totals_query(filters: Filters) -> Any:
    """Grouped by (group, version, site, raw bin, calibrated bin): the weight and the weighted sums of both."""
    c = decisions.c
    w = c.outcome_weight
    keys = (sa.func.coalesce(c.model_group, ""), sa.func.coalesce(c.model_version, ""), c.site, c.bin, c.cal_bin)
    sums = [sa.func.sum(w), sa.func.sum(w * c.confidence), sa.func.sum(w * c.correct), sa.func.sum(w * c.brier),
            sa.func.sum(w * c.log_loss), sa.func.sum(w * c.cal_confidence), sa.func.sum(w * c.cal_correct),
            sa.func.sum(w * c.cal_brier), sa.func.sum(w * c.cal_log_loss)]
    label = (sa.func.min(c.kind), sa.func.min(sa.func.coalesce(c.question_name, c.question)))
    return sa.select(*keys, *label, *sums).where(*filters.where()).group_by(*keys)


async def totals(db: Database, filters: Filters) -> Totals:
    """The raw and the calibrated bins and the sites' labels in one scan (``totals_query``: at most 15 x 15
    cells a site), split into both sets of bins here."""
    async with db.engine.begin() as conn:
        if db.dialect == "postgresql":  # hash the groups in memory: at the default 4 MB it sorted on disk (3x slower)
            await conn.exec_driver_sql(f"SET LOCAL work_mem = '{REPORT_WORK_MEM}'")
        found = (await conn.execute(totals_query(filters))).all()
    cells: dict[tuple[str, str, str, bool, int], list[float]] = {}
    labels: dict[str, tuple[str, str]] = {}
    for group, version, site, raw_bin, cal_bin, kind, question, *values in found:
        n, *rest = (float(v or 0.0) for v in values)
        for calibrated, bin_, parts in ((False, raw_bin, rest[:4]), (True, cal_bin, rest[4:])):
            cell = cells.setdefault((group, version, site, calibrated, int(bin_)), [0.0] * 5)
            for i, v in enumerate((n, *parts)):
                cell[i] += v
        known = labels.get(site)
        labels[site] = (kind, question) if known is None else (min(known[0], kind), min(known[1], question))
    rows = [BinRow(*key, *cell) for key, cell in sorted(cells.items())]
    return Totals(rows, labels)


async def bin_totals(db: Database, filters: Filters) -> list[BinRow]:
    """Per (group, version, site, bin), for the raw and the calibrated probabilities (``totals``)."""
    return (await totals(db, filters)).rows


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


async def options_of_site(db: Database, filters: Filters) -> list[Any]:
    """The options of the (one) site the filters name, as its newest decision logged them."""
    c = decisions.c
    query = sa.select(c.options).where(*filters.where()).order_by(c.created_at.desc()).limit(1)
    async with db.engine.connect() as conn:
        found = (await conn.execute(query)).scalar()
    return list(found or [])
