"""A calibration report from the database's bin totals (``gateway/db/calibration_report.py``): pure.

Per site (within its model group) and per model (group and the version the upstream reported),
for the raw probabilities and for the served (calibrated) ones: n (the outcomes' weight), top-1
accuracy, Brier score, log loss, ECE over ``BINS`` equal-width bins of the top-1 probability with its
bootstrap interval (``measures.ece_interval``, seeded, so a report repeats), and the reliability
diagram's bins. Every figure is a sum of the SQL rows; nothing else is read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from gateway.calibration.measures import BINS, LEVEL, Bin, ece, ece_interval
from gateway.db.calibration_report import BinRow

# A report holds an interval per site and per model, raw and calibrated (108 for 50 sites and 4 models);
# 200 draws keep each under 4 ms over 12 bins, and the ends move by about 0.003 (one standard
# deviation over seeds, at n = 1,000; 0.001 at 1,000 draws). A fit's held-out interval, one per fit,
# keeps measures.DRAWS.
REPORT_DRAWS = 200
BINNING = {"bins": BINS, "width": 1.0 / BINS, "of": "the top-1 probability",
           "edges": f"[b/{BINS}, (b+1)/{BINS}), 1.0 in the last",
           "interval": f"bootstrap over the bins, {REPORT_DRAWS} draws, central {LEVEL:.0%}"}


def measures_of(rows: Iterable[BinRow], interval: bool = True) -> dict[str, Any]:
    totals: dict[int, list[float]] = {}
    for r in rows:
        t = totals.setdefault(r.bin, [0.0] * 5)
        for i, v in enumerate((r.n, r.confidence_sum, r.correct_sum, r.brier_sum, r.log_loss_sum)):
            t[i] += v
    bins = [Bin(b, t[0], t[1], t[2]) for b, t in sorted(totals.items()) if t[0] > 0]
    n = sum(b.n for b in bins)
    if not n:
        return {"n": 0.0, "accuracy": None, "brier": None, "log_loss": None, "ece": None, "ece_interval": None,
                "bins": []}
    low, high = ece_interval(bins, draws=REPORT_DRAWS) if interval else (math.nan, math.nan)
    return {
        "n": n, "accuracy": sum(b.correct_sum for b in bins) / n,
        "brier": sum(t[3] for t in totals.values()) / n, "log_loss": sum(t[4] for t in totals.values()) / n,
        "ece": ece(bins), "ece_interval": [low, high],
        "bins": [{"bin": b.index, "lower": b.index / BINS, "upper": (b.index + 1) / BINS, "n": b.n,
                  "confidence": b.confidence, "accuracy": b.accuracy} for b in bins],
    }


def _grouped(rows: Iterable[BinRow], key: Any) -> dict[Any, dict[bool, list[BinRow]]]:
    out: dict[Any, dict[bool, list[BinRow]]] = {}
    for r in rows:
        out.setdefault(key(r), {False: [], True: []})[r.calibrated].append(r)
    return out


def build(rows: list[BinRow], labels: Mapping[str, tuple[str, str]], names: Mapping[str, str],
          filters: Mapping[str, Any]) -> dict[str, Any]:
    """The report: ``labels`` site -> (kind, question), ``names`` site -> its configured name."""
    sites = []
    for (group, site), parts in sorted(_grouped(rows, lambda r: (r.model_group, r.site)).items()):
        kind, question = labels.get(site, ("", ""))
        sites.append({"model_group": group, "site": site, "name": names.get(site), "kind": kind, "question": question,
                      "raw": measures_of(parts[False]), "calibrated": measures_of(parts[True])})
    models = []
    for (group, version), parts in sorted(_grouped(rows, lambda r: (r.model_group, r.model_version)).items()):
        models.append({"model_group": group, "model_version": version or None,
                       "raw": measures_of(parts[False]), "calibrated": measures_of(parts[True])})
    return {"binning": BINNING, "filters": dict(filters), "sites": sites, "models": models}
