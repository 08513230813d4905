"""gateway/calibration/measures.py against closed-form cases: every measure by hand, the bins' edges, the
bootstrap interval's behaviour (it holds the estimate, narrows with more decisions, repeats with its seed)
and its closed forms, where a draw's ECE is a function of one binomial (drawn exactly, or by the normal
approximation), and the exact draws against the binomial's probabilities."""

from __future__ import annotations

import math
import random

import pytest

from gateway.calibration.measures import (  # _exact: the inversion behind ece_interval
    BINS,
    EPSILON,
    Bin,
    Decision,
    _exact,
    bin_index,
    brier,
    ece,
    ece_interval,
    log_loss,
    measures,
    reliability,
    top,
)


def test_top_takes_the_most_probable_and_the_first_on_a_tie():
    assert top((0.2, 0.5, 0.3)) == (1, 0.5)
    assert top((0.4, 0.4, 0.2)) == (0, 0.4)
    with pytest.raises(ValueError, match="at least one"):
        top(())


@pytest.mark.parametrize(("probabilities", "outcome", "expected"), [
    ((1.0, 0.0), 0, 0.0),  # certain and right
    ((1.0, 0.0), 1, 2.0),  # certain and wrong
    ((0.25, 0.25, 0.25, 0.25), 2, 0.75),  # uniform over K: (K-1)/K
    ((0.7, 0.2, 0.1), 0, 0.3 ** 2 + 0.2 ** 2 + 0.1 ** 2),
])
def test_brier(probabilities, outcome, expected):
    assert brier(probabilities, outcome) == pytest.approx(expected)


def test_log_loss_is_the_outcomes_surprise_floored():
    assert log_loss((0.25, 0.25, 0.25, 0.25), 1) == pytest.approx(math.log(4))
    assert log_loss((0.9, 0.1), 0) == pytest.approx(-math.log(0.9))
    assert log_loss((1.0, 0.0), 1) == pytest.approx(-math.log(EPSILON))  # finite


def test_the_bins_are_equal_width_and_hold_one_in_the_last():
    assert BINS == 15
    assert bin_index(0.0) == 0 and bin_index(1.0) == 14 and bin_index(0.999) == 14
    assert bin_index(1 / 15) == 1 and bin_index(1 / 15 - 1e-12) == 0
    assert bin_index(0.5, bins=10) == 5
    with pytest.raises(ValueError, match="not a probability"):
        bin_index(1.01)


def test_a_calibrated_model_has_no_ece_and_an_overconfident_one_its_gap():
    # 10 decisions at 0.8 of which 8 right: calibrated; 10 at 0.9 of which 6 right: 0.3 too sure
    calibrated = [Decision((0.8, 0.2), 0 if i < 8 else 1) for i in range(10)]
    sure = [Decision((0.9, 0.1), 0 if i < 6 else 1) for i in range(10)]
    assert ece(reliability(calibrated)) == pytest.approx(0.0)
    assert ece(reliability(sure)) == pytest.approx(0.3)
    both = measures(calibrated + sure)
    assert both.n == 20 and both.accuracy == pytest.approx(14 / 20)
    assert both.ece == pytest.approx(0.5 * 0.0 + 0.5 * 0.3)
    assert [(b.index, b.n, b.correct_sum) for b in both.bins] == [(12, 10, 8), (13, 10, 6)]
    assert both.bins[0].confidence == pytest.approx(0.8) and both.bins[1].accuracy == pytest.approx(0.6)
    expected_brier = (8 * brier((0.8, 0.2), 0) + 2 * brier((0.8, 0.2), 1)
                      + 6 * brier((0.9, 0.1), 0) + 4 * brier((0.9, 0.1), 1)) / 20
    assert both.brier == pytest.approx(expected_brier)
    expected_loss = (8 * -math.log(0.8) + 2 * -math.log(0.2) + 6 * -math.log(0.9) + 4 * -math.log(0.1)) / 20
    assert both.log_loss == pytest.approx(expected_loss)


def test_weights_count_as_repeated_decisions():
    weighted = measures([Decision((0.9, 0.1), 0, weight=3.0), Decision((0.9, 0.1), 1, weight=1.0)])
    repeated = measures([Decision((0.9, 0.1), 0)] * 3 + [Decision((0.9, 0.1), 1)])
    assert weighted == repeated


def test_no_decision_measures_nothing():
    empty = measures([])
    assert empty.n == 0 and empty.bins == () and empty.ece == 0.0
    assert ece_interval(()) == (0.0, 0.0)


def test_the_interval_holds_the_estimate_narrows_with_more_decisions_and_repeats():
    def bins(n: int) -> tuple[Bin, ...]:  # 0.3 too sure in one bin, calibrated in another, n of each
        return (Bin(12, n, 0.8 * n, 0.8 * n), Bin(13, n, 0.9 * n, 0.6 * n))

    small, large = bins(20), bins(2000)
    point = ece(small)
    low, high = ece_interval(small, draws=400)
    assert low <= point <= high
    wide = high - low
    low_l, high_l = ece_interval(large, draws=400)
    assert low_l <= ece(large) <= high_l and high_l - low_l < wide / 3  # ~1/sqrt(100) as wide
    assert ece_interval(small, draws=400) == (low, high)  # the same seed, the same interval
    assert ece_interval(small, draws=400, seed=1) != (low, high)


def test_the_interval_matches_closed_forms_in_the_exact_and_the_normal_regimes():
    # one bin, calibrated: a draw's ECE is |R - 0.8 n| / n with R ~ Binomial(n, 0.8)
    # n = 20 (variance 3.2: drawn exactly): P(|R - 16| <= 3) = 0.956, <= 4: 0.990, so the top is 4/20;
    # P(R = 16) = 0.218, so the bottom is 0
    low, high = ece_interval((Bin(12, 20, 16.0, 16.0),), draws=4000)
    assert low == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(0.2)
    # n = 10,000 (variance 1,600: the normal approximation): the top is z_0.9875 * 0.004 = 0.00897
    assert ece_interval((Bin(12, 10_000, 8000.0, 8000.0),), draws=4000)[1] == pytest.approx(2.2414 * 0.004, rel=0.05)
    # two bins, always right (confidence 0.7 and 0.9), 8 decisions each: a draw's ECE is 0.3 - 0.2 M / 16 with
    # M ~ Binomial(16, 1/2) the decisions drawn into the 0.9 bin, whose 2.5% and 97.5% quantiles are 4 and 12
    # (P(M <= 3) = 0.011, P(M <= 4) = 0.038; P(M <= 11) = 0.962, P(M <= 12) = 0.989)
    two = (Bin(10, 8, 0.7 * 8, 8.0), Bin(13, 8, 0.9 * 8, 8.0))
    assert ece_interval(two, draws=4000) == pytest.approx((0.3 - 0.2 * 12 / 16, 0.3 - 0.2 * 4 / 16))


def test_the_exact_draws_follow_the_binomial() -> None:
    # the inversion behind the small binomials: cumulative sums of Binomial(3, 1/2) are 1/8, 1/2, 7/8, 1
    tables: dict[int, list[float]] = {}
    terms: dict[int, float] = {}
    assert _exact(tables, terms, 3, 0.5, 0.1) == 0 and tables[3] == [0.125]  # built only as far as needed
    assert [_exact(tables, terms, 3, 0.5, u) for u in (0.125, 0.49, 0.5, 0.874, 0.875, 0.9999)] == [1, 1, 2, 2, 3, 3]
    assert tables[3] == pytest.approx([0.125, 0.5, 0.875, 1.0])
    rng = random.Random(3)  # and 20,000 draws of Binomial(12, 0.3) against its probabilities
    counts = [0] * 13
    for _ in range(20_000):
        counts[_exact(tables, terms, 12, 0.3, rng.random())] += 1
    for k in range(13):
        assert counts[k] / 20_000 == pytest.approx(math.comb(12, k) * 0.3 ** k * 0.7 ** (12 - k), abs=0.01)


def test_an_interval_over_a_thousand_decisions_covers_the_ece_and_repeats():
    rng = random.Random(11)
    decisions = []
    for _ in range(1000):  # over-confident by about 0.1, spread over the upper bins
        c = rng.uniform(0.5, 1.0)
        decisions.append(Decision((c, 1 - c), 0 if rng.random() < c - 0.1 else 1))
    table = reliability(decisions)
    point = ece(table)
    low, high = ece_interval(table)
    assert low < point < high and 0.02 < high - low < 0.15
    assert low < 0.1 < high  # the gap put in
    assert ece_interval(table) == (low, high) and ece_interval(table, seed=5) != (low, high)
