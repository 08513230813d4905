"""Outcomes onto their decisions (``POST /v1/outcomes``, ``decisions-gateway outcomes import``).

``record_outcomes(db, items, scope)`` takes a batch of ``OutcomeIn`` as one unit: it reads the batch's
decisions in one query, checks every item (its request is logged, its question is one of the
request's, by id, name or index; the caller may see the request, per ``Scope``; the outcome is one
of the question's options), and refuses the whole batch at the first item that fails
(``OutcomeRefused``, naming the item, with the status to answer), so nothing is half-written. Then
each outcome is written onto its decision row with its measures against the raw and the served
probabilities (correct or not, Brier, log loss), in one transaction. Posting an outcome again
replaces the one before (idempotent per request and question; a correction wins).
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from gateway.calibration.measures import EPSILON
from gateway.db.engine import Database
from gateway.db.models import decisions

YES_WORDS = {"true": True, "yes": True, "false": False, "no": False}


@dataclass(frozen=True)
class Scope:
    """Whose decisions a caller reaches: every one (a proxy admin, an open gateway), a team's, or a key's."""

    everything: bool = False
    team_id: str | None = None
    api_key: str | None = None

    def allows(self, team_id: str | None, api_key: str | None) -> bool:
        if self.everything:
            return True
        if self.team_id is not None:
            return team_id == self.team_id
        return self.api_key is not None and api_key == self.api_key

    def clause(self) -> Any:
        if self.everything:
            return sa.true()
        if self.team_id is not None:
            return decisions.c.team_id == self.team_id
        return decisions.c.api_key == (self.api_key or "\x00none")


@dataclass(frozen=True)
class OutcomeIn:
    request_id: str
    question: str | int  # the question's id, its OpenAI name, or its index
    outcome: Any  # an option's value, true / false, or a level's index
    weight: float = 1.0
    observed_at: dt.datetime | None = None


class OutcomeRefused(Exception):
    def __init__(self, index: int, field: str, message: str, status: int, code: str):
        super().__init__(message)
        self.index, self.field, self.message, self.status, self.code = index, field, message, status, code


@dataclass(frozen=True)
class Recorded:
    written: int  # outcomes written (a repeat counts: it is written again)
    replaced: int  # of which there was an outcome before


_COLUMNS = ("request_id", "question_index", "question", "question_name", "kind", "options", "probabilities",
            "served", "top_index", "cal_top_index", "sum_sq", "cal_sum_sq", "team_id", "api_key", "outcome_index")


async def record_outcomes(db: Database, items: Sequence[OutcomeIn], scope: Scope,
                          now: dt.datetime | None = None) -> Recorded:
    now = now or dt.datetime.now(dt.UTC)
    ids = sorted({item.request_id for item in items})
    found: dict[str, list[Any]] = {}
    async with db.engine.connect() as conn:
        for start in range(0, len(ids), 1000):
            query = sa.select(*(decisions.c[c] for c in _COLUMNS)).where(
                decisions.c.request_id.in_(ids[start:start + 1000]))
            for logged in (await conn.execute(query)).mappings():
                found.setdefault(logged["request_id"], []).append(logged)
    updates: dict[tuple[str, int], dict[str, Any]] = {}
    replaced = 0
    for index, item in enumerate(items):
        row = _decision_of(index, item, found.get(item.request_id), scope)
        chosen = _option_index(index, item.outcome, row)
        values = {"outcome": item.outcome, "outcome_index": chosen, "outcome_weight": item.weight,
                  "observed_at": item.observed_at, "outcome_at": now, **_scores(row, chosen)}
        updates[(row["request_id"], row["question_index"])] = {
            "rid": row["request_id"], "qi": row["question_index"], **{f"v_{k}": v for k, v in values.items()}}
        replaced += row["outcome_index"] is not None
    params = [updates[k] for k in sorted(updates)]
    async with db.engine.begin() as conn:
        for start in range(0, len(params), 500):
            await conn.execute(_update(), params[start:start + 500])
    return Recorded(len(items), replaced)


def _decision_of(index: int, item: OutcomeIn, rows: list[Mapping[str, Any]] | None,
                 scope: Scope) -> Mapping[str, Any]:
    if not rows:
        raise OutcomeRefused(index, "request_id", f"outcomes[{index}].request_id: no answered decision is logged "
                             f"for request {item.request_id[:80]!r} (an unknown request, one that failed, or one "
                             "not yet drained to the database: its log lags the answer by up to a second)",
                             404, "unknown_request")
    if not scope.allows(rows[0]["team_id"], rows[0]["api_key"]):
        who = "its own team's requests" if scope.team_id is not None else "its own requests (it has no team)"
        raise OutcomeRefused(index, "request_id", f"outcomes[{index}].request_id: request {item.request_id[:80]!r} "
                             f"was made by another team's key; this key may post outcomes only for {who}",
                             403, "not_your_request")
    wanted = item.question
    for row in rows:
        if wanted in (row["question"], row["question_name"]) or wanted == row["question_index"]:
            return row
    names = ", ".join(repr(r["question_name"] or r["question"]) for r in rows[:20])
    raise OutcomeRefused(index, "question", f"outcomes[{index}].question: request {item.request_id[:80]!r} has no "
                         f"answered question {str(wanted)[:80]!r}; it has {names}", 422, "unknown_question")


def _option_index(index: int, outcome: Any, row: Mapping[str, Any]) -> int:
    options: list[Any] = row["options"]
    kind = row["kind"]
    if kind == "yes_no" and isinstance(outcome, str) and outcome.strip().lower() in YES_WORDS:
        outcome = YES_WORDS[outcome.strip().lower()]
    for i, option in enumerate(options):
        if isinstance(option, bool) or isinstance(outcome, bool):
            if option is outcome:
                return i
        elif option == outcome:
            return i
    if kind == "score" and isinstance(outcome, str) and outcome.isdigit() and int(outcome) < len(options):
        return int(outcome)
    what = {"yes_no": "true or false", "score": f"a level index from 0 to {len(options) - 1}"}.get(
        kind, "one of " + ", ".join(repr(o) for o in options[:20]))
    raise OutcomeRefused(index, "outcome", f"outcomes[{index}].outcome: {str(outcome)[:80]!r} is not an option of "
                         f"question {row['question_name'] or row['question']!r}; it takes {what}",
                         422, "invalid_outcome")


def _scores(row: Mapping[str, Any], chosen: int) -> dict[str, float]:
    raw: list[float] = row["probabilities"]
    served: list[float] = row["served"] or raw
    out: dict[str, float] = {}
    for prefix, probabilities, best, sum_sq in (("", raw, row["top_index"], row["sum_sq"]),
                                                ("cal_", served, row["cal_top_index"], row["cal_sum_sq"])):
        p = float(probabilities[chosen])
        out[f"{prefix}correct"] = 1.0 if best == chosen else 0.0
        out[f"{prefix}brier"] = max(0.0, sum_sq - 2.0 * p + 1.0)
        out[f"{prefix}log_loss"] = -math.log(max(p, EPSILON))
    return out


@functools.cache
def _update() -> Any:
    names = ("outcome", "outcome_index", "outcome_weight", "observed_at", "outcome_at", "correct", "brier",
             "log_loss", "cal_correct", "cal_brier", "cal_log_loss")
    return (sa.update(decisions)
            .where(decisions.c.request_id == sa.bindparam("rid"), decisions.c.question_index == sa.bindparam("qi"))
            .values({name: sa.bindparam(f"v_{name}") for name in names}))
