"""Requests for the conformance suite and what the fakes answered to them."""

from __future__ import annotations

import base64
import math

from gateway.config.registry import ModelRegistry
from gateway.pipeline import Decided, decide_once
from gateway.upstream.upstream import Upstream
from providers.base import Deployment
from translators import openai as openai_wire
from translators import systemone as systemone_wire
from translators.ir import DecisionRequest

STATE = "Order #4411: I was charged twice and want one charge refunded today."
S1_QUESTIONS = {
    "refund": {"type": "noul", "instructions": "Is the customer asking for a refund?"},
    "team": {"type": "choice", "instructions": "Which team should handle this?",
             "criteria": {"billing": "payments and refunds", "technical": None, "sales": "pre-sales questions"}},
    "urgency": {"type": "score", "instructions": "How urgent is this?", "criteria": ["can wait", "this week", "today"]},
}
OPENAI_QUESTIONS = [
    {"type": "predicate", "name": "refund", "instructions": "Is the customer asking for a refund?"},
    {"type": "choice", "name": "human", "instructions": "Should a human take over?",
     "choices": [{"value": True, "description": "a person is needed"}, {"value": False}]},
    {"type": "score", "name": "frustration", "instructions": "How frustrated is the customer?",
     "levels": [{"label": "calm"}, {"label": "annoyed"}, {"label": "angry", "description": "hostile"}]},
]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
PNG_DATA_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


def s1_request(questions: dict | None = None, state=STATE, model: str = "group") -> DecisionRequest:
    return systemone_wire.parse_request({"model": model, "state": state, "questions": questions or S1_QUESTIONS})


def openai_request(questions: list | None = None, input=STATE, model: str = "group") -> DecisionRequest:
    return openai_wire.parse_request({"model": model, "input": input, "questions": questions or OPENAI_QUESTIONS})


def noul_questions(n: int) -> dict:
    return {f"q{i:03d}": {"type": "noul", "instructions": f"Is statement {i} true?"} for i in range(n)}


async def decide(dep: Deployment, req: DecisionRequest) -> Decided:
    async with Upstream() as upstream:
        return await decide_once(ModelRegistry.adhoc(dep, environ={}), upstream, req, dep.model_name)


def normalised(values: list[float]) -> list[float]:
    total = math.fsum(values)
    return [v / total for v in values]


def fake_distributions(case_wire: str, fake, recs) -> dict[str, list[float] | str]:
    """question id -> the fake's answer as a normalised distribution (or "refusal"), over recorded calls."""
    out: dict[str, list[float] | str] = {}
    for rec in recs:
        answers = fake.expected_answers(rec)
        if case_wire == "openai":
            for q, a in zip(rec.json["questions"], answers):
                out[q["name"]] = _openai_distribution(a)
        else:
            for qid, a in answers.items():
                out[qid] = _s1_distribution(a)
    return out


def _openai_distribution(a: dict):
    if a["type"] == "refusal":
        return "refusal"
    if a["type"] == "predicate":
        return [a["probability"], 1 - a["probability"]]
    return normalised([p["probability"] for p in a["probabilities"]])


def _s1_distribution(a: dict):
    if a["type"] == "refusal":
        return "refusal"
    if a["type"] == "noul":
        return [a["noul"], 1 - a["noul"]]
    probabilities = a["probabilities"]
    keys = list(probabilities) if a["type"] == "choice" else sorted(probabilities, key=int)
    return normalised([probabilities[k] for k in keys])
