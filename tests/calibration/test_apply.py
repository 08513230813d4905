"""Applying the active calibrators to a result: the site's own first, else the group's; Platt only on yes/no."""

from __future__ import annotations

import pytest

from gateway.calibration import fitting
from gateway.calibration.apply import Active, CalibratorSet, apply
from gateway.calibration.temperature import scaled
from translators.ir import Answer, DecisionResult

RESULT = DecisionResult("m", (Answer("tone", "choice", (0.2, 0.3, 0.5), 0.25), Answer("refund", "yes_no", (0.8, 0.2)),
                              Answer("box", "box", (), 0.9, {"top": 0, "bottom": 1, "left": 0, "right": 1})))


def test_a_groups_platt_calibrator_leaves_its_other_kinds_raw():
    platt = fitting.Calibrator("platt", {"a": 0.5, "b": 0.1})
    calibrated, applied = apply(RESULT, ["s1", "s2", "s3"], "jev", CalibratorSet([("jev", "", Active(9, 1, platt))]))
    assert calibrated.answers[0] == RESULT.answers[0] and calibrated.answers[2] == RESULT.answers[2]
    assert applied is not None and applied.calibrators == (None, 9, None) and applied.raw is RESULT
    assert calibrated.answers[1].probabilities == pytest.approx(platt.apply((0.8, 0.2)))


def test_the_sites_own_calibrator_wins_over_the_groups_and_confidence_follows():
    group = fitting.Calibrator("temperature", {"beta": 0.5})
    own = fitting.Calibrator("temperature", {"beta": 2.0})
    calibrators = CalibratorSet([("jev", "", Active(1, 1, group)), ("jev", "s1", Active(2, 3, own))])
    calibrated, applied = apply(RESULT, ["s1", "s2", "s3"], "jev", calibrators)
    assert applied is not None and applied.calibrators == (2, 1, None)
    tone = calibrated.answers[0]
    assert tone.probabilities == pytest.approx(scaled((0.2, 0.3, 0.5), 2.0))
    assert tone.confidence == pytest.approx((3 * max(tone.probabilities) - 1) / 2)  # Jev's formula, recomputed
    assert calibrated.answers[1].probabilities == pytest.approx(scaled((0.8, 0.2), 0.5))
    other, none = apply(RESULT, ["s1", "s2", "s3"], "other-group", calibrators)
    assert other is RESULT and none is None and not calibrators.covers("other-group")
