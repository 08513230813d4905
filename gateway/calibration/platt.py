"""Platt scaling of a yes/no answer's probabilities, and its fit from outcomes: pure math, no I/O.

A yes/no answer's probability of yes ``p`` becomes ``sigmoid(a * logit(p) + b)`` (and no, one less
that). ``a`` sharpens (above 1) or softens (below 1) the answer as temperature scaling's ``beta`` does
(on a yes/no pair, temperature scaling is exactly Platt scaling with ``b = 0``), and ``b`` moves every
answer towards yes (above 0) or no: the lean to one side that a temperature cannot correct. A
probability under ``FLOOR`` or over ``1 - FLOOR`` (a provider's rounded 0.00 or 1.00) is taken as that
bound, in the fit and when applied, as temperature scaling does.

``fit(points)`` takes the ``(a, b)`` of least weighted log loss over the outcomes, with Platt's smoothed
targets (Platt 1999): a yes counts as ``(N+ + 1) / (N+ + 2)`` of a yes and a no as ``1 / (N- + 2)``,
``N+`` and ``N-`` the weights of the yes and no outcomes, so that separable outcomes (every yes above
every no) still have a finite fit rather than ``a`` running off to infinity. That loss is convex in
``(a, b)`` (the log loss of a line in them), so Newton's method on its 2x2 Hessian finds the minimum from
the identity ``(1, 0)``; each step is halved until the loss falls enough (backtracking, Armijo's rule),
and where the Hessian is singular to rounding (every answer the same, so only ``a * logit(p) + b``
matters) the step is the gradient's over the Hessian's trace, which is Newton's step along the one
direction that moves the loss. The fit reports the mean log loss of the outcomes themselves (not of the
smoothed targets) at the identity and at the fit: ``measures.log_loss``'s figure (on a handful of
outcomes already calibrated, the smoothing can leave the second a little above the first).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gateway.calibration.temperature import FLOOR

TOLERANCE = 1e-10  # on the gradient of the mean smoothed loss
MAX_STEPS = 100  # Newton steps (a handful suffice)
MIN_STEP = 1e-10  # the least share of a Newton step tried before the fit stops where it is
ARMIJO = 1e-4  # the share of the predicted decrease a step must achieve
SINGULAR = 1e-10  # a Hessian whose determinant is under this share of its diagonal's product is singular


@dataclass(frozen=True)
class PlattFit:
    a: float
    b: float
    n: float  # the outcomes' weight
    loss_before: float  # the outcomes' mean log loss at a = 1, b = 0
    loss_after: float  # at the fitted a and b


def logit(p: float) -> float:
    """``ln(p / (1 - p))``, ``p`` floored at ``FLOOR`` and capped at ``1 - FLOOR``."""
    p = min(max(float(p), FLOOR), 1.0 - FLOOR)
    return math.log(p / (1.0 - p))


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def apply(p_yes: float, a: float, b: float) -> float:
    """The calibrated probability of yes."""
    if not 0.0 <= p_yes <= 1.0:
        raise ValueError(f"p_yes: {p_yes} is not a probability")
    return sigmoid(a * logit(p_yes) + b)


def _softplus(z: float) -> float:
    """``ln(1 + e^z)``, without overflow: the log loss of ``sigmoid(z)`` for a no (of ``-z`` for a yes)."""
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


Row = tuple[float, float, float]  # logit(p), the target (a yes's share), the weight's share


def _slopes(rows: Sequence[Row], a: float, b: float) -> tuple[float, float, float, float, float, float]:
    """The mean loss at ``(a, b)``, its gradient and its Hessian: loss, g_a, g_b, h_aa, h_ab, h_bb."""
    loss = g_a = g_b = h_aa = h_ab = h_bb = 0.0
    for x, target, weight in rows:
        z = a * x + b
        p = sigmoid(z)
        loss += weight * (_softplus(z) - target * z)
        residual, curve = weight * (p - target), weight * p * (1.0 - p)
        g_a += residual * x
        g_b += residual
        h_aa += curve * x * x
        h_ab += curve * x
        h_bb += curve
    return loss, g_a, g_b, h_aa, h_ab, h_bb


def _converged(state: tuple[float, ...]) -> bool:
    return max(abs(state[1]), abs(state[2])) < TOLERANCE


def _direction(g_a: float, g_b: float, h_aa: float, h_ab: float, h_bb: float) -> tuple[float, float]:
    """Newton's step, or the gradient's over the trace where the Hessian is singular (module docstring)."""
    det = h_aa * h_bb - h_ab * h_ab
    if det > SINGULAR * h_aa * h_bb and det > 0:
        return (-(h_bb * g_a - h_ab * g_b) / det, -(h_aa * g_b - h_ab * g_a) / det)
    trace = h_aa + h_bb
    return (-g_a / trace, -g_b / trace) if trace > 0 else (-g_a, -g_b)


def _outcome_loss(kept: Sequence[tuple[float, bool, float]], a: float, b: float) -> float:
    """The outcomes' own mean log loss at ``(a, b)``, over (logit(p), the outcome was yes, weight)."""
    total = sum(w for _, _, w in kept)
    return sum(w * _softplus(-(a * x + b) if yes else a * x + b) for x, yes, w in kept) / total


def fit(points: Iterable[tuple[float, bool, float]]) -> PlattFit:
    """The ``(a, b)`` of least smoothed log loss over ``points``, each (p_yes, the outcome was yes,
    weight); ``(1, 0)`` where there are none (see the module docstring)."""
    kept = [(logit(p), bool(yes), float(w)) for p, yes, w in points if w > 0]
    if not kept:
        return PlattFit(1.0, 0.0, 0.0, 0.0, 0.0)
    n = sum(w for _, _, w in kept)
    positives = sum(w for _, yes, w in kept if yes)
    high, low = (positives + 1.0) / (positives + 2.0), 1.0 / (n - positives + 2.0)
    rows = [(x, high if yes else low, w / n) for x, yes, w in kept]
    a, b = 1.0, 0.0
    state = _slopes(rows, a, b)
    for _ in range(MAX_STEPS):
        if _converged(state):
            break
        d_a, d_b = _direction(*state[1:])
        descent, step = state[1] * d_a + state[2] * d_b, 1.0  # < 0: the loss's slope along the step
        while step >= MIN_STEP:
            trial = _slopes(rows, a + step * d_a, b + step * d_b)
            if trial[0] <= state[0] + ARMIJO * step * descent or _converged(trial):
                break  # the loss fell enough, or the gradient is gone (the loss then differs by rounding)
            step /= 2
        else:
            break  # no step lowers the loss: at its minimum, to rounding
        a, b, state = a + step * d_a, b + step * d_b, trial
    return PlattFit(a, b, n, _outcome_loss(kept, 1.0, 0.0), _outcome_loss(kept, a, b))
