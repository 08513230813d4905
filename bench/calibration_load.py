"""The calibration bench's data: logged decisions made without a gateway, for the ingest and report cases.

``decision_row(...)`` is one ``decisions`` row as the decision log writes it (gateway/decisionlog/rows.py:
the same figures, ``served`` and the ``cal_*`` columns from a calibrator where one applied), optionally
with its outcome's columns as ``record_outcomes`` computes them. ``insert_logged`` puts rows into a
database through ``gateway.db.decisions.insert_decisions`` (what the outbox drain runs), in one
transaction; ``copy_logged`` loads a PostgreSQL database by ``COPY`` (asyncpg's
``copy_records_to_table``), batch by batch, for the million-row report.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.calibration.measures import EPSILON
from gateway.calibration.temperature import scaled
from gateway.db.decisions import insert_decisions
from gateway.db.engine import Database
from gateway.decisionlog.rows import figures

CHOICE_OPTIONS = ["calm", "angry", "neutral", "mixed"]
COPY_BATCH = 50_000
POOL = 4096  # distinct probability vectors per kind the million rows are drawn from
DIGEST = "sha256:" + "5e" * 32  # capture digest (the default): every row keeps one


def site_of(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:32]


def random_probabilities(rng: random.Random, n: int, spread: float = 1.5) -> tuple[float, ...]:
    logits = [rng.gauss(0.0, spread) for _ in range(n)]
    top = max(logits)
    weights = [math.exp(v - top) for v in logits]
    total = sum(weights)
    return tuple(w / total for w in weights)


def outcome_columns(probabilities: Sequence[float], served: Sequence[float] | None, outcome_index: int,
                    outcome: Any, at: dt.datetime) -> dict[str, Any]:
    """What ``record_outcomes`` writes onto a decision row for ``outcome_index`` (weight 1)."""
    out: dict[str, Any] = {"outcome": outcome, "outcome_index": outcome_index, "outcome_weight": 1.0,
                           "observed_at": None, "outcome_at": at}
    for prefix, p in (("", probabilities), ("cal_", served or probabilities)):
        best, _, _, sum_sq = figures(p)
        chosen = float(p[outcome_index])
        out[f"{prefix}correct"] = 1.0 if best == outcome_index else 0.0
        out[f"{prefix}brier"] = max(0.0, sum_sq - 2.0 * chosen + 1.0)
        out[f"{prefix}log_loss"] = -math.log(max(chosen, EPSILON))
    return out


def decision_row(*, question: str, site: str, kind: str, options: list[Any], probabilities: Sequence[float],
                 served: Sequence[float] | None, calibrator_id: int | None, model_group: str,
                 question_index: int = 0, team_id: str | None = None) -> dict[str, Any]:
    """A ``decisions`` row without ``request_id`` and ``created_at`` (``insert_decisions`` adds them)."""
    best, confidence, bin_, sum_sq = figures(probabilities)
    cal = figures(served) if served is not None else (best, confidence, bin_, sum_sq)
    return {"question_index": question_index, "question": question, "question_name": None, "site": site,
            "kind": kind, "options": options, "probabilities": list(probabilities), "top_index": best,
            "confidence": confidence, "bin": bin_, "sum_sq": sum_sq,
            "served": list(served) if served is not None else None, "calibrator_id": calibrator_id,
            "cal_top_index": cal[0], "cal_confidence": cal[1], "cal_bin": cal[2], "cal_sum_sq": cal[3],
            "cached": False, "model_group": model_group, "model_id": f"{model_group}-dep-1",
            "model": "typesafe/jev-latest", "model_version": "jev-1.13-20260917", "api_key": "9f" * 32,
            "team_id": team_id, "user": None, "input_digest": DIGEST}


async def insert_logged(db: Database, requests: Sequence[tuple[str, dt.datetime, list[dict[str, Any]]]]) -> int:
    """Insert (request id, time, its decision rows) as the outbox drain does, in one transaction."""
    extras = {rid: {"decisions": rows} for rid, _, rows in requests}
    times = {rid: when for rid, when, _ in requests}
    async with db.engine.begin() as conn:
        return await insert_decisions(conn, db.dialect, extras, times)


# ---- the million-row report database ------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """How the bulk rows are spread: groups, sites (each in one group), teams, and a span of days."""

    groups: tuple[str, ...] = ("jev", "jev-mini", "triage", "moderation")
    sites: int = 50
    teams: int = 8
    days: int = 30
    calibrated_share: float = 0.4  # of the sites: answered with a calibrator (served and cal_* differ)

    def site_names(self) -> list[str]:
        return [site_of(f"bench-site-{i}") for i in range(self.sites)]

    def group_of(self, index: int) -> str:
        return self.groups[index % len(self.groups)]


@dataclass(frozen=True)
class Pooled:
    kind: str
    options: str  # JSON text
    probabilities: str
    served: str | None
    raw: tuple[int, float, int, float]  # figures of the raw probabilities
    cal: tuple[int, float, int, float]
    outcomes: tuple[tuple[str, float, float, float, float, float, float], ...]  # per outcome index: the
    # outcome's JSON text and (correct, brier, log loss) raw then calibrated


def _pool(rng: random.Random, kind: str, calibrated: bool) -> list[Pooled]:
    shapes: dict[str, tuple[int, list[Any]]] = {"choice": (4, list(CHOICE_OPTIONS)), "yes_no": (2, [True, False]),
                                                "score": (3, [0, 1, 2])}
    n, options = shapes[kind]
    out = []
    for _ in range(POOL):
        p = random_probabilities(rng, n)
        served = scaled(p, 0.6) if calibrated else None
        by_outcome = []
        for k in range(n):
            cols = outcome_columns(p, served, k, options[k], dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
            by_outcome.append((json.dumps(options[k]), cols["correct"], cols["brier"], cols["log_loss"],
                               cols["cal_correct"], cols["cal_brier"], cols["cal_log_loss"]))
        raw = figures(p)
        out.append(Pooled(kind, json.dumps(options), json.dumps(list(p)),
                          json.dumps(list(served)) if served is not None else None, raw,
                          figures(served) if served is not None else raw, tuple(by_outcome)))
    return out


COPY_COLUMNS = ("request_id", "question_index", "question", "question_name", "site", "kind", "options",
                "probabilities", "top_index", "confidence", "bin", "sum_sq", "served", "calibrator_id",
                "cal_top_index", "cal_confidence", "cal_bin", "cal_sum_sq", "cached", "model_group", "model_id",
                "model", "model_version", "api_key", "team_id", "user", "input_digest", "created_at", "outcome",
                "outcome_index", "outcome_weight", "observed_at", "outcome_at", "correct", "brier", "log_loss",
                "cal_correct", "cal_brier", "cal_log_loss")


def bulk_records(n: int, layout: Layout, now: dt.datetime, seed: int = 21) -> Iterator[list[tuple[Any, ...]]]:
    """``n`` decision rows with outcomes as COPY records, ``COPY_BATCH`` at a time: each site a kind (choice,
    yes/no or score, in turn), in one group; the calibrated share of sites with served probabilities;
    times uniform over the last ``layout.days`` days."""
    rng = random.Random(seed)
    kinds = ("choice", "yes_no", "score")
    sites = layout.site_names()
    calibrated = [i < layout.sites * layout.calibrated_share for i in range(layout.sites)]
    pools = {(kind, cal): _pool(rng, kind, cal) for kind in kinds for cal in (False, True)}
    span = layout.days * 86_400.0
    teams = [f"bench-team-{t}" for t in range(layout.teams)]
    batch: list[tuple[Any, ...]] = []
    for i in range(n):
        s = rng.randrange(layout.sites)
        kind = kinds[s % 3]
        entry = pools[(kind, calibrated[s])][rng.randrange(POOL)]
        k = rng.randrange(len(entry.outcomes))
        outcome = entry.outcomes[k]
        created = now - dt.timedelta(seconds=span * (1.0 - (i + rng.random()) / n))  # in time order, as logged
        group = layout.group_of(s)
        batch.append((
            f"bench-{i:08d}", 0, f"q{s}", None, sites[s], kind, entry.options, entry.probabilities,
            entry.raw[0], entry.raw[1], entry.raw[2], entry.raw[3], entry.served, s + 1 if calibrated[s] else None,
            entry.cal[0], entry.cal[1], entry.cal[2], entry.cal[3], False, group, f"{group}-dep-1",
            "typesafe/jev-latest", "jev-1.13-20260917", "9f" * 32, teams[i % layout.teams], None, DIGEST, created,
            outcome[0], k, 1.0, None, created + dt.timedelta(hours=1),
            *outcome[1:]))
        if len(batch) >= COPY_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


async def copy_logged(db: Database, n: int, layout: Layout, now: dt.datetime) -> None:
    """COPY ``n`` rows (``bulk_records``) into ``decisions``, one transaction per batch."""
    for records in bulk_records(n, layout, now):
        async with db.engine.begin() as conn:
            driver: Any = (await conn.get_raw_connection()).driver_connection
            await driver.copy_records_to_table("decisions", records=records, columns=list(COPY_COLUMNS))
