"""Shared test helpers: small valid bodies and the Nimble client's strict response checks (wire-formats 2.1)."""

from __future__ import annotations

import base64
import math

PNG_BYTES = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
JPEG_BYTES = b"\xff\xd8\xff\xe0" + b"\x00" * 16
WEBP_BYTES = b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"\x00" * 8
GIF_BYTES = b"GIF89a" + b"\x00" * 16
PNG_DATA_URL = "data:image/png;base64," + base64.b64encode(PNG_BYTES).decode()


def openai_body(**overrides) -> dict:
    body = {
        "model": "gpt-6-luna",
        "input": "I was charged twice.",
        "questions": [
            {"type": "predicate", "name": "dup", "instructions": "The customer reports a duplicate charge."},
            {"type": "choice", "name": "category", "instructions": "Classify",
             "choices": [{"value": "billing", "description": "Payments"}, {"value": True}]},
            {"type": "score", "name": "urgency", "instructions": "How urgent?",
             "levels": [{"label": "low"}, {"label": "med", "description": "m"}, {"label": "high"}]},
        ],
    }
    body.update(overrides)
    return body


def systemone_body(**overrides) -> dict:
    body = {
        "state": "I was charged twice.",
        "model": "jev-latest",
        "questions": {
            "billing": {"type": "noul", "instructions": "Is this about billing?"},
            "billing2": {"type": "noul", "criteria": {"true": "yes desc"}},
            "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset"}},
            "urgency": {"type": "score", "instructions": "How urgent?",
                        "criteria": ["Can wait", "This week", {"lvl": "Today"}]},
        },
    }
    body.update(overrides)
    return body


def assert_nimble_accepts(response: dict, request: dict) -> None:
    """The Nimble SDK's validation of a System One response against its request (refusals excluded)."""
    questions = request["questions"]
    refused = set(response.get("refusals", []))
    assert set(response["answers"]) == set(questions) - refused
    assert isinstance(response["model"], str)
    for key in ("input_tokens", "output_tokens"):
        assert type(response["usage"][key]) is int and response["usage"][key] >= 0
    for qid, answer in response["answers"].items():
        question = questions[qid]
        assert answer["type"] == question["type"]
        if answer["type"] == "noul":
            assert 0.0 <= answer["noul"] <= 1.0
            continue
        if answer["type"] == "box":
            continue
        probabilities = answer["probabilities"]
        assert all(0.0 <= p <= 1.0 for p in probabilities.values())
        assert abs(math.fsum(probabilities.values()) - 1.0) <= 1e-5
        assert isinstance(answer["confidence"], float | int) and 0.0 <= answer["confidence"] <= 1.0
        if answer["type"] == "choice":
            assert list(probabilities) == list(question["criteria"])
            assert answer["choice"] in question["criteria"]
            assert probabilities[answer["choice"]] >= max(probabilities.values()) - 1e-6
        else:
            n = len(question["criteria"])
            assert list(probabilities) == [str(i) for i in range(n)]
            assert answer["legend"] == {str(i): level for i, level in enumerate(question["criteria"])}
            expected = math.fsum(i * probabilities[str(i)] for i in range(n))
            assert abs(answer["score"] - expected) <= 1e-5
