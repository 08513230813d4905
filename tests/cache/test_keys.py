"""What a cache key covers: the deployment's identity (temperature and every parameter that changes
answers, never the api key), the input (images by content hash, on both wires) and the question in
IR form."""

from __future__ import annotations

import base64
import dataclasses

from gateway.cache.keys import deployment_identity, image_tokens, input_digest, question_digest
from providers.base import Deployment
from tests.cache.conftest import (
    OA_REFUND,
    S1_QUESTIONS,
    asked,
    cache_counts,
    decisions,
    fresh_state,
    post,
    s1_body,
    systemone,
)
from translators import openai as openai_wire
from translators import systemone as systemone_wire

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
OTHER_PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def test_temperature_is_in_the_key_and_the_group_name_is_not(gateway, fake_typesafe):
    state = fresh_state("temperature")
    systemone(gateway, state, S1_QUESTIONS, model="jev-cold")
    before = len(fake_typesafe.requests)
    warm = systemone(gateway, state, S1_QUESTIONS, model="jev-warm")
    assert cache_counts(warm.raw_http_response) == (0, 3) and len(asked(fake_typesafe, before)) == 1
    before = len(fake_typesafe.requests)
    # Another group, same upstream model and temperature (its rpm and timeout differ: they answer nothing).
    same = systemone(gateway, state, S1_QUESTIONS, model="jev-cold-too")
    assert cache_counts(same.raw_http_response) == (3, 0) and fake_typesafe.requests[before:] == []


def test_the_api_key_is_not_in_the_key(gateway, fake_typesafe):
    state = fresh_state("api-key")
    systemone(gateway, state, S1_QUESTIONS, model="jev")
    before = len(fake_typesafe.requests)
    other = systemone(gateway, state, S1_QUESTIONS, model="jev-other-key")
    assert cache_counts(other.raw_http_response) == (3, 0) and fake_typesafe.requests[before:] == []


def dep(**changes) -> Deployment:
    base = Deployment(model_name="g", provider="typesafe", model="jev-latest", api_key="ts-secret-one",
                      api_base="https://api.typesafe.ai", params={"temperature": 0})
    return dataclasses.replace(base, **changes)


def test_the_deployment_identity_covers_what_answers_and_no_secret():
    one = deployment_identity(dep())
    assert one == deployment_identity(dep(api_key="ts-secret-two", timeout=3, rpm=10, model_name="other",
                                          input_cost_per_token=1e-9,
                                          params={"temperature": 0, "num_retries": 4, "hedge_after_ms": 50,
                                                  "modal_key": "k", "modal_secret": "s",
                                                  "headers": {"Authorization": "Bearer x", "X-Api-Key": "y"}}))
    assert one == deployment_identity(dep(api_base="https://api.typesafe.ai/"))
    assert one != deployment_identity(dep(params={"temperature": 0.7}))
    assert one != deployment_identity(dep(params={"temperature": 0, "danger_zone": ["images"]}))
    assert one != deployment_identity(dep(params={"temperature": 0, "headers": {"X-Variant": "b"}}))
    assert one != deployment_identity(dep(api_base="https://eu.typesafe.ai"))
    assert one != deployment_identity(dep(model="jev-preview"))
    sglang = Deployment(model_name="g", provider="sglang", model="m", api_base="http://h:1")
    assert deployment_identity(sglang) == deployment_identity(
        dataclasses.replace(sglang, params={"prompt_format_version": 1}))  # the provider's default counts
    assert deployment_identity(sglang) != deployment_identity(
        dataclasses.replace(sglang, params={"prompt_format_version": 2}))


def test_the_same_question_on_both_wires_has_one_key():
    s1 = systemone_wire.parse_request({"model": "jev", "state": "hello", "questions": {
        "refund": {"type": "noul", "instructions": "Refund?"},
        "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset"}},
        "level": {"type": "score", "instructions": "How?", "criteria": ["low", "high"]}}})
    oa = openai_wire.parse_request({"model": "jev", "input": [{"role": "user", "content": "hello"}], "questions": [
        {"type": "predicate", "instructions": "Refund?"},
        {"type": "choice", "name": "mood", "instructions": "Tone?",
         "choices": [{"value": "calm"}, {"value": "angry", "description": "upset"}]},
        {"type": "score", "instructions": "How?", "levels": [{"label": "low"}, {"label": "high"}]}]})
    assert input_digest(s1, {}) == input_digest(oa, {})
    assert [question_digest(q, {}) for q in s1.questions] == [question_digest(q, {}) for q in oa.questions]
    roles = openai_wire.parse_request({"model": "jev", "input": [{"role": "system", "content": "hello"}],
                                       "questions": [{"type": "predicate", "instructions": "Refund?"}]})
    assert input_digest(roles, {}) != input_digest(oa, {})  # a role other than one user message counts


def image_bodies(state: str, png: bytes) -> tuple[dict, dict]:
    data = base64.b64encode(png).decode()
    s1 = {"model": "jev-images", "state": f"{state}\n\n<image:photo-1>",
          "assets": {"<image:photo-1>": {"format": "png", "data_base64": data}},
          "questions": {"refund": S1_QUESTIONS["refund"]}}
    oa = [{"role": "user", "content": [{"type": "input_text", "text": state},
                                       {"type": "input_image", "image_url": f"data:image/png;base64,{data}"}]}]
    return s1, oa


def test_images_are_keyed_by_their_bytes_on_both_wires(gateway, fake_typesafe):
    state = fresh_state("image")
    s1, oa_input = image_bodies(state, PNG)
    paid = post(gateway, "/v1/systemone", s1)
    assert paid.status_code == 200, paid.text
    assert fake_typesafe.requests[-1].header("typesafe-danger-zone-images") == "true"
    before = len(fake_typesafe.requests)
    decision, http = decisions(gateway, oa_input, [OA_REFUND], model="jev-images")
    assert cache_counts(http) == (1, 0) and fake_typesafe.requests[before:] == []
    assert decision.answers[0].probability == paid.json()["answers"]["refund"]["noul"]
    _, other_image = image_bodies(state, OTHER_PNG)
    _, http = decisions(gateway, other_image, [OA_REFUND], model="jev-images")
    assert cache_counts(http) == (0, 1) and len(asked(fake_typesafe, before)) == 1


def test_image_refs_are_replaced_by_content_hashes():
    s1 = systemone_wire.parse_request(image_bodies("look", PNG)[0])
    tokens = image_tokens(s1)
    (token,) = tokens.values()
    assert token.startswith("<image sha256:") and "photo-1" not in token
    renamed = systemone_wire.parse_request({**s1_body("look\n\n<image:x>", {"refund": S1_QUESTIONS["refund"]}),
                                            "assets": {"<image:x>": {"format": "png",
                                                                     "data_base64": base64.b64encode(PNG).decode()}}})
    assert input_digest(s1, tokens) == input_digest(renamed, image_tokens(renamed))
