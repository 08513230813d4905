"""gateway/split.py: chunks over a question limit and an exact merge (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.split import merge_results, split_request
from tests.providers import helpers as h
from translators.ir import Answer, DecisionResult, Usage


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), limit=st.integers(1, 45))
def test_chunks_cover_every_question_in_order_within_the_limit(n, limit):
    req = h.s1_request(h.noul_questions(n))
    chunks = split_request(req, limit)
    assert [q for c in chunks for q in c.questions] == list(req.questions)
    assert all(1 <= len(c.questions) <= limit for c in chunks)
    assert len(chunks) == -(-n // limit)
    assert max(len(c.questions) for c in chunks) - min(len(c.questions) for c in chunks) <= 1  # even chunks
    assert all(c.input is req.input and c.model == req.model for c in chunks)


def test_no_limit_or_fitting_request_is_one_chunk():
    req = h.s1_request()
    assert split_request(req, None) == [req]
    assert split_request(req, 3) == [req]


def test_merge_sums_usage_and_keeps_order():
    parts = [
        DecisionResult("jev-1.13", (Answer("a", "yes_no", (0.3, 0.7)),), Usage(10, 0, cached_tokens=2, cost=0.5),
                       extra={"k": 1}),
        DecisionResult("jev-1.13", (Answer("b", "refusal"), Answer("c", "yes_no", (1.0, 0.0))),
                       Usage(7, 1, cached_tokens=1, cost=0.25), extra={"k": 2, "j": 3}),
    ]
    merged = merge_results(parts)
    assert [a.question_id for a in merged.answers] == ["a", "b", "c"]
    assert merged.usage == Usage(17, 1, cached_tokens=3, cost=0.75)
    assert merged.model == "jev-1.13" and merged.extra == {"k": 1, "j": 3}


def test_merge_keeps_unknown_usage_unknown():
    parts = [DecisionResult("m", (), Usage()), DecisionResult("m", (), Usage())]
    assert merge_results(parts).usage.input_tokens is None and merge_results(parts).usage.cost is None
    with pytest.raises(ValueError):
        merge_results([])
