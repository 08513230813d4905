"""A question's site is the same on both wires and across inputs, and differs with what the question asks."""

from __future__ import annotations

from gateway.calibration.site import SITE_HEX, sites
from translators import openai as openai_wire
from translators import systemone as systemone_wire


def systemone(state: str, questions: dict) -> tuple[str, ...]:
    return sites(systemone_wire.parse_request({"model": "jev", "state": state, "questions": questions}))


def openai(text: str, questions: list) -> tuple[str, ...]:
    return sites(openai_wire.parse_request({"model": "jev", "input": text, "questions": questions}))


def test_one_site_per_question_on_both_wires_whatever_the_input_id_or_name():
    s1 = systemone("I was charged twice.", {
        "refund": {"type": "noul", "instructions": "Refund?"},
        "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset"}},
        "level": {"type": "score", "instructions": "How?", "criteria": ["low", "high"]}})
    oa = openai("Where is my parcel?", [
        {"type": "predicate", "name": "other-name", "instructions": "Refund?"},
        {"type": "choice", "instructions": "Tone?",
         "choices": [{"value": "calm"}, {"value": "angry", "description": "upset"}]},
        {"type": "score", "name": "level", "instructions": "How?", "levels": [{"label": "low"}, {"label": "high"}]}])
    assert s1 == oa and len(set(s1)) == 3 and all(len(site) == SITE_HEX for site in s1)


def test_what_the_question_asks_changes_its_site():
    refund = {"type": "noul", "instructions": "Refund?"}
    base = systemone("x", {"q": refund})
    assert systemone("x", {"q": {**refund, "instructions": "Refund now?"}}) != base
    tone = {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": None}}
    flipped = {"type": "choice", "instructions": "Tone?", "criteria": {"angry": None, "calm": None}}
    described = {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset"}}
    assert len({systemone("x", {"q": tone}), systemone("x", {"q": flipped}), systemone("x", {"q": described})}) == 3
