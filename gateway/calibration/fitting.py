"""A site's calibrator, fitted from its outcomes and measured on the ones it did not see: pure, no I/O.

``fit_calibrator(kind, samples)`` takes a site's decisions with their outcomes (``Sample``: the answer's
probabilities as given, the outcome's option, its weight, and the request id and question index that
place it in a split) and

1. refuses fewer than ``MIN_OUTCOMES`` of them (``TooFew``): under that a held-out part of ~15 says
   nothing about a fit, and two parameters could chase noise;
2. splits them by ``split.held_out`` (about 30% held out, the same part on every run and in every
   process, so a refit on more outcomes measures mostly the same decisions);
3. fits on the rest: Platt scaling for a yes/no question (``(P(yes), P(no))``, outcome 0 meaning yes:
   two parameters, so a lean towards yes or no is corrected too), temperature scaling for a choice or
   a score (one parameter over any number of options, keeping their order);
4. measures the held-out part before and after (``measures``: accuracy, Brier, log loss, ECE and its
   bootstrap interval), which is what decides whether the calibrator is worth turning on.

A ``Calibrator`` is the method and its parameters, applied to one answer's probabilities and kept as
JSON (``to_json`` / ``from_json``) in the calibrators table.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

from gateway.calibration import platt, temperature
from gateway.calibration.measures import Decision, ece_interval, measures
from gateway.calibration.split import held_out

MIN_OUTCOMES = 50  # the least samples a fit takes
KINDS = ("yes_no", "choice", "score")
PARAMS = {"temperature": ("beta",), "platt": ("a", "b")}

Method = Literal["temperature", "platt"]


class TooFew(ValueError):
    def __init__(self, count: int, minimum: int = MIN_OUTCOMES) -> None:
        super().__init__(f"{count} outcomes; a fit needs at least {minimum}")
        self.count = count
        self.minimum = minimum


@dataclass(frozen=True)
class Calibrator:
    method: Method
    params: dict[str, float]  # temperature: beta; platt: a, b

    def __post_init__(self) -> None:
        names = PARAMS.get(self.method)
        if names is None:
            raise ValueError(f"method: {self.method!r} is not one of {', '.join(PARAMS)}")
        if sorted(self.params) != sorted(names) or not all(math.isfinite(v) for v in self.params.values()):
            raise ValueError(f"params: {self.method} takes {', '.join(names)}, each a finite number")
        if self.method == "temperature" and self.params["beta"] <= 0:
            raise ValueError(f"params: beta {self.params['beta']} must be positive")

    def apply(self, probabilities: tuple[float, ...]) -> tuple[float, ...]:
        """The calibrated probabilities of one answer (Platt: of a yes/no answer, ``(P(yes), P(no))``)."""
        if self.method == "temperature":
            return temperature.scaled(probabilities, self.params["beta"])
        if len(probabilities) != 2:
            raise ValueError(f"probabilities: Platt scaling takes (P(yes), P(no)), not {len(probabilities)}")
        p = platt.apply(probabilities[0], self.params["a"], self.params["b"])
        return (p, 1.0 - p)

    def to_json(self) -> str:
        return json.dumps({"method": self.method, "params": self.params}, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Calibrator:
        """The calibrator ``to_json`` wrote; ValueError for anything else."""
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("params"), dict):
            raise ValueError("calibrator: an object with a method and params")
        method, params = data.get("method"), data["params"]
        if method not in PARAMS:
            raise ValueError(f"method: {method!r} is not one of {', '.join(PARAMS)}")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in params.values()):
            raise ValueError("params: numbers")
        return cls(cast(Method, method), {str(k): float(v) for k, v in params.items()})


@dataclass(frozen=True)
class Sample:
    probabilities: tuple[float, ...]  # as the provider gave them
    outcome: int  # the index of the option the outcome named (yes/no: 0 is yes)
    weight: float
    request_id: str
    question_index: int


@dataclass(frozen=True)
class Measured:
    n: float  # the weight measured
    accuracy: float
    brier: float
    log_loss: float
    ece: float
    ece_interval: tuple[float, float]


@dataclass(frozen=True)
class FitReport:
    kind: str
    calibrator: Calibrator
    train_n: int  # the samples fitted on
    held_out_n: int  # the samples measured on (``before.n`` and ``after.n``: their weight)
    before: Measured  # the held-out part as answered
    after: Measured  # and calibrated


def measured(decisions: Sequence[Decision]) -> Measured:
    m = measures(decisions)
    return Measured(m.n, m.accuracy, m.brier, m.log_loss, m.ece, ece_interval(m.bins))


def _fit(kind: str, train: Sequence[Sample]) -> Calibrator:
    if kind == "yes_no":
        fitted = platt.fit((s.probabilities[0], s.outcome == 0, s.weight) for s in train)
        return Calibrator("platt", {"a": fitted.a, "b": fitted.b})
    beta = temperature.fit(Decision(s.probabilities, s.outcome, s.weight) for s in train).beta
    return Calibrator("temperature", {"beta": beta})


def fit_calibrator(kind: str, samples: Sequence[Sample]) -> FitReport:
    """The calibrator of a site of ``kind`` (yes_no, choice, score) from its ``samples`` (module docstring)."""
    if kind not in KINDS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(KINDS)}")
    if len(samples) < MIN_OUTCOMES:
        raise TooFew(len(samples))
    for s in samples:
        if not 0 <= s.outcome < len(s.probabilities) or (kind == "yes_no" and len(s.probabilities) != 2):
            raise ValueError(f"sample {s.request_id}/{s.question_index}: outcome {s.outcome} of "
                             f"{len(s.probabilities)} probabilities for a {kind} question")
    parts: tuple[list[Sample], list[Sample]] = ([], [])  # train, held out
    for s in samples:
        parts[held_out(s.request_id, s.question_index)].append(s)
    train, test = parts
    calibrator = _fit(kind, train)
    raw = [Decision(s.probabilities, s.outcome, s.weight) for s in test]
    fixed = [Decision(calibrator.apply(s.probabilities), s.outcome, s.weight) for s in test]
    return FitReport(kind, calibrator, len(train), len(test), measured(raw), measured(fixed))
