"""Partial and full hits across both wires, with the real typesafe-sdk and openai clients: only the
misses go upstream, the answers merge in request order, only what was paid is charged, and a full
hit answers byte for byte what was sent the first time."""

from __future__ import annotations

import math

import pytest

from tests.cache.conftest import (
    JEV_PRICE,
    OA_REFUND,
    OA_SPAM,
    OA_TONE,
    OA_URGENCY,
    S1_QUESTIONS,
    asked,
    cache_counts,
    decisions,
    fresh_state,
    post,
    s1_body,
    systemone,
)


def cost_of(response) -> float:
    return float(response.headers["x-decisions-response-cost"])


def test_system_one_then_openai_sends_only_the_new_question_upstream(gateway, fake_typesafe):
    state = fresh_state("partial")
    before = len(fake_typesafe.requests)
    first = systemone(gateway, state, S1_QUESTIONS)
    first_http = first.raw_http_response
    assert asked(fake_typesafe, before) == [["refund", "tone", "urgency"]]
    assert cache_counts(first_http) == (0, 3)
    paid_first = cost_of(first_http)
    assert paid_first == pytest.approx(len(fake_typesafe.requests[-1].body) // 4 * JEV_PRICE, rel=1e-12)
    assert float(first_http.headers["x-decisions-cost-saved"]) == 0.0

    # Two of the same questions (the new one in the middle) and one new, on the other wire.
    before = len(fake_typesafe.requests)
    decision, http = decisions(gateway, state, [OA_TONE, OA_SPAM, OA_REFUND])
    assert asked(fake_typesafe, before) == [["spam"]], "the fake upstream receives only the new question"
    sent = fake_typesafe.requests[-1]
    assert sent.json["state"] == state

    tone, spam, refund = decision.answers  # in the order of the request
    assert (tone.name, spam.name, refund.name) == ("tone", "spam", "refund")
    assert refund.probability == first.answers["refund"].noul  # the cached answer, to the last digit
    assert [p.probability for p in tone.probabilities] == list(first.answers["tone"].probabilities.values())
    assert tone.choice == first.answers["tone"].choice and tone.confidence == first.answers["tone"].confidence
    upstream_spam = fake_typesafe.expected_answers(sent)["spam"]["noul"]
    assert spam.probability == pytest.approx(upstream_spam, abs=1e-12)

    assert cache_counts(http) == (2, 1)
    assert cost_of(http) == pytest.approx(len(sent.body) // 4 * JEV_PRICE, rel=1e-12), "only the miss is paid"
    assert float(http.headers["x-decisions-cost-saved"]) == pytest.approx(paid_first * 2 / 3, rel=1e-12)
    assert http.headers["x-decisions-model"] == "typesafe/jev-latest"
    assert decision.model == "jev-1.13-20260917"


def test_a_full_hit_makes_no_upstream_call_and_pays_nothing(gateway, fake_typesafe):
    state = fresh_state("full")
    paid = systemone(gateway, state, S1_QUESTIONS)
    before = len(fake_typesafe.requests)
    again = systemone(gateway, state, S1_QUESTIONS)
    http = again.raw_http_response
    assert fake_typesafe.requests[before:] == []
    assert cache_counts(http) == (3, 0)
    assert cost_of(http) == 0.0
    saved = float(http.headers["x-decisions-cost-saved"])
    assert saved == pytest.approx(cost_of(paid.raw_http_response), rel=1e-12)
    assert http.headers["x-decisions-model"] == "typesafe/jev-latest"
    assert http.headers["x-decisions-model-group"] == "jev"
    assert again.answers == paid.answers and again.model == paid.model
    assert again.usage == paid.usage  # each answer shows the usage it was paid with


@pytest.mark.parametrize("path", ["/v1/systemone", "/v1/decisions"])
def test_a_full_hit_on_the_same_wire_and_model_answers_byte_for_byte(gateway, fake_typesafe, path):
    state = fresh_state("bytes")
    if path == "/v1/systemone":
        body = s1_body(state, {**S1_QUESTIONS, "odd": {"type": "choice", "criteria": {"a": "x", "b": None, "c": None}}})
    else:
        body = {"model": "jev", "input": state, "questions": [OA_REFUND, OA_TONE, OA_URGENCY, OA_SPAM]}
    first = post(gateway, path, body)
    assert first.status_code == 200 and cache_counts(first) == (0, 4)
    before = len(fake_typesafe.requests)
    second = post(gateway, path, body)
    assert fake_typesafe.requests[before:] == []
    assert cache_counts(second) == (4, 0)
    assert second.content == first.content
    assert second.headers["x-request-id"] != first.headers["x-request-id"]


def test_a_split_request_is_cached_chunk_by_chunk(gateway, fake_typesafe):
    """Over the deployment's question limit (2) the misses are split as usual; each chunk's answers
    are stored, and the replay is a full hit, byte for byte."""
    state = fresh_state("split")
    questions = {f"q{i}": {"type": "noul", "instructions": f"Is point {i} made?"} for i in range(5)}
    before = len(fake_typesafe.requests)
    first = post(gateway, "/v1/systemone", s1_body(state, questions, model="jev-split"))
    assert first.status_code == 200
    assert sorted(map(len, asked(fake_typesafe, before))) == [1, 2, 2]
    before = len(fake_typesafe.requests)
    partial = post(gateway, "/v1/systemone", s1_body(state, {**questions, "new": {"type": "noul",
                                                                                   "instructions": "New?"}},
                                                     model="jev-split"))
    assert asked(fake_typesafe, before) == [["new"]] and cache_counts(partial) == (5, 1)
    assert list(partial.json()["answers"]) == [*questions, "new"]
    before = len(fake_typesafe.requests)
    replay = post(gateway, "/v1/systemone", s1_body(state, questions, model="jev-split"))
    assert fake_typesafe.requests[before:] == [] and replay.content == first.content


def test_partial_hits_count_only_what_was_paid_in_the_usage_sums(gateway, fake_typesafe):
    """The body's usage is every answer's as it was paid for: a full hit's equals the first call's,
    a partial hit's is the cached shares plus the new call's."""
    state = fresh_state("usage")
    first = post(gateway, "/v1/systemone", s1_body(state)).json()
    before = len(fake_typesafe.requests)
    body = s1_body(state, {"refund": S1_QUESTIONS["refund"], "spam": {"type": "noul", "instructions": "Spam?"}})
    partial = post(gateway, "/v1/systemone", body)
    new_tokens = len(fake_typesafe.requests[before].body) // 4
    total = first["usage"]["input_tokens"]
    share = total // 3 + (1 if total % 3 else 0)  # refund is the first question: it takes a remainder token
    assert partial.json()["usage"]["input_tokens"] == new_tokens + share
    assert math.isclose(cost_of(partial), new_tokens * JEV_PRICE, rel_tol=1e-12)
