"""How right a model's probabilities are, from decisions and their outcomes: pure math, no I/O.

A *decision* here is one answered question: its probability for each option (choice), for yes and no
(predicate), or for each level (score), and the index of the option the outcome named. The measures:

- **top-1 accuracy**: the share of decisions whose most probable option (the first, on a tie) was the
  outcome;
- **Brier score**: the mean of ``sum_k (p_k - y_k)^2`` with ``y`` the outcome's one-hot vector (0 for a
  certain right answer, 2 for a certain wrong one; ``(K-1)/K`` for a uniform answer over K options);
- **log loss**: the mean of ``-ln p_outcome``, with ``p`` floored at ``EPSILON`` so that a certain wrong
  answer costs ``-ln EPSILON`` (about 34.5), not infinity;
- **ECE** (expected calibration error) over ``BINS`` equal-width bins of the top-1 probability: bin ``b``
  holds the confidences in ``[b/BINS, (b+1)/BINS)``, the last one also 1.0; ECE is
  ``sum_b (n_b / N) |accuracy_b - confidence_b|``, from each bin's weight, confidence sum and correct
  sum (``Bin``), which is what a database can add up per bin (the reports aggregate in SQL and hand
  this module the bins).

Its interval (``ece_interval``) is a bootstrap from the bins alone, since the reports never load the
decisions: each draw redistributes the N decisions over the bins (multinomial on their shares) and the
right ones within each bin (binomial on its accuracy), each bin's mean confidence held; the interval is
the draws' central quantiles. Decisions carry weights (an outcome's ``weight``); a bin's ``n`` is the
sum of its weights, and the bootstrap draws ``round(N)`` decisions.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BINS = 15  # equal-width bins of the top-1 probability: the common choice for ECE
EPSILON = 1e-15  # the least probability log loss takes
DRAWS = 1000  # bootstrap draws of an ECE interval
LEVEL = 0.95  # the interval's coverage


@dataclass(frozen=True)
class Decision:
    probabilities: tuple[float, ...]  # one per option, in the question's order
    outcome: int  # the index of the option the outcome named
    weight: float = 1.0


def top(probabilities: Sequence[float]) -> tuple[int, float]:
    """The most probable option's index (the first, on a tie) and its probability."""
    if not probabilities:
        raise ValueError("probabilities: at least one option")
    best = max(range(len(probabilities)), key=lambda i: (probabilities[i], -i))
    return best, float(probabilities[best])


def brier(probabilities: Sequence[float], outcome: int) -> float:
    return sum((p - (1.0 if i == outcome else 0.0)) ** 2 for i, p in enumerate(probabilities))


def log_loss(probabilities: Sequence[float], outcome: int) -> float:
    return -math.log(max(float(probabilities[outcome]), EPSILON))


def bin_index(confidence: float, bins: int = BINS) -> int:
    """The bin of a top-1 probability: ``[b/bins, (b+1)/bins)``, 1.0 in the last."""
    if not 0.0 <= confidence <= 1.0:
        raise ValueError(f"confidence: {confidence} is not a probability")
    return min(int(confidence * bins), bins - 1)


@dataclass(frozen=True)
class Bin:
    index: int
    n: float  # the decisions' weight in the bin
    confidence_sum: float  # their weighted top-1 probabilities
    correct_sum: float  # the weight of those whose top-1 was the outcome

    @property
    def confidence(self) -> float:
        return self.confidence_sum / self.n if self.n else 0.0

    @property
    def accuracy(self) -> float:
        return self.correct_sum / self.n if self.n else 0.0


@dataclass(frozen=True)
class Measures:
    n: float
    accuracy: float
    brier: float
    log_loss: float
    ece: float
    bins: tuple[Bin, ...]  # the non-empty ones, lowest first (the reliability diagram)


def reliability(decisions: Iterable[Decision], bins: int = BINS) -> tuple[Bin, ...]:
    """Each non-empty bin's totals: what the reports' SQL adds up, here from the decisions themselves."""
    totals: dict[int, list[float]] = {}
    for d in decisions:
        best, confidence = top(d.probabilities)
        row = totals.setdefault(bin_index(confidence, bins), [0.0, 0.0, 0.0])
        row[0] += d.weight
        row[1] += d.weight * confidence
        row[2] += d.weight * (best == d.outcome)
    return tuple(Bin(b, *totals[b]) for b in sorted(totals))


def ece(bins: Iterable[Bin]) -> float:
    bins = list(bins)
    total = sum(b.n for b in bins)
    return sum(b.n / total * abs(b.accuracy - b.confidence) for b in bins) if total else 0.0


def measures(decisions: Iterable[Decision], bins: int = BINS) -> Measures:
    """Every measure over ``decisions`` (weighted means)."""
    decisions = list(decisions)
    total = sum(d.weight for d in decisions)
    if not total:
        return Measures(0.0, 0.0, 0.0, 0.0, 0.0, ())
    table = reliability(decisions, bins)
    return Measures(
        n=total,
        accuracy=sum(b.correct_sum for b in table) / total,
        brier=sum(d.weight * brier(d.probabilities, d.outcome) for d in decisions) / total,
        log_loss=sum(d.weight * log_loss(d.probabilities, d.outcome) for d in decisions) / total,
        ece=ece(table),
        bins=table,
    )


def ece_interval(bins: Sequence[Bin], draws: int = DRAWS, level: float = LEVEL,
                 seed: int = 0) -> tuple[float, float]:
    """The bootstrap interval of ``ece(bins)`` (see the module docstring); ``seed`` makes it repeatable."""
    total = sum(b.n for b in bins)
    n = round(total)
    if n < 1:
        return (0.0, 0.0)
    rng = random.Random(seed)
    shares = [b.n / total for b in bins]
    values = []
    for _ in range(draws):
        counts = _multinomial(rng, n, shares)
        drawn = [Bin(b.index, count, b.confidence * count, _binomial(rng, count, b.accuracy))
                 for b, count in zip(bins, counts, strict=True) if count]
        values.append(ece(drawn))
    values.sort()
    tail = (1.0 - level) / 2
    return (_quantile(values, tail), _quantile(values, 1.0 - tail))


def _multinomial(rng: random.Random, n: int, shares: Sequence[float]) -> list[int]:
    counts, left, rest = [], n, 1.0
    for share in shares[:-1]:
        count = _binomial(rng, left, min(1.0, share / rest) if rest > 0 else 0.0)
        counts.append(count)
        left -= count
        rest -= share
    return [*counts, left]


def _binomial(rng: random.Random, n: int, p: float) -> int:
    """A Binomial(n, p) draw: exact (n Bernoulli draws) up to a few thousand, normal beyond."""
    if n <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    if n <= 5000:
        return sum(rng.random() < p for _ in range(n))
    draw = round(rng.gauss(n * p, math.sqrt(n * p * (1 - p))))
    return min(n, max(0, draw))


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)
