"""gateway/upstream/split.py: chunks over a question limit and an exact merge (pure)."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.upstream.split import merge_results, split_request
from providers.base import Deployment
from tests.fakes.systemone import SystemOneFake
from tests.providers import helpers as h
from translators.errors import UpstreamError
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


CHUNKS = 4  # seven questions, two per call
MEET_TIMEOUT_S = 30.0


class _MeetingFake(SystemOneFake):
    """A System One upstream that holds each call until all the chunks' calls are in flight at once
    (or ``MEET_TIMEOUT_S`` passed): calls sent one after another never meet, however fast the machine."""

    def __init__(self) -> None:
        super().__init__("slow-key")
        self.in_flight = self.peak = 0
        self.met = threading.Condition()

    def handle(self, rec):
        with self.met:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.met.notify_all()
            self.met.wait_for(lambda: self.peak >= CHUNKS, timeout=MEET_TIMEOUT_S)
            self.in_flight -= 1
        return super().handle(rec)


async def test_chunks_run_concurrently_and_merge_in_order():
    with _MeetingFake() as fake:
        dep = Deployment("g", "systemone", "m", api_key="slow-key", api_base=fake.url, model_info={"max_questions": 2})
        questions = h.noul_questions(7)
        decided = await h.decide(dep, h.s1_request(questions))
    assert len(fake.requests) == CHUNKS and fake.peak == CHUNKS  # all four chunks were in flight at once
    assert [a.question_id for a in decided.result.answers] == list(questions)


async def test_a_failing_chunk_fails_the_request():
    with SystemOneFake("k") as fake:
        fake.fail_next(503, "overloaded", headers={"Retry-After": "2"})
        dep = Deployment("g", "systemone", "m", api_key="k", api_base=fake.url, model_info={"max_questions": 1})
        with pytest.raises(UpstreamError) as caught:
            await h.decide(dep, h.s1_request(h.noul_questions(3)))
    assert caught.value.status == 503 and caught.value.headers == {"Retry-After": "2"}
