"""Temperature scaling of an answer's probabilities, and its fit from outcomes: pure math, no I/O.

A calibrator that works for any provider, whatever it reports: the probabilities ``p`` of one question
(choice options, yes and no, or score levels) become ``softmax(beta * ln p)``, i.e. ``p_k ** beta``
renormalised. ``beta = 1 / T``: above 1 sharpens an under-confident model, below 1 softens an
over-confident one; the order of the options never changes, so the top answer stays the top answer.
A probability under ``FLOOR`` (a provider's rounded 0.00) is taken as ``FLOOR``, in the fit and when
applied: "almost never", which a softer temperature can raise, not "impossible".

``fit(decisions)`` takes the ``beta`` of least weighted log loss over the decisions' outcomes. The loss
is convex in ``beta`` (a log-sum-exp of lines in it, less a line), so its minimum is found by Newton's
method on the derivative within ``BETA_RANGE``, with a bisection step whenever Newton would leave the
bracket; no decision keeps ``beta = 1``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gateway.calibration.measures import Decision

BETA_RANGE = (0.05, 20.0)  # T from 20 (nearly uniform) to 0.05 (nearly one-hot)
FLOOR = 1e-12  # probabilities under it are taken as it
TOLERANCE = 1e-9  # on the derivative of the mean loss
MAX_STEPS = 100


def scaled(probabilities: Sequence[float], beta: float) -> tuple[float, ...]:
    """``probabilities`` at inverse temperature ``beta``, summing to 1."""
    if beta <= 0 or not math.isfinite(beta):
        raise ValueError(f"beta: {beta} must be a positive number")
    if not probabilities:
        raise ValueError("probabilities: at least one option")
    logs = [beta * math.log(max(p, FLOOR)) for p in probabilities]
    top = max(logs)
    weights = [math.exp(v - top) for v in logs]
    total = sum(weights)
    return tuple(w / total for w in weights)


@dataclass(frozen=True)
class Fit:
    beta: float
    n: float  # the decisions' weight
    loss_before: float  # mean log loss at beta = 1
    loss_after: float  # at the fitted beta

    @property
    def temperature(self) -> float:
        return 1.0 / self.beta


def _loss_and_slopes(decisions: Sequence[Decision], beta: float) -> tuple[float, float, float]:
    """The mean loss at ``beta`` and its first and second derivatives."""
    total = loss = first = second = 0.0
    for d in decisions:
        logs = [math.log(max(p, FLOOR)) for p in d.probabilities]
        outcome_log = logs[d.outcome]
        top = max(beta * v for v in logs)
        weights = [math.exp(beta * v - top) for v in logs]
        z = sum(weights)
        mean = sum(w * v for w, v in zip(weights, logs, strict=True)) / z  # E[ln p] under the scaled answer
        spread = sum(w * v * v for w, v in zip(weights, logs, strict=True)) / z - mean * mean
        loss += d.weight * (top + math.log(z) - beta * outcome_log)
        first += d.weight * (mean - outcome_log)
        second += d.weight * max(spread, 0.0)
        total += d.weight
    return loss / total, first / total, second / total


def fit(decisions: Iterable[Decision]) -> Fit:
    """The ``beta`` of least mean log loss over ``decisions`` (see the module docstring)."""
    decisions = [d for d in decisions if d.weight > 0]
    if not decisions:
        return Fit(1.0, 0.0, 0.0, 0.0)
    n = sum(d.weight for d in decisions)
    before = _loss_and_slopes(decisions, 1.0)[0]
    low, high = BETA_RANGE
    beta = 1.0
    for _ in range(MAX_STEPS):
        _, slope, curve = _loss_and_slopes(decisions, beta)
        if abs(slope) < TOLERANCE:
            break
        if slope > 0:
            high = beta
        else:
            low = beta
        step = beta - slope / curve if curve > 0 else math.nan
        beta = step if low < step < high else (low + high) / 2
        if high - low < TOLERANCE:
            break
    return Fit(beta, n, before, _loss_and_slopes(decisions, beta)[0])
