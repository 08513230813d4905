"""Thresholds from outcomes: the least confidence at which answers are right often enough. Pure math.

A user who acts on an answer only when its confidence (the top option's probability, calibrated or
not) is at least ``t`` wants the accuracy of those answers to reach a target, and as many answers as
possible above ``t``. ``for_accuracy(points, target)`` takes the decisions as (confidence, right,
weight) and returns the lowest threshold whose answers at or above it reach ``target`` accuracy, with
what it keeps (their share and count); None when no threshold does (or fewer than ``min_weight`` of
them remain). Ties count together: a threshold keeps every decision of its confidence. The accuracy
above a threshold need not rise with it, so every distinct confidence is tried, highest first.

``for_target(points, metric, target)`` sets a binary decision instead: act (predict the positive) when
``p >= t``, each point being (the probability of the positive, whether the outcome was positive,
weight), on a target of one of

- **precision**: ``TP / (TP + FP)`` among the points at or above ``t``: the *lowest* ``t`` reaching it
  (the most covered; precision need not rise with ``t`` either, so every level is tried);
- **recall**: ``TP / (TP + FN)``, of all the positives: the *highest* ``t`` reaching it (recall only
  falls as ``t`` rises, so that is the fewest false positives at the target);
- **accuracy**: ``(TP + TN) / all``: the *most accurate* ``t`` of those reaching it, the lowest of equals.

The candidates are the distinct ``p``'s, ties together, with at least ``min_weight`` at or above them.
The ``Choice`` holds the four counts (weights), the three measures, the coverage (the share of the
weight at or above ``t``) and the Wilson interval of the precision; ``evaluate(points, t)`` gives the
same figures at a given ``t``: a threshold chosen on one split, measured on the held-out one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Point:
    confidence: float
    right: bool
    weight: float = 1.0


@dataclass(frozen=True)
class Threshold:
    threshold: float
    accuracy: float  # of the decisions at or above it
    coverage: float  # their share of the weight
    kept: float  # their weight


def for_accuracy(points: Iterable[Point], target: float, min_weight: float = 1.0) -> Threshold | None:
    if not 0.0 < target <= 1.0:
        raise ValueError(f"target: {target} must be an accuracy above 0 and at most 1")
    ordered = sorted((p for p in points if p.weight > 0), key=lambda p: p.confidence, reverse=True)
    total = sum(p.weight for p in ordered)
    best: Threshold | None = None
    kept = right = 0.0
    i = 0
    while i < len(ordered):
        level = ordered[i].confidence
        while i < len(ordered) and ordered[i].confidence == level:  # the ties go in together
            kept += ordered[i].weight
            right += ordered[i].weight * ordered[i].right
            i += 1
        if kept >= min_weight and right / kept >= target:
            best = Threshold(level, right / kept, kept / total, kept)
    return best


Z95 = 1.959963984540054  # the standard normal's 97.5% quantile: a two-sided 95% interval


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``successes / n`` (weights count as trials); (0, 1) for
    no trials. Unlike the normal interval it stays in [0, 1] and is not empty at 0 or n successes."""
    if n <= 0:
        return (0.0, 1.0)
    share, spread = successes / n, z * z / n
    centre = (share + spread / 2) / (1 + spread)
    half = z * math.sqrt(share * (1 - share) / n + spread / (4 * n)) / (1 + spread)
    return (0.0 if successes <= 0 else max(0.0, centre - half), 1.0 if successes >= n else min(1.0, centre + half))


Metric = Literal["precision", "recall", "accuracy"]
METRICS: tuple[Metric, ...] = ("precision", "recall", "accuracy")


@dataclass(frozen=True)
class Choice:
    """A binary decision "act (predict positive) when p >= threshold", and how it fares on its points."""
    threshold: float
    precision: float  # tp / (tp + fp); 0 where nothing is predicted positive
    recall: float  # tp / (tp + fn); 0 where there is no positive
    accuracy: float  # (tp + tn) / all
    coverage: float  # the share of the weight predicted positive (p >= threshold)
    tp: float
    fp: float
    fn: float
    tn: float
    precision_interval: tuple[float, float]  # wilson(tp, tp + fp)


def _choice(threshold: float, tp: float, fp: float, positives: float, negatives: float) -> Choice:
    total = positives + negatives
    fn, tn = positives - tp, negatives - fp
    return Choice(threshold=threshold, precision=tp / (tp + fp) if tp + fp > 0 else 0.0,
                  recall=tp / positives if positives > 0 else 0.0,
                  accuracy=(tp + tn) / total if total > 0 else 0.0,
                  coverage=(tp + fp) / total if total > 0 else 0.0,
                  tp=tp, fp=fp, fn=fn, tn=tn, precision_interval=wilson(tp, tp + fp))


def _levels(points: Iterable[Point]) -> tuple[list[tuple[float, float, float]], float, float]:
    """Each distinct p, highest first, with the positive and negative weight at or above it (ties
    together); and the positive and negative weight in all."""
    ordered = sorted((p for p in points if p.weight > 0), key=lambda p: p.confidence, reverse=True)
    levels: list[tuple[float, float, float]] = []
    tp = fp = 0.0
    for i, point in enumerate(ordered):
        if point.right:
            tp += point.weight
        else:
            fp += point.weight
        if i == len(ordered) - 1 or ordered[i + 1].confidence != point.confidence:
            levels.append((point.confidence, tp, fp))
    return levels, tp, fp


def evaluate(points: Iterable[Point], threshold: float) -> Choice:
    """The figures of "positive when p >= threshold" over ``points`` (the held-out ones, say)."""
    tp = fp = positives = negatives = 0.0
    for p in points:
        if p.weight <= 0:
            continue
        kept = p.confidence >= threshold
        if p.right:
            positives += p.weight
            tp += p.weight * kept
        else:
            negatives += p.weight
            fp += p.weight * kept
    return _choice(threshold, tp, fp, positives, negatives)


def for_target(points: Iterable[Point], metric: Metric, target: float, min_weight: float = 1.0) -> Choice | None:
    """The threshold of "positive when p >= t" reaching ``target`` on ``metric``, by the module
    docstring's rule; each point is (p_positive, the outcome was positive, weight). None when none does."""
    if metric not in METRICS:
        raise ValueError(f"metric: {metric!r} is not one of {', '.join(METRICS)}")
    if not 0.0 < target <= 1.0:
        raise ValueError(f"target: {target} must be above 0 and at most 1")
    levels, positives, negatives = _levels(points)
    best: Choice | None = None
    for level, tp, fp in levels:  # highest first
        if tp + fp < min_weight:
            continue
        choice = _choice(level, tp, fp, positives, negatives)
        value = getattr(choice, metric)
        if value < target:
            continue
        if metric == "recall":
            return choice  # the highest reaching it
        if best is None or metric == "precision" or value >= best.accuracy:
            best = choice  # going down: the lowest reaching precision; the most accurate, lowest of equals
    return best
