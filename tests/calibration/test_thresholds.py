"""gateway/calibration/thresholds.py by hand: the lowest threshold reaching the target, ties together,
a dip in accuracy above a threshold, weights, and no threshold at all."""

from __future__ import annotations

import pytest

from gateway.calibration.thresholds import Point, for_accuracy


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
