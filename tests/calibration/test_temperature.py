"""gateway/calibration/temperature.py: scaling by hand, and the fit recovering a known temperature from
outcomes drawn (seeded) from the answers it should have given."""

from __future__ import annotations

import math
import random

import pytest

from gateway.calibration.measures import Decision, measures
from gateway.calibration.temperature import BETA_RANGE, fit, scaled


def test_scaling_by_hand():
    assert scaled((0.2, 0.8), 1.0) == pytest.approx((0.2, 0.8))
    assert scaled((0.2, 0.8), 2.0) == pytest.approx((0.04 / 0.68, 0.64 / 0.68))  # p**2, renormalised
    assert scaled((0.2, 0.8), 0.5) == pytest.approx((math.sqrt(0.2) / (math.sqrt(0.2) + math.sqrt(0.8)),
                                                     math.sqrt(0.8) / (math.sqrt(0.2) + math.sqrt(0.8))))
    assert scaled((0.5, 0.3, 0.2), 0.05)[0] < 0.4  # a high temperature: towards uniform, order kept
    softened = scaled((0.0, 1.0), 0.5)
    assert 0.0 < softened[0] < 1e-5 and sum(softened) == pytest.approx(1.0)  # a rounded 0.00 is "almost never"
    with pytest.raises(ValueError, match="positive"):
        scaled((0.5, 0.5), 0.0)


def drawn(beta_true: float, n: int, seed: int) -> list[Decision]:
    """Answers ``p`` whose outcomes follow ``scaled(p, beta_true)``: ``beta_true`` is the right fix."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        raw = [rng.random() + 0.05 for _ in range(3)]
        p = tuple(v / sum(raw) for v in raw)
        truth = scaled(p, beta_true)
        out.append(Decision(p, rng.choices(range(3), weights=truth)[0]))
    return out


@pytest.mark.parametrize("beta_true", [0.5, 1.0, 2.5])
def test_the_fit_recovers_the_temperature_the_outcomes_follow(beta_true):
    decisions = drawn(beta_true, 4000, seed=7)
    fitted = fit(decisions)
    assert fitted.beta == pytest.approx(beta_true, rel=0.15)
    assert fitted.loss_after <= fitted.loss_before + 1e-12 and fitted.n == 4000
    if beta_true != 1.0:  # the fix lowers the loss and the calibration error
        fixed = [Decision(scaled(d.probabilities, fitted.beta), d.outcome) for d in decisions]
        assert fitted.loss_after < fitted.loss_before
        assert measures(fixed).ece < measures(decisions).ece


def test_the_fit_stays_in_range_and_needs_decisions():
    always_right = [Decision((0.6, 0.4), 0)] * 50  # the sharper the better: up to the range's end
    assert fit(always_right).beta == pytest.approx(BETA_RANGE[1], rel=1e-3)
    assert fit([]).beta == 1.0 and fit([]).n == 0
    half = [Decision((0.6, 0.4), 0), Decision((0.6, 0.4), 1)]  # right half the time: towards uniform
    assert fit(half).beta == pytest.approx(BETA_RANGE[0], rel=1e-3)
