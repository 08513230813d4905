"""The seeds' refusals, from the side of what must still pass: each new rule refuses exactly its case,
and what the real clients (typesafe-sdk, openai) legitimately send is accepted. The refused cases
themselves are rows of tests/malformed_cases.py (run here and over HTTP)."""

from __future__ import annotations

import pytest

from tests.malformed_cases import nested, oa, s1, user
from tests.translators.helpers import openai_body
from translators import openai, systemone
from translators.errors import RequestInvalid


def s1_problems(body: dict) -> list[tuple[str, ...]]:
    with pytest.raises(RequestInvalid) as caught:
        systemone.parse_request(body, None)
    _, envelope = systemone.render_error(caught.value)
    return [tuple(str(p) for p in entry["loc"]) for entry in envelope["detail"]]


def oa_param(body: dict) -> str:
    with pytest.raises(RequestInvalid) as caught:
        openai.parse_request(body, None)
    return openai.render_error(caught.value)[1]["error"]["param"]


# ----------------------------------------------------------------------------------- System One


def test_what_typesafe_sdk_sends_is_accepted():
    # wire-formats.md 1.4, the exact body the SDK produces (None inside criteria kept)
    req = systemone.parse_request({
        "state": "I was charged twice.", "model": "jev-latest",
        "questions": {
            "billing": {"type": "noul", "instructions": "Is this about billing?"},
            "billing2": {"type": "noul", "criteria": {"true": "yes desc"}},
            "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset"}},
            "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["Can wait", "This week", "Today"]},
            "raw": {"type": "choice", "criteria": {"a": None, "b": None}},
        }}, None)
    assert [q.id for q in req.questions] == ["billing", "billing2", "tone", "urgency", "raw"]


def test_levels_may_be_any_non_blank_json_and_labels_any_one_line_text():
    req = systemone.parse_request(s1(questions={
        "urgency": {"type": "score", "criteria": [0, False, {"level": "low"}, ["a", None], "top"]},
        "tone": {"type": "choice", "criteria": {"calm": None, "Calm down": None, "Ça va": None, "👩‍💻": None,
                                                "true": None, "True story": None}},
        "n": {"type": "noul", "instructions": "x", "criteria": {"true": None, "false": "no"}},
    }), None)
    assert len(req.questions[0].levels) == 5 and len(req.questions[1].options) == 6


def test_decisions_only_fields_are_refused_unless_null_and_sglang_extensions_pass():
    req = systemone.parse_request(s1(temperature=None, prompt_format_version=None, return_prompt_token_ids=None,
                                     chat_template_kwargs={"enable_thinking": False}, custom="kept"), None)
    assert req.extra == {"temperature": None, "prompt_format_version": None, "return_prompt_token_ids": None,
                         "chat_template_kwargs": {"enable_thinking": False}, "custom": "kept"}
    problems = s1_problems(s1(temperature=1.0, return_prompt_token_ids=True))
    assert problems == [("body", "temperature"), ("body", "return_prompt_token_ids")]


def test_every_bad_level_and_label_is_reported_together_naming_each():
    problems = s1_problems(s1(questions={
        "urgency": {"type": "score", "criteria": [None, "ok", ""]},
        "tone": {"type": "choice", "criteria": {"Calm": None, "calm": None, "a\tb": None, "ok": None}},
    }))
    assert problems == [("body", "questions", "urgency", "score", "criteria", "0"),
                        ("body", "questions", "urgency", "score", "criteria", "2"),
                        ("body", "questions", "tone", "choice", "criteria", "calm"),
                        ("body", "questions", "tone", "choice", "criteria", "a\tb")]


def test_the_null_level_message_names_the_field_and_the_rule():
    with pytest.raises(RequestInvalid) as caught:
        systemone.parse_request(s1(questions={"urgency": {"type": "score", "criteria": ["low", None]}}), None)
    status, envelope = systemone.render_error(caught.value)
    assert status == 422
    assert envelope["detail"] == [{"loc": ["body", "questions", "urgency", "score", "criteria", 1],
                                   "msg": "questions.urgency.criteria[1] is null; every level needs a description "
                                          "(a string, an object or an array).", "type": "blank"}]


# ----------------------------------------------------------------------------------- OpenAI


def test_what_the_openai_sdk_sends_is_accepted():
    # wire-formats.md 4.2, the probe's request: typed choices, described levels, an unnamed question
    body = openai_body(input=user({"type": "input_text", "text": "I was charged twice"},
                                  {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "low"}),
                       prompt_cache_key="k", safety_identifier="user-hash-1")
    body["questions"].append({"type": "predicate", "instructions": [{"type": "input_text", "text": "Unnamed"}]})
    req = openai.parse_request(body, None)
    assert [q.name for q in req.questions] == ["dup", "category", "urgency", None]


def test_choice_values_that_differ_by_more_than_case_and_repeated_level_labels_pass():
    openai.parse_request(oa(questions=[
        {"type": "choice", "instructions": "x", "choices": [{"value": v} for v in ("Yes", "yes please", True, "no")]},
        {"type": "score", "instructions": "x", "levels": [{"label": "same"}, {"label": "same"}]},
        {"type": "predicate", "name": "same", "instructions": [{"type": "input_text", "text": " "},
                                                                {"type": "input_json", "data": {"k": 1}}]},
        {"type": "predicate", "name": "same", "instructions": "x"},
    ]), None)


@pytest.mark.parametrize("data, refused", [
    (nested(32), False), (nested(33), True),
    ({"v": list(range(9_998))}, False), ({"v": list(range(9_999))}, True),  # the object and the list count too
    ({"t": "x" * (256 * 1024 - 8)}, False), ({"t": "x" * (256 * 1024 - 7)}, True),  # {"t":"..."} is 8 bytes more
    ([{"a": 1}, {"b": [1, 2]}], False),
])
def test_input_json_bounds(data, refused):
    body = oa(input=user({"type": "input_json", "data": data}))
    if refused:
        assert oa_param(body) == "input[0].content[0].data"
    else:
        openai.parse_request(body, None)
