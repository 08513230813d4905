"""Deterministic answers for fake upstreams: computed from what was asked, so every call is checkable.

Probabilities come from a SHA-256 of the state and the question as the upstream received them;
a test recomputes them from the recorded request. Confidence uses the Jev formulas written out
here independently of translators/confidence.py. A question whose instructions contain ``REFUSE``
is declined: the answer is ``{"type": "refusal"}`` (System One) or ``{"type": "refusal", "name"}`` (OpenAI).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

REFUSE_MARK = "REFUSE"


def seed_for(state: Any, question_id: str, question: Any) -> str:
    return json.dumps([state, question_id, question], sort_keys=True, ensure_ascii=False, default=str)


def raw_probabilities(seed: str, n: int) -> list[float]:
    """n positive weights from the seed's hash, peaked (one option usually dominates), summing to 1."""
    digest = b""
    counter = 0
    while len(digest) < n:
        digest += hashlib.sha256(f"{seed}#{counter}".encode()).digest()
        counter += 1
    weights = [(b / 255.0) ** 4 + 0.01 for b in digest[:n]]
    total = sum(weights)
    return [w / total for w in weights]


def rounded(values: list[float], decimals: int) -> list[float]:
    """Rounded as real upstreams do: each value on its own, so the sum may drift from 1."""
    return [round(v, decimals) for v in values]


def yes_probability(seed: str, decimals: int) -> float:
    return round(raw_probabilities(seed, 2)[0], decimals)


def jev_choice_confidence(p: list[float]) -> float:
    total = sum(p)
    q = [x / total for x in p] if total > 0 else [1 / len(p)] * len(p)
    n = len(q)
    return 1.0 if n == 1 else max(0.0, (n * max(q) - 1) / (n - 1))


def jev_score_confidence(p: list[float]) -> float:
    total = sum(p)
    q = [x / total for x in p] if total > 0 else [1 / len(p)] * len(p)
    n = len(q)
    if n == 1:
        return 1.0
    mode = max(range(n), key=lambda i: (q[i], -i))
    d = sum(pi * abs(i - mode) for i, pi in enumerate(q))
    centre = (n - 1) / 2
    uniform = sum(abs(i - centre) for i in range(n)) / n
    return max(0.0, 1 - d / uniform)


def refuses(question: dict) -> bool:
    return REFUSE_MARK in json.dumps(question.get("instructions"), default=str)


def systemone_answer(state: Any, question_id: str, question: dict, decimals: int) -> dict:
    """The System One answer a Jev-like upstream gives (rounded to ``decimals``)."""
    seed = seed_for(state, question_id, question)
    kind = question.get("type")
    if kind == "noul":
        return {"type": "noul", "noul": yes_probability(seed, decimals)}
    if kind == "choice":
        labels = list(question["criteria"])
        p = rounded(raw_probabilities(seed, len(labels)), decimals)
        best = max(range(len(p)), key=lambda i: (p[i], -i))
        return {"type": "choice", "choice": labels[best], "confidence": round(jev_choice_confidence(p), decimals),
                "probabilities": dict(zip(labels, p))}
    if kind == "score":
        levels = list(question["criteria"])
        p = rounded(raw_probabilities(seed, len(levels)), decimals)
        total = sum(p) or 1.0
        score = sum(i * x / total for i, x in enumerate(p))
        return {"type": "score", "score": round(score, decimals), "confidence": round(jev_score_confidence(p), decimals),
                "legend": {str(i): level for i, level in enumerate(levels)},
                "probabilities": {str(i): x for i, x in enumerate(p)}}
    if kind == "box":
        a, b, c, d = raw_probabilities(seed, 4)
        top, left = round(a / 2, 4), round(b / 2, 4)
        return {"type": "box", "box": {"top": top, "bottom": round(top + 0.5, 4), "left": left,
                                       "right": round(left + 0.5, 4)}, "confidence": round(c, decimals)}
    raise ValueError(f"unknown question type {kind!r}")


def token_count(raw_body: bytes) -> int:
    """A deterministic stand-in for the upstream's tokenizer."""
    return max(1, len(raw_body) // 4)
