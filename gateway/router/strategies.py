"""Choosing one deployment among a group's candidates (pure: the stats come in, a choice goes out).

LiteLLM's strategy names. Before any strategy, candidates are narrowed in this order, each step
only while something is left: not tried yet in this request, not cooling down, under its
``rpm``/``tpm`` cap for the current minute.

* ``simple-shuffle``: random, weighted by ``weight`` (else ``rpm``, else ``tpm``, else equal).
* ``least-busy``: fewest requests in flight.
* ``latency-based-routing``: lowest recent latency; with ``lowest_latency_buffer`` b, any
  deployment within (1 + b) x the lowest is picked at random. Unmeasured ones go first.
* ``usage-based-routing``, ``usage-based-routing-v2``: lowest tokens used this minute.
* ``cost-based-routing``: lowest input price per token (unpriced last).

Ties are broken at random so equal deployments share the load.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from providers.base import Deployment


@dataclass(frozen=True, slots=True)
class Candidate:
    dep: Deployment
    cooling: bool = False
    tried: bool = False
    in_flight: int = 0
    latency_ms: float | None = None
    rpm_used: int = 0
    tpm_used: int = 0
    price: float | None = None  # USD per input token

    @property
    def at_cap(self) -> bool:
        dep = self.dep
        return (dep.rpm is not None and self.rpm_used >= dep.rpm) or (dep.tpm is not None and self.tpm_used >= dep.tpm)


def narrow(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Untried, then healthy, then under cap: each filter applies only while it leaves someone."""
    pool = list(candidates)
    for keep in (lambda c: not c.tried, lambda c: not c.cooling, lambda c: not c.at_cap):
        kept = [c for c in pool if keep(c)]
        if kept:
            pool = kept
    return pool


def choose(strategy: str, candidates: Sequence[Candidate], rng: random.Random,
           lowest_latency_buffer: float = 0.0) -> Candidate:
    pool = narrow(candidates)
    if len(pool) == 1:
        return pool[0]
    if strategy == "least-busy":
        return _lowest(pool, lambda c: c.in_flight, rng)
    if strategy == "latency-based-routing":
        unmeasured = [c for c in pool if c.latency_ms is None]
        if unmeasured:
            return rng.choice(unmeasured)
        best = min(c.latency_ms or 0.0 for c in pool)
        return rng.choice([c for c in pool if (c.latency_ms or 0.0) <= best * (1.0 + lowest_latency_buffer)])
    if strategy in ("usage-based-routing", "usage-based-routing-v2"):
        return _lowest(pool, lambda c: c.tpm_used, rng)
    if strategy == "cost-based-routing":
        return _lowest(pool, lambda c: c.price if c.price is not None else float("inf"), rng)
    return _weighted(pool, rng)


def _lowest(pool: list[Candidate], key, rng: random.Random) -> Candidate:
    best = min(key(c) for c in pool)
    return rng.choice([c for c in pool if key(c) == best])


def _weighted(pool: list[Candidate], rng: random.Random) -> Candidate:
    for field in ("weight", "rpm", "tpm"):
        weights = [_weight(c.dep, field) for c in pool]
        if any(w is not None for w in weights):
            numbers = [w if w is not None else 0.0 for w in weights]
            if sum(numbers) > 0:
                return rng.choices(pool, weights=numbers, k=1)[0]
    return rng.choice(pool)


def _weight(dep: Deployment, field: str) -> float | None:
    value = dep.params.get("weight") if field == "weight" else getattr(dep, field)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return float(value)
