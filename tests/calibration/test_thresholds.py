"""gateway/calibration/thresholds.py by hand: the lowest threshold reaching the target, ties together,
a dip in accuracy above a threshold, weights, and no threshold at all; Wilson intervals against known
values; and a binary decision's threshold for a precision, recall or accuracy target on a table worked
out by hand (each rule, a dip, ties, weights), with its figures at a given threshold."""

from __future__ import annotations

import math

import pytest

from gateway.calibration.thresholds import Point, evaluate, for_accuracy, for_target, wilson


def points(*rows: tuple[float, int, int]) -> list[Point]:
    """(confidence, right ones, wrong ones) -> that many points."""
    return [Point(c, True) for c, r, _ in rows for _ in range(r)] + [Point(c, False) for c, _, w in rows for _ in range(w)]


def test_the_lowest_threshold_that_reaches_the_target():
    data = points((0.95, 9, 1), (0.8, 7, 3), (0.6, 5, 5))  # above 0.95: 0.9; 0.8: 0.8; 0.6: 0.7
    assert for_accuracy(data, 0.9).threshold == 0.95
    got = for_accuracy(data, 0.8)
    assert got.threshold == 0.8 and got.accuracy == pytest.approx(0.8) and got.kept == 20
    assert got.coverage == pytest.approx(20 / 30)
    assert for_accuracy(data, 0.7).threshold == 0.6 and for_accuracy(data, 0.7).coverage == 1.0
    assert for_accuracy(data, 0.95) is None


def test_a_dip_above_does_not_hide_a_lower_threshold():
    data = points((0.99, 0, 1), (0.9, 9, 0))  # the very top is wrong; with the next level, 9 in 10
    assert for_accuracy(data, 0.9).threshold == 0.9
    assert for_accuracy(data, 0.9, min_weight=11) is None


def test_weights_and_ties():
    assert for_accuracy([Point(0.7, True, 3.0), Point(0.7, False, 1.0)], 0.75).accuracy == pytest.approx(0.75)
    assert for_accuracy([Point(0.7, True), Point(0.7, False)], 0.75) is None  # the tie is kept whole
    assert for_accuracy([], 0.5) is None
    with pytest.raises(ValueError, match="target"):
        for_accuracy([], 1.5)


# for_target and evaluate: a binary decision "positive when p >= t"; Point(p_positive, positive, weight)

def binary(*rows: tuple[float, int, int]) -> list[Point]:
    """(p, positives, negatives) -> that many points."""
    return [Point(p, True) for p, k, _ in rows for _ in range(k)] + [Point(p, False) for p, _, m in rows for _ in range(m)]


# 7 positives, 6 negatives; at or above each level:  tp fp | precision recall accuracy  coverage
TABLE = binary((0.9, 3, 0),  # 3 0 | 1     3/7  9/13   3/13
               (0.7, 1, 1),  # 4 1 | 4/5   4/7  9/13   5/13
               (0.5, 2, 0),  # 6 1 | 6/7   6/7  11/13  7/13
               (0.3, 0, 3),  # 6 4 | 3/5   6/7  8/13  10/13
               (0.1, 1, 2))  # 7 6 | 7/13  1    7/13   1


def test_wilson_against_known_intervals():
    assert wilson(8, 10) == pytest.approx((0.4902, 0.9433), abs=5e-5)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=5e-5)
    low, high = wilson(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=5e-5)  # z^2 / (n + z^2)
    low, high = wilson(10, 10)
    assert high == 1.0 and low == pytest.approx(0.7225, abs=5e-5)
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(8, 10, z=1.0) == pytest.approx(((0.8 + 0.05) / 1.1 - math.sqrt(0.016 + 0.0025) / 1.1,
                                                  (0.8 + 0.05) / 1.1 + math.sqrt(0.016 + 0.0025) / 1.1))


def test_precision_takes_the_lowest_threshold_reaching_it_past_a_dip():
    got = for_target(TABLE, "precision", 0.8)  # 0.9: 1, 0.7: 0.8, 0.5: 6/7 (the dip at 0.7 hides nothing)
    assert got.threshold == 0.5
    assert (got.tp, got.fp, got.fn, got.tn) == (6, 1, 1, 5)
    assert got.precision == pytest.approx(6 / 7) and got.recall == pytest.approx(6 / 7)
    assert got.accuracy == pytest.approx(11 / 13) and got.coverage == pytest.approx(7 / 13)
    assert got.precision_interval == wilson(6, 7)
    assert for_target(TABLE, "precision", 0.9).threshold == 0.9
    assert for_target(TABLE, "precision", 1.0, min_weight=4) is None  # only 3 at 0.9
    assert for_target(TABLE, "precision", 0.5).threshold == 0.1


def test_recall_takes_the_highest_threshold_reaching_it():
    assert for_target(TABLE, "recall", 0.8).threshold == 0.5  # 6/7 from 0.5 down: the highest is 0.5
    assert for_target(TABLE, "recall", 0.5).threshold == 0.7
    assert for_target(TABLE, "recall", 0.9).threshold == 0.1
    assert for_target(TABLE, "recall", 0.4, min_weight=4).threshold == 0.7  # 0.9 keeps only 3
    assert for_target(binary((0.8, 0, 3)), "recall", 0.1) is None  # no positive: no recall


def test_accuracy_takes_the_most_accurate_threshold_and_the_lowest_of_equals():
    got = for_target(TABLE, "accuracy", 0.6)
    assert got.threshold == 0.5 and got.accuracy == pytest.approx(11 / 13)
    assert for_target(TABLE, "accuracy", 0.85) is None  # 11/13 = 0.846 at best
    tie = binary((0.8, 1, 0), (0.6, 1, 1), (0.2, 0, 1))  # 0.8: 3/4, 0.6: 3/4, 0.2: 1/2
    assert for_target(tie, "accuracy", 0.7).threshold == 0.6


def test_ties_of_p_go_together_and_weights_count():
    assert for_target(binary((0.6, 1, 1)), "precision", 1.0) is None  # the positive cannot be taken alone
    weighted = [Point(0.7, True, 3.0), Point(0.7, False, 1.0), Point(0.4, True, 2.0)]
    got = for_target(weighted, "precision", 0.75)
    assert got.threshold == 0.4 and got.precision == pytest.approx(5 / 6) and got.tp == 5.0
    assert for_target(weighted, "recall", 0.5).threshold == 0.7  # 3/5
    assert for_target([], "precision", 0.5) is None
    with pytest.raises(ValueError, match="metric"):
        for_target(TABLE, "f1", 0.5)
    with pytest.raises(ValueError, match="target"):
        for_target(TABLE, "recall", 0.0)


def test_evaluate_gives_the_figures_at_a_threshold():
    assert evaluate(TABLE, 0.5) == for_target(TABLE, "precision", 0.8)
    between = evaluate(TABLE, 0.55)  # 0.9 and 0.7 only
    assert between.threshold == 0.55 and (between.tp, between.fp, between.fn, between.tn) == (4, 1, 3, 5)
    assert between.precision == pytest.approx(0.8) and between.coverage == pytest.approx(5 / 13)
    none = evaluate(TABLE, 0.95)  # nothing predicted positive
    assert (none.precision, none.recall, none.coverage) == (0.0, 0.0, 0.0)
    assert none.accuracy == pytest.approx(6 / 13) and none.precision_interval == (0.0, 1.0)
    assert evaluate([], 0.5).accuracy == 0.0
