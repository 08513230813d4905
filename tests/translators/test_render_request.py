"""IR -> upstream bodies: OpenAI (LiteLLM 3.2 rules) and System One (LiteLLM 3.1 rules), rule by rule."""

from __future__ import annotations

import base64

import pytest

from tests.translators.helpers import JPEG_BYTES, PNG_BYTES, PNG_DATA_URL, openai_body, systemone_body
from translators import openai, systemone
from translators.errors import Unsupported


def s1(questions: dict, state="hi", **extra) -> object:
    return systemone.parse_request(systemone_body(questions=questions, state=state, **extra), None)


def test_system_one_to_openai_defaults_and_folding():
    req = s1({
        "refund": {"type": "noul", "criteria": {"true": "asks for money back", "false": "anything else"}},
        "both": {"type": "noul", "instructions": "Refund?", "criteria": {"true": None, "false": "no"}},
        "c": {"type": "choice", "criteria": {"true": None, "b": {"why": "json"}}},
        "s": {"type": "score", "instructions": {"ask": "how"}, "criteria": ["low", {"lvl": "high"}]},
    })
    body = openai.render_request(req, "gpt-6-luna")
    assert body["model"] == "gpt-6-luna" and body["input"] == "hi"
    refund, both, choice, score = body["questions"]
    assert refund == {"type": "predicate", "name": "refund",
                      "instructions": "Answer true when: asks for money back\n\nAnswer false when: anything else"}
    assert both["instructions"] == "Refund?\n\nAnswer false when: no"
    assert choice == {"type": "choice", "name": "c", "instructions": "Which choice best fits the input?",
                      "choices": [{"value": "true"}, {"value": "b", "description": '{"why": "json"}'}]}
    assert score == {"type": "score", "name": "s", "instructions": '{"ask": "how"}',
                     "levels": [{"label": "low"}, {"label": '{"lvl": "high"}'}]}
    assert "safety_identifier" not in body


def test_default_instructions_for_every_kind():
    req = s1({"p": {"type": "noul", "criteria": {"true": "x"}},
              "c": {"type": "choice", "criteria": {"a": None, "b": None}},
              "s": {"type": "score", "criteria": ["a", "b"]}})
    req = req.with_questions(tuple(q if q.kind != "yes_no" else q.__class__(q.id, q.kind) for q in req.questions))
    questions = openai.render_request(req, "m")["questions"]
    assert [q["instructions"] for q in questions] == [
        "Is this true of the input?", "Which choice best fits the input?", "Which level best fits the input?"]


def test_object_state_is_json_dumped_with_default_separators():
    body = openai.render_request(s1({"q": {"type": "noul", "instructions": "x"}}, state={"ticket": "hi"}), "m")
    assert body["input"] == '{"ticket": "hi"}'


def test_openai_origin_request_goes_back_unchanged():
    original = openai_body(safety_identifier="u", prompt_cache_key="k", prompt_cache_options={"ttl": "30m"},
                           input=[{"role": "user", "content": [{"type": "input_text", "text": "hi"},
                                                               {"type": "input_image", "image_url": PNG_DATA_URL}]}])
    original["questions"][2].pop("name")  # partly named: positions are the internal ids, never sent as names
    req = openai.parse_request(original, None)
    assert [q.id for q in req.questions] == ["0", "1", "2"]
    body = openai.render_request(req, "gpt-upstream")
    assert body["input"] == original["input"]
    assert [q.get("name") for q in body["questions"]] == ["dup", "category", None]
    assert "name" not in body["questions"][2]
    assert body["questions"] == original["questions"]
    assert (body["safety_identifier"], body["prompt_cache_key"], body["prompt_cache_options"]) == \
        ("u", "k", {"ttl": "30m"})


@pytest.mark.parametrize("question, words", [
    ({"type": "choice", "criteria": {"only": None}}, "at least 2 choices"),
    ({"type": "score", "criteria": ["only"]}, "at least 2 levels"),
    ({"type": "box", "instructions": "The dog"}, "no box questions"),
])
def test_what_openai_cannot_ask_is_unsupported(question, words):
    with pytest.raises(Unsupported) as caught:
        openai.render_request(s1({"q": question}), "m")
    assert caught.value.status == 400 and words in caught.value.message and "'q'" in caught.value.message
    status, body = systemone.render_error(caught.value)
    assert status == 400 and words in body["detail"]["message"]


def test_system_one_images_become_one_user_message_in_state_order():
    ref = "<image:5713>"
    other = "<image:9999>"
    assets = {ref: {"format": "png", "data_base64": base64.b64encode(PNG_BYTES).decode()},
              other: {"format": "jpg", "data_base64": base64.b64encode(JPEG_BYTES).decode()}}
    req = s1({"d": {"type": "noul", "instructions": f"damaged? compare {other}"}},
             state=f"photo {ref} caption", assets=assets)
    body = openai.render_request(req, "m")
    assert body["input"] == [{"role": "user", "content": [
        {"type": "input_text", "text": "photo "},
        {"type": "input_image", "image_url": PNG_DATA_URL},
        {"type": "input_text", "text": " caption"},
    ]}]
    jpeg_url = "data:image/jpeg;base64," + base64.b64encode(JPEG_BYTES).decode()
    assert body["questions"][0]["instructions"] == [
        {"type": "input_text", "text": "damaged? compare "}, {"type": "input_image", "image_url": jpeg_url}]


def test_openai_to_system_one_mapping():
    body = openai_body(safety_identifier="u")
    body["questions"].append({"type": "predicate", "name": "parts",
                              "instructions": [{"type": "input_text", "text": "Is it"},
                                               {"type": "input_json", "data": {"a": 1}}]})
    body["questions"][1]["choices"].append({"value": False, "description": "no"})
    s1_body = systemone.render_request(openai.parse_request(body, None), "jev-1.14")
    assert s1_body == {
        "model": "jev-1.14",
        "state": "I was charged twice.",
        "questions": {
            "dup": {"type": "noul", "instructions": "The customer reports a duplicate charge."},
            "category": {"type": "choice", "instructions": "Classify",
                         "criteria": {"billing": "Payments", "true": None, "false": "no"}},
            "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "med: m", "high"]},
            "parts": {"type": "noul", "instructions": 'Is it\n\n{"a":1}'},
        },
    }


def test_openai_images_become_json_assets():
    body = openai_body(input=[{"role": "user", "content": [{"type": "input_text", "text": "see"},
                                                           {"type": "input_image", "image_url": PNG_DATA_URL}]}])
    req = openai.parse_request(body, None)
    s1_body = systemone.render_request(req, "jev")
    ref = next(iter(req.input.images))
    assert s1_body["state"] == f"see\n\n{ref}"
    assert s1_body["assets"] == {ref: {"type": "image", "format": "png",
                                       "data_base64": base64.b64encode(PNG_BYTES).decode()}}


def test_url_images_cannot_go_inline_to_system_one():
    body = openai_body(input=[{"role": "user", "content": [{"type": "input_image",
                                                            "image_url": "https://example.com/a.png"}]}])
    with pytest.raises(Unsupported, match="inline images only"):
        systemone.render_request(openai.parse_request(body, None), "jev")


def test_system_one_origin_questions_go_back_exactly():
    original = systemone_body()
    original["questions"]["urgency"]["criteria"][0] = {"lvl": "wait", "n": None}
    ref = "<image:abc>"
    original["state"] = {"photo": ref}
    original["assets"] = {ref: {"type": "image", "part": "asset-0"}}
    req = systemone.parse_request(original, None, {"asset-0": ("image/png", PNG_BYTES)})
    body = systemone.render_request(req, "jev-upstream")
    assert body["questions"] == original["questions"]
    assert body["state"] == original["state"]
    assert body["assets"] == {ref: {"type": "image", "format": "png",
                                    "data_base64": base64.b64encode(PNG_BYTES).decode()}}


def test_openai_instruction_images_stay_in_the_instructions():
    parts = [{"type": "input_text", "text": "Same swatch?"}, {"type": "input_image", "image_url": PNG_DATA_URL}]
    original = openai_body(questions=[{"type": "predicate", "name": "same", "instructions": parts}])
    req = openai.parse_request(original, None)
    assert openai.render_request(req, "gpt-6-luna") == original
    s1_body = systemone.render_request(req, "jev")
    ref = next(iter(req.input.images))
    assert s1_body["questions"]["same"]["instructions"] == f"Same swatch?\n\n{ref}"
    assert list(s1_body["assets"]) == [ref]
