"""The active calibrators, and their application to an answer: pure, no I/O.

``CalibratorSet`` holds the active calibrator of each (model group, site), and of each whole group
(site ``""``); the gateway fills it from the ``calibrators`` table at start, after each fit or rollback
in its own process, and every ``REFRESH_S`` seconds (so every process of a deployment follows within
that). ``apply(result, req, sites, group, calibrators)`` replaces each answered question's
probabilities by its calibrator's (the site's own first, else the group's), recomputes the
confidence from them (the expected score and the chosen option are properties of the probabilities,
so they follow) and returns the raw result beside it (``Applied``), which the decision log keeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from translators.confidence import confidence_or_jev
from translators.ir import Answer, DecisionResult

CALIBRATED_KINDS = frozenset({"yes_no", "choice", "score"})
REFRESH_S = 10.0


class Calibrating(Protocol):
    @property
    def method(self) -> str: ...  # temperature (any kind) or platt (yes/no only)

    def apply(self, probabilities: tuple[float, ...]) -> tuple[float, ...]: ...


@dataclass(frozen=True, slots=True)
class Active:
    id: int  # the calibrators row
    version: int
    calibrator: Calibrating


@dataclass(frozen=True, slots=True)
class Applied:
    raw: DecisionResult  # the result before calibration (what the cache and the decision log keep)
    calibrators: tuple[int | None, ...]  # per answer, the calibrator that applied to it


class CalibratorSet:
    def __init__(self, actives: Iterable[tuple[str, str, Active]] = ()) -> None:
        self._by: dict[tuple[str, str], Active] = {}
        self._groups: frozenset[str] = frozenset()
        self.replace(actives)

    def replace(self, actives: Iterable[tuple[str, str, Active]]) -> None:
        by = {(group, site): active for group, site, active in actives}
        self._by, self._groups = by, frozenset(group for group, _ in by)

    def covers(self, group: str | None) -> bool:
        """Whether the group has any calibrator (a request to one that has none skips the step at once)."""
        return group in self._groups

    def find(self, group: str, site: str) -> Active | None:
        return self._by.get((group, site)) or self._by.get((group, ""))

    def __len__(self) -> int:
        return len(self._by)


def calibrated_answer(answer: Answer, probabilities: tuple[float, ...]) -> Answer:
    confidence = None if answer.kind == "yes_no" else confidence_or_jev(answer.kind, probabilities, None)
    return Answer(answer.question_id, answer.kind, probabilities, confidence, answer.box, answer.label_mass,
                  answer.extra)


def apply(result: DecisionResult, sites: Sequence[str], group: str,
          calibrators: CalibratorSet) -> tuple[DecisionResult, Applied | None]:
    """The result with every answer of a calibrated site calibrated (``sites`` in answer order); the
    result itself and None when no calibrator applied to any of them."""
    answers: list[Answer] = []
    used: list[int | None] = []
    for answer, site in zip(result.answers, sites, strict=False):
        active = calibrators.find(group, site) if answer.kind in CALIBRATED_KINDS and answer.probabilities \
            else None
        if active is not None and active.calibrator.method == "platt" and answer.kind != "yes_no":
            active = None  # Platt scaling maps P(yes): a group's fitted on yes/no questions leaves the others raw
        if active is None:
            answers.append(answer)
            used.append(None)
            continue
        answers.append(calibrated_answer(answer, active.calibrator.apply(answer.probabilities)))
        used.append(active.id)
    if not any(i is not None for i in used):
        return result, None
    answers.extend(result.answers[len(answers):])
    used.extend([None] * (len(result.answers) - len(used)))
    calibrated = DecisionResult(result.model, tuple(answers), result.usage, result.extra)
    return calibrated, Applied(result, tuple(used))
