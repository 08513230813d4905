"""System One request -> IR, rule by rule (assets, parts, extras, limits, problems reported together)."""

from __future__ import annotations

import base64

import pytest

from tests.translators.helpers import GIF_BYTES, JPEG_BYTES, PNG_BYTES, WEBP_BYTES, systemone_body
from translators import systemone
from translators.errors import RequestInvalid
from translators.ir import Level, Option
from translators.limits import RequestLimits


def test_questions_state_and_top_level_extras_are_kept():
    body = systemone_body(state={"ticket": "hi", "n": [1, None]}, provider={"order": ["x"]}, images=[])
    req = systemone.parse_request(body, None)
    assert req.wire == "systemone" and req.model == "jev-latest"
    assert req.input.state == {"ticket": "hi", "n": [1, None]} and req.input.messages is None
    assert req.extra == {"provider": {"order": ["x"]}, "images": []}
    assert [q.id for q in req.questions] == ["billing", "billing2", "tone", "urgency"]
    assert [q.kind for q in req.questions] == ["yes_no", "yes_no", "choice", "score"]
    billing2 = req.questions[1]
    assert billing2.criteria == {"true": "yes desc"} and billing2.yes == "yes desc" and billing2.no is None
    tone = req.questions[2]
    assert tone.options == (Option("calm", None), Option("angry", "upset"))
    assert tone.extra == {}
    assert req.questions[3].levels == (Level("Can wait"), Level("This week"), Level({"lvl": "Today"}))
    assert all(q.name is None for q in req.questions)


@pytest.mark.parametrize("kind, question", [
    ("noul", {"type": "noul", "instructions": "Billing?"}),
    ("choice", {"type": "choice", "criteria": {"a": None, "b": None}}),
    ("score", {"type": "score", "criteria": ["low", "high"]}),
    ("box", {"type": "box", "instructions": "The dog"}),
])
def test_unknown_fields_inside_a_question_are_refused(kind, question):
    body = systemone_body(questions={"q": {**question, "instruction": "a typo of instructions"}})
    with pytest.raises(RequestInvalid) as caught:
        systemone.parse_request(body, None)
    err = caught.value
    assert err.status == 422 and err.loc == ("body", "questions", "q", kind, "instruction")
    assert err.message == "questions.q.instruction is not a recognised field; remove it."


def test_single_option_choice_and_single_level_score_are_valid_system_one():
    body = systemone_body(questions={"c": {"type": "choice", "criteria": {"only": None}},
                                     "s": {"type": "score", "criteria": ["one"]}})
    req = systemone.parse_request(body, None)
    assert [q.size for q in req.questions] == [1, 1]


@pytest.mark.parametrize("data, content_type, media_type", [
    (PNG_BYTES, "application/octet-stream", "image/png"),
    (JPEG_BYTES, "application/octet-stream", "image/jpeg"),
    (WEBP_BYTES, "application/octet-stream", "image/webp"),
    (GIF_BYTES, "", "image/gif"),
    (JPEG_BYTES, "image/jpeg", "image/jpeg"),
])
def test_multipart_assets_are_resolved_and_sniffed(data, content_type, media_type):
    ref = "<image:57130000000000000000000000000000>"
    body = systemone_body(state={"photo": ref, "caption": f"see {ref}"},
                          assets={ref: {"type": "image", "part": "asset-0"}})
    req = systemone.parse_request(body, None, {"asset-0": (content_type, data)})
    image = req.input.images[ref]
    assert (image.ref, image.data, image.media_type) == (ref, data, media_type)


def test_unrecognisable_octet_stream_part_is_refused():
    ref = "<image:1>"
    body = systemone_body(state=ref, assets={ref: {"type": "image", "part": "asset-0"}})
    with pytest.raises(RequestInvalid) as caught:
        systemone.parse_request(body, None, {"asset-0": ("application/octet-stream", b"plain text")})
    assert caught.value.loc == ("body", "assets", ref)
    assert caught.value.message == f"assets.{ref} is not a PNG, JPEG, WebP or GIF image."


def test_inline_assets_and_order_of_appearance():
    first, second = "<image:b>", "<image:a>"
    assets = {second: {"type": "image", "format": "jpg", "data_base64": base64.b64encode(JPEG_BYTES).decode()},
              first: {"format": "png", "data_base64": base64.b64encode(PNG_BYTES).decode()}}
    body = systemone_body(state=f"{first} then {second}", assets=assets)
    req = systemone.parse_request(body, None)
    assert list(req.input.images) == [first, second]
    assert req.input.images[second].media_type == "image/jpeg" and req.input.images[second].format == "jpeg"


def test_an_asset_mentioned_only_in_instructions_or_criteria_is_used():
    ref = "<image:q>"
    body = systemone_body(assets={ref: {"format": "png", "data_base64": base64.b64encode(PNG_BYTES).decode()}})
    body["questions"]["tone"]["criteria"]["angry"] = f"looks like {ref}"
    assert ref in systemone.parse_request(body, None).input.images


def test_all_problems_are_reported_together():
    body = systemone_body(questions={"": {"type": "noul", "instructions": "x"},
                                     "tone": {"type": "choice", "criteria": {}},
                                     "urgency": {"type": "score", "criteria": list(range(11))}})
    with pytest.raises(RequestInvalid) as caught:
        systemone.parse_request(body, None)
    status, rendered = systemone.render_error(caught.value)
    assert status == 422
    assert [entry["loc"] for entry in rendered["detail"]] == [
        ["body", "questions", ""],
        ["body", "questions", "tone", "choice", "criteria"],
        ["body", "questions", "urgency", "score", "criteria"],
    ]
    assert rendered["detail"][2]["msg"] == "questions.urgency.criteria must have between 1 and 10 entries, got 11."


def test_limits_are_configurable():
    limits = RequestLimits(systemone_min_choices=2, systemone_max_levels=2)
    with pytest.raises(RequestInvalid) as caught:
        systemone.parse_request(systemone_body(), limits)
    assert caught.value.loc == ("body", "questions", "urgency", "score", "criteria")
    assert not caught.value.errors  # tone has 2 choices: fine
    single = systemone_body(questions={"c": {"type": "choice", "criteria": {"only": None}}})
    with pytest.raises(RequestInvalid, match="between 2 and 255"):
        systemone.parse_request(single, limits)


def test_noul_with_criteria_only_or_instructions_only_is_valid():
    body = systemone_body(questions={"a": {"type": "noul", "criteria": {"false": "no refund"}},
                                     "b": {"type": "noul", "instructions": {"rule": "refund?"}}})
    req = systemone.parse_request(body, None)
    assert req.questions[0].no == "no refund" and req.questions[1].instructions == {"rule": "refund?"}
