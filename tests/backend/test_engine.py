"""The scorer and its queue: shared-prefix batching is exact, concurrent requests are batched together."""

from __future__ import annotations

import asyncio

import pytest

from backend.engine import ScoringEngine
from backend.errors import EngineBusy
from backend.scoring import Scorer, ScoreRow, common_prefix_length
from tests.backend.conftest import TICKET


def rows_for(decider, questions_text: list[str], input_text: str = TICKET) -> list[ScoreRow]:
    from backend.prompts import QuestionSpec

    specs = [QuestionSpec(f"q{i}", "yes_no", text) for i, text in enumerate(questions_text)]
    return [plan.rows[0] for plan in decider.plan(input_text, specs)]


QUESTIONS = ["The customer asks for a refund.", "The customer is angry.", "The message mentions a subscription.",
             "The customer was charged more than once."]


def test_common_prefix_leaves_every_prompt_a_token():
    assert common_prefix_length([(1, 2, 3), (1, 2, 4)]) == 2
    assert common_prefix_length([(1, 2), (1, 2, 3)]) == 1
    assert common_prefix_length([(1, 2, 3)]) == 0


def test_chunked_batches_equal_one_batch_and_the_reference(decider, service):
    rows = rows_for(decider, QUESTIONS)
    one_batch = service.scorer.score(rows)
    tiny = Scorer(service.loaded.model, service.loaded.device, max_batch_tokens=1)  # one row per forward
    chunked = tiny.score(rows)
    assert one_batch.cached_tokens == common_prefix_length([r.prompt_ids for r in rows]) * (len(rows) - 1) > 0
    for row, a, b in zip(rows, one_batch.label_logprobs, chunked.label_logprobs):
        ref = service.scorer.reference_logprobs(row.prompt_ids)[list(row.label_ids)].tolist()
        assert a == pytest.approx(ref, abs=1e-4) and b == pytest.approx(ref, abs=1e-4)


async def test_concurrent_requests_share_passes_and_keep_their_answers(decider, service):
    engine = ScoringEngine(service.scorer)
    try:
        requests = [rows_for(decider, QUESTIONS[:2], "First ticket: my invoice is wrong."),
                    rows_for(decider, QUESTIONS[2:], "Second ticket: the app crashes on start."),
                    rows_for(decider, QUESTIONS[:2], "First ticket: my invoice is wrong.")]
        alone = [service.scorer.score(r) for r in requests]
        together = await asyncio.gather(*(engine.score(r) for r in requests))
        assert engine.passes < len(requests)  # the worker took more than one request in a pass
        for a, t in zip(alone, together):
            for x, y in zip(a.label_logprobs, t.label_logprobs):
                assert y == pytest.approx(x, abs=1e-4)
    finally:
        engine.close()


async def test_the_queue_bound_is_exact(decider, service):
    engine = ScoringEngine(service.scorer, max_queued_rows=3)
    try:
        rows = rows_for(decider, QUESTIONS[:2])
        first = asyncio.ensure_future(engine.score(rows))
        await asyncio.sleep(0)  # the first request is queued or running
        with pytest.raises(EngineBusy) as busy:
            await engine.score(rows)
        assert busy.value.status == 503 and busy.value.headers == {"Retry-After": "1"}
        await first
        assert len((await engine.score(rows)).label_logprobs) == 2  # free again once the first is answered
    finally:
        engine.close()
