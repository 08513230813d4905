"""gateway/calibration/platt.py: applying by hand, the fit's closed-form cases (a saturated fit matches each
group's smoothed target; separable outcomes stay finite; every answer alike leaves only ``a logit p + b``),
and the fit recovering a known (a, b) from outcomes drawn (seeded) from the answers it should have given."""

from __future__ import annotations

import math
import random

import pytest

from gateway.calibration.platt import apply, fit, logit, sigmoid
from gateway.calibration.temperature import FLOOR, scaled


def test_apply_by_hand():
    assert apply(0.8, 1.0, 0.0) == pytest.approx(0.8)  # the identity
    assert apply(0.8, 2.0, 0.0) == pytest.approx(0.64 / 0.68)  # b = 0: temperature scaling at beta = a
    assert apply(0.8, 2.0, 0.0) == pytest.approx(scaled((0.8, 0.2), 2.0)[0])
    assert apply(0.5, 3.0, math.log(3)) == pytest.approx(0.75)  # logit 0 -> sigmoid(ln 3) = 3/4
    assert apply(0.0, 0.5, 0.0) == pytest.approx(math.sqrt(FLOOR / (1 - FLOOR)) / (1 + math.sqrt(FLOOR / (1 - FLOOR))))
    assert apply(1.0, 1.0, 0.0) == pytest.approx(1 - FLOOR) and apply(1.0, 1.0, 0.0) < 1.0
    assert sigmoid(-800.0) == 0.0 and sigmoid(800.0) == 1.0 and logit(0.5) == 0.0  # no overflow
    with pytest.raises(ValueError, match="not a probability"):
        apply(1.2, 1.0, 0.0)


def test_one_answer_alike_takes_the_smoothed_share_of_yes():
    # 3 yes and 1 no at p = 0.5: targets 4/5 and 1/3, mean 0.6833; logit 0 leaves a alone
    got = fit([(0.5, True, 1.0)] * 3 + [(0.5, False, 1.0)])
    mean_target = (3 * 4 / 5 + 1 / 3) / 4
    assert got.a == 1.0 and got.b == pytest.approx(math.log(mean_target / (1 - mean_target)), rel=1e-9)
    assert got.n == 4 and got.loss_before == pytest.approx(math.log(2))
    assert got.loss_after == pytest.approx(-(3 * math.log(mean_target) + math.log(1 - mean_target)) / 4)
    alike = fit([(0.8, True, 1.0)] * 3 + [(0.8, False, 1.0)])  # singular: only a ln 4 + b is fitted
    assert apply(0.8, alike.a, alike.b) == pytest.approx(mean_target, rel=1e-9)
    assert math.isfinite(alike.a) and abs(alike.a) < 10


def test_two_answers_are_matched_exactly_and_separable_outcomes_stay_finite():
    # two distinct answers: two parameters reach each group's smoothed target
    data = [(0.2, True, 1.0)] + [(0.2, False, 1.0)] * 3 + [(0.7, True, 1.0)] * 4 + [(0.7, False, 1.0)]
    got = fit(data)  # N+ = 5, N- = 4: yes 6/7, no 1/6
    low, high = (1 * 6 / 7 + 3 / 6) / 4, (4 * 6 / 7 + 1 / 6) / 5
    assert apply(0.2, got.a, got.b) == pytest.approx(low, rel=1e-8)
    assert apply(0.7, got.a, got.b) == pytest.approx(high, rel=1e-8)
    # every yes above every no: 6/7 and 1/7, so a = 2 ln 6 / (logit 0.7 - logit 0.2), finite
    separable = fit([(0.2, False, 1.0)] * 5 + [(0.7, True, 1.0)] * 5)
    assert separable.a == pytest.approx(2 * math.log(6) / (math.log(7 / 3) + math.log(4)), rel=1e-6)
    assert apply(0.7, separable.a, separable.b) == pytest.approx(6 / 7, rel=1e-6)
    assert separable.loss_after < separable.loss_before


def test_weights_count_as_repeated_outcomes_and_nothing_fits_the_identity():
    weighted = fit([(0.3, True, 2.0), (0.3, False, 1.0), (0.9, True, 1.0), (0.9, False, 3.0)])
    repeated = fit([(0.3, True, 1.0)] * 2 + [(0.3, False, 1.0), (0.9, True, 1.0)] + [(0.9, False, 1.0)] * 3)
    assert weighted.a == pytest.approx(repeated.a, rel=1e-7) and weighted.b == pytest.approx(repeated.b, abs=1e-7)
    empty = fit([(0.4, True, 0.0)])
    assert (empty.a, empty.b, empty.n) == (1.0, 0.0, 0.0)


def drawn(a: float, b: float, n: int, seed: int) -> list[tuple[float, bool, float]]:
    """Answers ``q`` whose outcomes follow ``apply(q, a, b)``: ``(a, b)`` is the right fix."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        q = rng.uniform(0.02, 0.98)
        out.append((q, rng.random() < apply(q, a, b), 1.0))
    return out


@pytest.mark.parametrize(("a", "b"), [(0.5, 0.3), (2.0, -0.5), (1.0, 0.0)])
def test_the_fit_recovers_the_scaling_the_outcomes_follow(a, b):
    points = drawn(a, b, 20_000, seed=0)
    got = fit(points)
    assert got.a == pytest.approx(a, rel=0.05) and got.b == pytest.approx(b, abs=0.05)
    assert got.loss_after <= got.loss_before + 1e-4  # smoothing by 1/20,000 at most
    if (a, b) != (1.0, 0.0):
        assert got.loss_after < got.loss_before - 0.01
