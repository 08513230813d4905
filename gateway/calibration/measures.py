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

A draw costs the same at any N. It is one multinomial over the bins' right and wrong cells (the same
distribution as the bins' counts, then the right ones within each), drawn a cell at a time, each count a
binomial on the cell's share of what the cells before it left; a binomial is exact (by inversion of its
distribution, each table built once per count left and only as far as the draws reach) while its
variance ``n p (1 - p)`` is under ``NORMAL_FROM``, and the normal approximation rounded to the nearest
count beyond, where the two differ by well under the bootstrap's own noise. A draw's ECE is then
``sum_b |right_b - confidence_b * count_b| / N`` (``ece`` of the drawn bins, not built). ``DRAWS`` draws
take ~7 ms over 8 bins and ~13 ms over 15 on a small CPU, at any N, where a Bernoulli draw per decision
took ~2N random calls a draw (a third of a second at N = 1,000).
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BINS = 15  # equal-width bins of the top-1 probability: the common choice for ECE
EPSILON = 1e-15  # the least probability log loss takes
DRAWS = 1000  # bootstrap draws of an ECE interval
LEVEL = 0.95  # the interval's coverage
NORMAL_FROM = 10.0  # a bootstrap binomial of this variance or more is drawn from its normal approximation
NORMAL_BATCH = 256  # standard normals drawn at a time (pairs, by Box-Muller)


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
    cells = _cells(bins, total)
    normals: list[float] = []
    uniform, pop, sqrt, place = rng.random, normals.pop, math.sqrt, bisect.bisect_right  # looked up once
    values = []
    for _ in range(draws):
        left, gap = n, 0.0
        for pair in cells:
            signed = 0.0  # right_b - confidence_b * count_b, as (1 - c) * right - c * wrong
            for q, spread, mirrored, coefficient, tables, terms in pair:
                mean = left * q
                variance = mean * spread
                if variance >= NORMAL_FROM:  # the normal approximation, to the nearest count
                    k = int(mean + (pop() if normals else _normals(rng, normals)) * sqrt(variance) + 0.5)
                    k = 0 if k < 0 else left if k > left else k
                else:  # exact: the uniform draw's place in the cumulative distribution
                    table, u = tables.get(left), uniform()
                    k = place(table, u) if table and u < table[-1] else _exact(tables, terms, left, q, u)
                if mirrored:
                    k = left - k
                left -= k
                signed += coefficient * k
            gap += abs(signed)
        values.append(gap / n)
    values.sort()
    tail = (1.0 - level) / 2
    return (_quantile(values, tail), _quantile(values, 1.0 - tail))


_Cell = tuple[float, float, bool, float, dict[int, list[float]], dict[int, float]]


def _cells(bins: Sequence[Bin], total: float) -> list[list[_Cell]]:
    """Each bin's right and wrong cells, as (q, 1 - q, mirrored, coefficient, tables, terms): a count is a
    binomial on its share ``p`` of what the cells before it left (the last cell takes all that is left),
    drawn as ``q = min(p, 1 - p)`` and mirrored when ``p > 1/2``; it adds ``coefficient * count`` to its
    bin's signed gap; ``tables`` and ``terms`` are its exact draws' (``_exact``), by the count left."""
    shares = [(b.n / total * b.accuracy, 1.0 - b.confidence, b.n / total * (1.0 - b.accuracy), -b.confidence)
              for b in bins]
    flat = [(share, coefficient, i) for i, row in enumerate(shares) for share, coefficient in (row[:2], row[2:])
            if share > 0]
    cells: list[list[_Cell]] = [[] for _ in bins]
    rest = 1.0
    for j, (share, coefficient, i) in enumerate(flat):
        p = 1.0 if j == len(flat) - 1 else min(1.0, share / rest) if rest > 0 else 0.0
        rest -= share
        q = min(p, 1.0 - p)
        cells[i].append((q, 1.0 - q, p > 0.5, coefficient, {}, {}))
    return cells


def _normals(rng: random.Random, into: list[float]) -> float:
    """Standard normals by Box-Muller, ``NORMAL_BATCH`` pairs at a time: returns one, keeps the rest."""
    for _ in range(NORMAL_BATCH):
        radius = math.sqrt(-2.0 * math.log(1.0 - rng.random()))
        angle = math.tau * rng.random()
        into += (radius * math.cos(angle), radius * math.sin(angle))
    return into.pop()


def _exact(tables: dict[int, list[float]], terms: dict[int, float], n: int, q: float, u: float) -> int:
    """A Binomial(n, q) draw by inversion, ``q <= 1/2``: how many of ``P(X <= k)``, ``k = 0, 1, ...``, are at
    or below the uniform ``u``. ``tables[n]`` keeps those sums, extended only as far as a draw reaches
    (the mean, ``n q``, is under ``2 * NORMAL_FROM`` where this is used, so a table stays short), and
    ``terms[n]`` its last term, whence the next: ``P(k) = P(k - 1) * q / (1 - q) * (n - k + 1) / k``."""
    table = tables.setdefault(n, [])
    k = bisect.bisect_right(table, u)
    while k == len(table) and k <= n:
        terms[n] = terms[n] * q / (1.0 - q) * (n - k + 1) / k if k else (1.0 - q) ** n
        table.append((table[-1] if table else 0.0) + terms[n])
        k += u >= table[-1]
    return min(k, n)


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)
