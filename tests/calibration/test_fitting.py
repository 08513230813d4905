"""gateway/calibration/fitting.py: the calibrator's application and JSON by hand, the least outcomes, and
fits on synthetic sites whose truth is known. Each answer's true distribution ``q`` is drawn (seeded,
uniform over the simplex of 4 options), the answer reported is ``q ** 2.5`` renormalised (over-confident)
or ``q ** 0.4`` (flattened), and the outcome is drawn from ``q``: the right temperature is the inverse
power. Yes/no answers are ``sigmoid(2.5 logit q + 0.5)``, over-confident and leaning to yes: the right
Platt scaling is ``a = 0.4, b = -0.2``.

The ECE is measured on the held-out ~30%, whose own sampling noise is ~``0.8 sqrt(2 / N)`` for N held-out
decisions over the 15 bins even for a perfect calibrator: ~0.05 at 300 (1,000 samples), so the "<= 0.02
after" claims use 30,000 samples (~9,000 held out, noise ~0.012); the fits themselves are checked at
1,000 too."""

from __future__ import annotations

import json
import random

import pytest

from gateway.calibration import platt
from gateway.calibration.fitting import MIN_OUTCOMES, Calibrator, Sample, TooFew, fit_calibrator
from gateway.calibration.temperature import scaled


def choices(n: int, power: float, seed: int, k: int = 4) -> list[Sample]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        raw = [rng.expovariate(1.0) + 1e-9 for _ in range(k)]  # Dirichlet(1, ..., 1)
        q = [v / sum(raw) for v in raw]
        reported = [v ** power for v in q]
        out.append(Sample(tuple(v / sum(reported) for v in reported), rng.choices(range(k), weights=q)[0], 1.0,
                          f"req-{seed}-{i}", i % 3))
    return out


def yes_no(n: int, seed: int) -> list[Sample]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        q = rng.uniform(0.03, 0.97)
        p = platt.sigmoid(2.5 * platt.logit(q) + 0.5)
        out.append(Sample((p, 1 - p), 0 if rng.random() < q else 1, 1.0, f"yn-{seed}-{i}", 0))
    return out


def test_a_calibrator_applies_and_round_trips_through_json():
    cold = Calibrator("temperature", {"beta": 2.0})
    assert cold.apply((0.2, 0.8)) == pytest.approx((0.04 / 0.68, 0.64 / 0.68))
    assert cold.apply((0.5, 0.3, 0.2)) == pytest.approx(scaled((0.5, 0.3, 0.2), 2.0))
    lean = Calibrator("platt", {"a": 1.0, "b": 0.5})
    p = lean.apply((0.5, 0.5))
    assert p == pytest.approx((platt.sigmoid(0.5), 1 - platt.sigmoid(0.5))) and sum(p) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="P\\(yes\\), P\\(no\\)"):
        lean.apply((0.5, 0.3, 0.2))
    for calibrator in (cold, lean):
        text = calibrator.to_json()
        assert Calibrator.from_json(text) == calibrator and json.loads(text)["method"] == calibrator.method
    assert lean.to_json() == '{"method":"platt","params":{"a":1.0,"b":0.5}}'


@pytest.mark.parametrize("text", ['{"method":"isotonic","params":{}}', '{"method":"platt","params":{"a":1}}',
                                  '{"method":"temperature","params":{"beta":-1}}', '{"method":"temperature"}',
                                  '{"method":"temperature","params":{"beta":"2"}}', "[1]", "not json"])
def test_a_malformed_calibrator_is_refused(text):
    with pytest.raises(ValueError):
        Calibrator.from_json(text)


def test_too_few_outcomes_are_refused_with_both_numbers():
    with pytest.raises(TooFew, match="^47 outcomes; a fit needs at least 50$") as caught:
        fit_calibrator("choice", choices(47, 2.5, seed=1))
    assert (caught.value.count, caught.value.minimum) == (47, MIN_OUTCOMES) and isinstance(caught.value, ValueError)
    assert fit_calibrator("choice", choices(MIN_OUTCOMES, 2.5, seed=1)).train_n > 0
    with pytest.raises(ValueError, match="kind"):
        fit_calibrator("ranking", choices(60, 2.5, seed=1))
    with pytest.raises(ValueError, match="yes_no"):
        fit_calibrator("yes_no", choices(60, 2.5, seed=1))  # 4 probabilities are no yes/no answer


def test_the_split_holds_out_about_30_percent_and_the_report_counts_both_parts():
    report = fit_calibrator("score", choices(1000, 2.5, seed=2))
    assert report.train_n + report.held_out_n == 1000 and 250 < report.held_out_n < 350
    assert report.before.n == report.after.n == report.held_out_n
    low, high = report.before.ece_interval
    assert low <= report.before.ece <= high and report.kind == "score"
    assert fit_calibrator("score", choices(1000, 2.5, seed=2)) == report  # the same split and fit every run


@pytest.mark.parametrize("power", [2.5, 0.4])
def test_the_fit_recovers_the_temperature_from_a_thousand_samples(power):
    report = fit_calibrator("choice", choices(1000, power, seed=4))
    assert report.calibrator.method == "temperature"
    assert report.calibrator.params["beta"] == pytest.approx(1 / power, rel=0.1)
    assert report.after.log_loss < report.before.log_loss and report.after.ece < report.before.ece


@pytest.mark.parametrize("power", [2.5, 0.4])
def test_the_fit_calibrates_the_held_out_part(power):
    report = fit_calibrator("choice", choices(30_000, power, seed=0))
    assert report.calibrator.params["beta"] == pytest.approx(1 / power, rel=0.05)
    assert report.before.ece >= 0.08 and report.after.ece <= 0.02
    assert report.after.log_loss < report.before.log_loss and report.after.brier < report.before.brier
    assert report.after.accuracy == report.before.accuracy  # a temperature never changes the top option
    assert report.after.ece_interval[1] < report.before.ece_interval[0]


def test_platt_calibrates_a_yes_no_site():
    report = fit_calibrator("yes_no", yes_no(30_000, seed=0))
    assert report.calibrator.method == "platt"
    assert report.calibrator.params["a"] == pytest.approx(0.4, rel=0.05)
    assert report.calibrator.params["b"] == pytest.approx(-0.2, abs=0.05)
    assert report.before.ece >= 0.08 and report.after.ece <= 0.02
    assert report.after.log_loss < report.before.log_loss
    small = fit_calibrator("yes_no", yes_no(1000, seed=0))
    assert small.calibrator.params["a"] == pytest.approx(0.4, rel=0.1) and small.after.ece < small.before.ece
