"""Thresholds from outcomes: the least confidence at which answers are right often enough. Pure math.

A user who acts on an answer only when its confidence (the top option's probability, calibrated or
not) is at least ``t`` wants the accuracy of those answers to reach a target, and as many answers as
possible above ``t``. ``for_accuracy(points, target)`` takes the decisions as (confidence, right,
weight) and returns the lowest threshold whose answers at or above it reach ``target`` accuracy, with
what it keeps (their share and count); None when no threshold does (or fewer than ``min_weight`` of
them remain). Ties count together: a threshold keeps every decision of its confidence. The accuracy
above a threshold need not rise with it, so every distinct confidence is tried, highest first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


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
