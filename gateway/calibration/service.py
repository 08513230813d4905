"""The calibration operations, shared by the HTTP routes (gateway/admin/calibration.py) and the CLI
(gateway/calibration/cli.py): report, fit, thresholds, rollback, and the active set a gateway applies.

A fit reads the newest decisions with outcomes of a site (or of a whole model group) with their raw
probabilities (a calibrator maps raw answers; the served ones may already be calibrated), splits them
by a hash of (request id, question) into a train and a held-out part (``split.py``), fits temperature
scaling for choice and score questions and Platt scaling for yes/no ones (a group's questions of
several kinds: temperature, which fits every kind), and stores it as the next active version.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Mapping
from typing import Any

from gateway.calibration import fitting, split, thresholds
from gateway.calibration.apply import Active, CalibratorSet
from gateway.calibration.report import build, measures_of
from gateway.db import calibrators as store
from gateway.db.calibration_report import Filters, bin_totals, options_of_site, samples, totals
from gateway.db.engine import Database


class Refused(Exception):
    """An operation that cannot be done for the data there is (too few outcomes, no such option)."""

    def __init__(self, message: str, status: int = 422, code: str = "invalid_value", field: str | None = None):
        super().__init__(message)
        self.message, self.status, self.code, self.field = message, status, code, field


async def report(db: Database, filters: Filters, names: Mapping[str, str]) -> dict[str, Any]:
    found = await totals(db, filters)
    rows, labels = found.rows, found.labels
    shown = {k: v for k, v in (("model_group", filters.model_group), ("model_id", filters.model_id),
                               ("model_version", filters.model_version), ("site", filters.site),
                               ("team_id", filters.team_id),
                               ("start", filters.start.isoformat() if filters.start else None),
                               ("end", filters.end.isoformat() if filters.end else None)) if v is not None}
    return build(rows, labels, names, shown)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


async def fit(db: Database, model_group: str, site: str | None, created_by: str | None) -> dict[str, Any]:
    rows = await samples(db, Filters(model_group=model_group, site=site))
    kinds = {r.kind for r in rows}
    # a site's kind decides (Platt for yes/no); a whole group gets temperature scaling, which fits every kind
    kind = (next(iter(kinds)) if len(kinds) == 1 else "choice") if site else ("score" if kinds == {"score"}
                                                                               else "choice")
    chosen = [fitting.Sample(r.probabilities, r.outcome, r.weight, r.request_id, r.question_index) for r in rows]
    try:
        result = fitting.fit_calibrator(kind, chosen)
    except fitting.TooFew as exc:
        where = f"site {site}" if site else f"model group {model_group!r}"
        raise Refused(f"{where} has {exc.count} outcomes; a fit needs at least {exc.minimum}.", 422,
                      "too_few_outcomes") from None
    summary = _finite(fit_json(result))
    calibrator = result.calibrator
    stored = await store.store(db, model_group=model_group, site=site or "", kind=kind, method=calibrator.method,
                               params=dict(calibrator.params), n=len(chosen), report=summary, created_by=created_by)
    return {"calibrator": stored, **summary}


def fit_json(result: fitting.FitReport) -> dict[str, Any]:
    """What a fit answers (and the stored calibrator keeps as its report): the held-out figures before and after."""
    calibrator = result.calibrator
    shown: dict[str, Any] = {"kind": result.kind, "method": calibrator.method, "params": dict(calibrator.params)}
    if calibrator.method == "temperature":
        shown["temperature"] = 1.0 / calibrator.params["beta"]
    return {**shown, "train_n": result.train_n, "held_out_n": result.held_out_n,
            "held_out": {"before": dataclasses.asdict(result.before), "after": dataclasses.asdict(result.after)}}


GAUGE_WINDOW = dt.timedelta(days=1)


async def gauge_figures(db: Database, names: Mapping[str, str],
                        now: dt.datetime | None = None) -> list[tuple[str, str, str, float, float]]:
    """(model group, site label, raw | calibrated, ECE, Brier) over the last day: each group as a whole
    (site ``all``) and each configured site by its name; no other site, so the labels stay bounded."""
    since = (now or dt.datetime.now(dt.UTC)) - GAUGE_WINDOW
    rows = await bin_totals(db, Filters(start=since))
    parts: dict[tuple[str, str, bool], list[Any]] = {}
    for row in rows:
        parts.setdefault((row.model_group, "all", row.calibrated), []).append(row)
        if row.site in names:
            parts.setdefault((row.model_group, names[row.site], row.calibrated), []).append(row)
    out = []
    for (group, site, calibrated), chosen in sorted(parts.items()):
        figures = measures_of(chosen, interval=False)
        if figures["n"]:
            out.append((group, site, "calibrated" if calibrated else "raw", figures["ece"], figures["brier"]))
    return out


async def rollback(db: Database, model_group: str, site: str | None) -> dict[str, Any]:
    rolled = await store.rollback(db, model_group, site or "")
    if rolled.deactivated is None:
        where = f"site {site}" if site else f"model group {model_group!r}"
        raise Refused(f"{where} has no active calibrator to roll back.", 404, "no_calibrator")
    return {"deactivated": rolled.deactivated, "activated": rolled.activated}


async def load_active(db: Database, into: CalibratorSet) -> int:
    """Fill ``into`` with the database's active calibrators; returns how many."""
    rows = await store.active(db)
    actives = []
    for r in rows:
        calibrator = fitting.Calibrator(r["method"], {k: float(v) for k, v in r["params"].items()})
        actives.append((r["model_group"], r["site"], Active(r["id"], r["version"], calibrator)))
    into.replace(actives)
    return len(actives)


async def threshold(db: Database, filters: Filters, option: Any, metric: str, target: float,
                    probabilities: str) -> dict[str, Any]:
    """The threshold on one option's probability (yes for a yes/no site) that reaches ``target`` of
    ``metric`` on the train part, and its held-out figures."""
    rows = await samples(db, filters)
    if not rows:
        raise Refused("no decisions with outcomes match; post outcomes first.", 422, "too_few_outcomes")
    kinds = {r.kind for r in rows}
    if len(kinds) != 1 or not kinds <= {"yes_no", "choice"}:
        raise Refused("thresholds are for one yes/no site or one option of a choice site; give site.", 422,
                      "invalid_value", "site")
    index = await _option_index(db, filters, option, kinds.pop())
    train: list[thresholds.Point] = []
    held: list[thresholds.Point] = []
    for r in rows:
        p = (r.served if probabilities == "served" else r.probabilities)[index]
        point = thresholds.Point(p, r.outcome == index, r.weight)
        (held if split.held_out(r.request_id, r.question_index) else train).append(point)
    choice = thresholds.for_target(train, metric, target)  # type: ignore[arg-type]
    if choice is None:
        raise Refused(f"no threshold reaches {metric} {target} on the {len(train)} train outcomes.", 422,
                      "unreachable_target")
    tested = thresholds.evaluate(held, choice.threshold)
    return _finite({"metric": metric, "target": target, "probabilities": probabilities, "threshold": choice.threshold,
                    "train": dataclasses.asdict(choice), "held_out": dataclasses.asdict(tested)})


async def _option_index(db: Database, filters: Filters, option: Any, kind: str) -> int:
    if kind == "yes_no":
        if option not in (None, True, "true", "yes"):
            raise Refused("a yes/no site's threshold is on P(yes): leave option out.", 422, "invalid_value", "option")
        return 0
    options = await options_of_site(db, filters)
    for i, value in enumerate(options):
        if value == option and isinstance(value, bool) == isinstance(option, bool):
            return i
    raise Refused(f"option: {str(option)[:80]!r} is not an option of this site; it has "
                  f"{', '.join(repr(o) for o in options[:20])}.", 422, "invalid_value", "option")
