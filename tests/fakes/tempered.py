"""A TypeSafe-like upstream with a known truth and a known miscalibration, for the calibration tests and benches.

Each (state, question) has a true distribution ``truth(...)``, derived from a SHA-256 of them (so a
test recomputes it), and the fake reports that truth at inverse temperature ``sharpen``: ``p_k ∝
q_k ** sharpen``. ``sharpen = 2.5`` is an overconfident model (temperature 1/2.5), ``1/2.5`` an
under-confident one, 1 a calibrated one. A test draws each outcome from the truth, so a perfect
calibrator is temperature scaling with beta = 1 / sharpen. Probabilities are sent with 6 decimals.
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import Any

from tests.fakes.typesafe import FakeTypeSafe

DECIMALS = 6


def truth(state: Any, question_id: str, n: int) -> list[float]:
    """A true distribution over ``n`` options: softmax of normal draws seeded by the state and question."""
    seed = hashlib.sha256(f"{state}\x00{question_id}".encode()).digest()
    rng = random.Random(seed)
    logits = [rng.gauss(0.0, 1.2) for _ in range(n)]
    top = max(logits)
    weights = [math.exp(v - top) for v in logits]
    total = sum(weights)
    return [w / total for w in weights]


def tempered(q: list[float], sharpen: float) -> list[float]:
    weights = [max(p, 1e-300) ** sharpen for p in q]
    total = sum(weights)
    return [w / total for w in weights]


def draw(q: list[float], rng: random.Random) -> int:
    """An outcome drawn from ``q``."""
    u, acc = rng.random(), 0.0
    for i, p in enumerate(q):
        acc += p
        if u < acc:
            return i
    return len(q) - 1


class TemperedTypeSafe(FakeTypeSafe):
    def __init__(self, api_key: str | None = "ts-tempered", sharpen: float = 1.0) -> None:
        super().__init__(api_key)
        self.sharpen = sharpen

    def expected_from(self, body: dict) -> dict:
        state = self.answer_state(body)
        out = {}
        for qid, question in body["questions"].items():
            kind = question.get("type")
            n = 2 if kind == "noul" else len(question["criteria"])
            p = [round(v, DECIMALS) for v in tempered(truth(state, qid, n), self.sharpen)]
            if kind == "noul":
                out[qid] = {"type": "noul", "noul": p[0]}
            elif kind == "choice":
                labels = list(question["criteria"])
                best = max(range(n), key=lambda i: (p[i], -i))
                out[qid] = {"type": "choice", "choice": labels[best], "probabilities": dict(zip(labels, p, strict=True))}
            else:
                levels = list(question["criteria"])
                out[qid] = {"type": "score", "score": sum(i * v for i, v in enumerate(p)),
                            "legend": {str(i): level for i, level in enumerate(levels)},
                            "probabilities": {str(i): v for i, v in enumerate(p)}}
        return out
