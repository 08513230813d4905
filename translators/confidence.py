"""TypeSafe Jev confidence formulas (wire-formats.md section 3.1) and probability helpers."""

from __future__ import annotations

import math
from collections.abc import Sequence


def normalise(probabilities: Sequence[float]) -> list[float]:
    """Rescale to sum to 1 (uniform when all are zero). Inputs must be finite and >= 0."""
    n = len(probabilities)
    if n == 0:
        return []
    total = math.fsum(probabilities)
    if total <= 0:
        return [1.0 / n] * n
    out = [p / total for p in probabilities]
    # Put the remaining rounding error on the largest entry so the sum is 1 within 1e-12.
    drift = 1.0 - math.fsum(out)
    if drift:
        top = max(range(n), key=out.__getitem__)
        out[top] = min(1.0, max(0.0, out[top] + drift))
    return out


def choice_confidence(probabilities: Sequence[float]) -> float:
    """(n * p_max - 1) / (n - 1) over normalised p; 1.0 for a single option."""
    p = normalise(probabilities)
    n = len(p)
    if n <= 1:
        return 1.0
    return min(1.0, max(0.0, (n * max(p) - 1.0) / (n - 1.0)))


def score_confidence(probabilities: Sequence[float]) -> float:
    """max(0, 1 - d / D): d the expected distance from the mode, D the same for a uniform distribution."""
    p = normalise(probabilities)
    n = len(p)
    if n <= 1:
        return 1.0
    mode = max(range(n), key=lambda i: (p[i], -i))
    d = math.fsum(pi * abs(i - mode) for i, pi in enumerate(p))
    centre = (n - 1) / 2.0
    uniform = math.fsum(abs(i - centre) for i in range(n)) / n
    return min(1.0, max(0.0, 1.0 - d / uniform))


def expected_score(probabilities: Sequence[float]) -> float:
    """Sum of i * p_i."""
    return math.fsum(i * p for i, p in enumerate(probabilities))


def confidence_or_jev(kind: str, probabilities: Sequence[float], given: float | None) -> float:
    """The confidence an upstream gave, or the Jev formula of a ``choice`` or ``score`` answer."""
    if given is not None:
        return given
    return (choice_confidence if kind == "choice" else score_confidence)(probabilities)

