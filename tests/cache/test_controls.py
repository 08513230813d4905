"""Per-request control (Cache-Control: no-cache / no-store, x-decisions-cache: only-if-cached) and the
per-group switch, on both wires."""

from __future__ import annotations

import pytest

from tests.cache.conftest import (
    CLIENT_KEY,
    OA_REFUND,
    OA_SPAM,
    OA_TONE,
    S1_QUESTIONS,
    asked,
    cache_counts,
    decisions,
    fresh_state,
    post,
    s1_body,
    systemone,
)

REPLAY = {"x-decisions-cache": "only-if-cached"}


def test_no_store_neither_looks_up_nor_stores(gateway, fake_typesafe):
    state = fresh_state("no-store")
    before = len(fake_typesafe.requests)
    systemone(gateway, state, S1_QUESTIONS, headers={"Cache-Control": "no-store"})
    second = systemone(gateway, state, S1_QUESTIONS)  # nothing was stored: paid again, and stored now
    assert cache_counts(second.raw_http_response) == (0, 3)
    third = systemone(gateway, state, S1_QUESTIONS, headers={"Cache-Control": "max-age=0, no-store"})
    assert "x-decisions-cache-hits" not in third.raw_http_response.headers  # the cache had no part in it
    assert len(asked(fake_typesafe, before)) == 3, "no-store skips the lookup even when the answers are cached"


def test_no_cache_skips_the_lookup_and_stores_the_answer(gateway, fake_typesafe):
    state = fresh_state("no-cache")
    systemone(gateway, state, S1_QUESTIONS)
    before = len(fake_typesafe.requests)
    fresh, http = decisions(gateway, state, [OA_REFUND, OA_SPAM], headers={"Cache-Control": "no-cache"})
    assert asked(fake_typesafe, before) == [["refund", "spam"]] and cache_counts(http) == (0, 2)
    before = len(fake_typesafe.requests)
    cached, http = decisions(gateway, state, [OA_REFUND, OA_SPAM])
    assert fake_typesafe.requests[before:] == [] and cache_counts(http) == (2, 0)
    assert cached.answers == fresh.answers  # what no-cache paid for is what is served now


def test_only_if_cached_on_system_one_is_a_504_naming_the_missing_questions(gateway, fake_typesafe):
    state = fresh_state("replay-s1")
    before = len(fake_typesafe.requests)
    miss = post(gateway, "/v1/systemone", s1_body(state), headers=REPLAY)
    assert miss.status_code == 504 and fake_typesafe.requests[before:] == []
    message = miss.json()["detail"]["message"]
    assert "only-if-cached" in message and "3 of 3" in message
    assert all(f"'{qid}'" in message for qid in S1_QUESTIONS)
    assert cache_counts(miss) == (0, 3)

    systemone(gateway, state, {"refund": S1_QUESTIONS["refund"], "tone": S1_QUESTIONS["tone"]})
    before = len(fake_typesafe.requests)
    partial = post(gateway, "/v1/systemone", s1_body(state), headers=REPLAY)
    assert partial.status_code == 504 and fake_typesafe.requests[before:] == []
    message = partial.json()["detail"]["message"]
    assert "1 of 3" in message and "'urgency'" in message and "'tone'" not in message
    hit = post(gateway, "/v1/systemone", s1_body(state, {"tone": S1_QUESTIONS["tone"]}), headers=REPLAY)
    assert hit.status_code == 200 and cache_counts(hit) == (1, 0) and fake_typesafe.requests[before:] == []


def test_only_if_cached_on_openai_is_a_504_in_openais_envelope(gateway, fake_typesafe):
    import openai

    state = fresh_state("replay-oa")
    decisions(gateway, state, [OA_REFUND])
    client = openai.OpenAI(api_key=CLIENT_KEY, base_url=f"{gateway.url}/v1")  # retries on, as by default
    before = len(fake_typesafe.requests)
    unnamed = {k: v for k, v in OA_TONE.items() if k != "name"}
    with pytest.raises(openai.APIStatusError) as caught:
        client.decisions.create(model="jev", input=state, questions=[OA_REFUND, unnamed], extra_headers=REPLAY)
    assert caught.value.status_code == 504 and fake_typesafe.requests[before:] == []
    assert caught.value.response.headers["x-should-retry"] == "false"  # its client does not ask again
    error = caught.value.body
    assert error["code"] == "not_cached" and "1 of 2" in error["message"] and "questions[1]" in error["message"]
    replayed, http = decisions(gateway, state, [OA_REFUND], headers=REPLAY)
    assert cache_counts(http) == (1, 0) and replayed.answers[0].name == "refund"


@pytest.mark.parametrize("path", ["/v1/systemone", "/v1/decisions"])
def test_an_unknown_x_decisions_cache_directive_is_a_400_naming_the_header(gateway, path):
    body = s1_body(fresh_state()) if path == "/v1/systemone" else {"model": "jev", "input": "x", "questions": [OA_REFUND]}
    response = post(gateway, path, body, headers={"x-decisions-cache": "sometimes"})
    assert response.status_code == 400
    text = response.text
    assert "x-decisions-cache" in text and "only-if-cached" in text


def test_a_group_with_model_info_cache_false_is_never_cached(gateway, fake_typesafe):
    state = fresh_state("group-off")
    before = len(fake_typesafe.requests)
    for _ in range(2):
        response = systemone(gateway, state, S1_QUESTIONS, model="uncached")
        assert "x-decisions-cache-hits" not in response.raw_http_response.headers
    assert len(asked(fake_typesafe, before)) == 2
    miss = post(gateway, "/v1/systemone", s1_body(state, model="uncached"), headers=REPLAY)
    assert miss.status_code == 504  # replay mode on an uncached group: every question is a miss
