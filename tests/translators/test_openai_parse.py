"""OpenAI Decisions request -> IR, rule by rule."""

from __future__ import annotations

import base64
import hashlib

import pytest

from tests.translators.helpers import PNG_BYTES, PNG_DATA_URL, openai_body
from translators import openai
from translators.errors import RequestInvalid
from translators.ir import Level, Option
from translators.limits import RequestLimits


def test_string_input_is_the_state_and_named_questions_keep_their_names():
    req = openai.parse_request(openai_body(), None)
    assert req.wire == "openai" and req.model == "gpt-6-luna"
    assert req.input.state == "I was charged twice." and req.input.messages is None
    assert [q.id for q in req.questions] == ["dup", "category", "urgency"]
    assert [q.name for q in req.questions] == ["dup", "category", "urgency"]
    assert [q.kind for q in req.questions] == ["yes_no", "choice", "score"]
    assert req.questions[1].options == (Option("billing", "Payments"), Option(True, None))
    assert req.questions[2].levels == (Level("low"), Level("med", "m"), Level("high"))


@pytest.mark.parametrize("names", [["a", None], ["a", "a"], ["1", "0"], [None, None]])
def test_ids_are_positional_unless_every_question_is_uniquely_named(names):
    questions = [{"type": "predicate", "instructions": "x", **({"name": n} if n else {})} for n in names]
    req = openai.parse_request(openai_body(questions=questions), None)
    if names == ["1", "0"]:
        assert [q.id for q in req.questions] == ["1", "0"]  # unique names, kept even when they look positional
    else:
        assert [q.id for q in req.questions] == ["0", "1"]
    assert [q.name for q in req.questions] == names


def test_message_list_state_joins_text_json_and_image_refs():
    url = "https://example.com/cat.jpg"
    messages = [
        {"role": "developer", "content": "Be strict."},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Hello"},
            {"type": "input_image", "image_url": PNG_DATA_URL, "detail": "low"},
            {"type": "input_json", "data": {"order": 4411, "items": [1, 2]}},
            {"type": "input_image", "image_url": url},
        ]},
        {"role": "system", "content": [{"type": "input_text", "text": "World"}]},
    ]
    req = openai.parse_request(openai_body(input=messages), None)
    ref_png = "image-" + hashlib.sha256(PNG_DATA_URL.encode()).hexdigest()[:32]
    ref_url = "image-" + hashlib.sha256(url.encode()).hexdigest()[:32]
    assert req.input.state == "\n\n".join(
        ["Be strict.", "Hello", ref_png, '{"order":4411,"items":[1,2]}', ref_url, "World"])
    assert req.input.messages == messages  # kept exactly as received
    assert list(req.input.images) == [ref_png, ref_url]
    png = req.input.images[ref_png]
    assert (png.data, png.media_type, png.url, png.detail) == (PNG_BYTES, "image/png", None, "low")
    remote = req.input.images[ref_url]
    assert (remote.data, remote.url, remote.media_type) == (None, url, "image/jpeg")


def test_litellm_image_ref_example():
    url = "data:image/png;base64,iVBORw0KGgo="
    body = openai_body(input=[{"role": "user", "content": [{"type": "input_text", "text": "see"},
                                                           {"type": "input_image", "image_url": url}]}])
    req = openai.parse_request(body, None)
    assert req.input.state == "see\n\nimage-e1e10747c2374f621aa59fefede6ef99"


def test_url_safe_base64_is_accepted():
    data = bytes(range(250, 256)) * 3
    url = "data:image/webp;base64," + base64.urlsafe_b64encode(data).decode().rstrip("=")
    body = openai_body(input=[{"role": "user", "content": [{"type": "input_image", "image_url": url}]}])
    image = next(iter(openai.parse_request(body, None).input.images.values()))
    assert image.data == data and image.media_type == "image/webp"


def test_images_in_question_instructions_are_collected():
    parts = [{"type": "input_text", "text": "Is this the same swatch?"},
             {"type": "input_image", "image_url": PNG_DATA_URL}]
    body = openai_body(questions=[{"type": "predicate", "name": "same", "instructions": parts}])
    req = openai.parse_request(body, None)
    assert req.questions[0].instructions == parts
    assert len(req.input.images) == 1


def test_top_level_passthrough_and_accepted_extras():
    body = openai_body(safety_identifier="user-hash-1", prompt_cache_key="k",
                       prompt_cache_options={"mode": "explicit", "ttl": "30m"}, metadata={"team": "x"}, user="u1")
    req = openai.parse_request(body, None)
    assert req.safety_identifier == "user-hash-1" and req.prompt_cache_key == "k"
    assert req.prompt_cache_options == {"mode": "explicit", "ttl": "30m"}
    assert req.extra == {"metadata": {"team": "x"}, "user": "u1"}


def test_box_questions_are_accepted():
    body = openai_body(questions=[{"type": "box", "name": "dog", "instructions": "The dog"}])
    assert openai.parse_request(body, None).questions[0].kind == "box"


def test_limits_are_configurable():
    limits = RequestLimits(max_questions=2, openai_max_levels=12, openai_min_choices=3)
    with pytest.raises(RequestInvalid) as caught:
        openai.parse_request(openai_body(), limits)
    assert caught.value.loc == ("questions",) and "between 1 and 2" in caught.value.message
    eleven = [{"type": "score", "instructions": "x", "levels": [{"label": str(i)} for i in range(11)]}]
    assert openai.parse_request(openai_body(questions=eleven), limits).questions[0].size == 11
    two = [{"type": "choice", "instructions": "x", "choices": [{"value": "a"}, {"value": "b"}]}]
    with pytest.raises(RequestInvalid, match=r"questions\[0\]\.choices must have between 3 and 255 entries, got 2\."):
        openai.parse_request(openai_body(questions=two), limits)


def test_limits_from_config_mapping():
    assert RequestLimits.from_dict({"max_questions": 128}).max_questions == 128
    with pytest.raises(ValueError, match="max_questionz"):
        RequestLimits.from_dict({"max_questionz": 1})


def test_error_envelope_for_the_issue_example():
    questions = [{"type": "predicate", "instructions": "x"}] * 2 + [
        {"type": "choice", "instructions": "x", "choices": [{"value": "a"}]}]
    with pytest.raises(RequestInvalid) as caught:
        openai.parse_request(openai_body(questions=questions), None)
    status, body = openai.render_error(caught.value)
    assert status == 400
    assert body["error"]["param"] == "questions[2].choices"
    assert body["error"]["message"] == "questions[2].choices must have between 2 and 255 entries, got 1."


def test_body_must_be_an_object():
    with pytest.raises(RequestInvalid) as caught:
        openai.parse_request(["not", "an", "object"], None)
    assert caught.value.status == 400 and caught.value.message == "The request body must be a JSON object."


def test_cache_breakpoints_are_accepted_in_input_parts_and_go_back_unchanged():
    body = openai_body(
        input=[{"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Ticket", "prompt_cache_breakpoint": {"mode": "explicit"}},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low",
             "prompt_cache_breakpoint": {"mode": "explicit"}}]}],
        prompt_cache_key="k", prompt_cache_options={"mode": "explicit", "ttl": "30m"})
    req = openai.parse_request(body, None)
    sent = openai.render_request(req, "gpt-6-luna")
    assert sent["input"] == body["input"]
    assert (sent["prompt_cache_key"], sent["prompt_cache_options"]) == ("k", {"mode": "explicit", "ttl": "30m"})
