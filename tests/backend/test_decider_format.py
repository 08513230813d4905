"""Prompt format version 2 (seed 002): a checkpoint that ships decider_config.json, on the real model.

The same loaded SmolLM2 is served as if its folder held a decider_config.json, sharing the
session's scorer, so no second copy of the model is loaded.
"""

from __future__ import annotations

import math
from dataclasses import replace

import httpx
import pytest

from backend.loading import ModelLoadError
from backend.server import create_app
from backend.service import DecisionService
from tests.backend.conftest import TICKET, choice_question, score_question, yes_no_question

CONFIG = {"layout": "plain", "temperature": 1.0, "temperature_by_type": {"choice": 0.5, "noul": 1.0, "score": 2.0}}
TOL = 1e-5


@pytest.fixture(scope="module")
def decider_service(service):
    svc = DecisionService(replace(service.loaded, decider_config=CONFIG), scorer=service.scorer)
    yield svc
    svc.close()


@pytest.fixture
async def v2(decider_service):
    transport = httpx.ASGITransport(app=create_app(decider_service))
    async with httpx.AsyncClient(transport=transport, base_url="http://backend", timeout=120) as c:
        yield c


def softmax(logprobs, t):
    w = [math.exp((lp - max(logprobs)) / t) for lp in logprobs]
    return [x / sum(w) for x in w]


async def test_choice_and_yes_no_rows_are_plain_text_state_first_question_last(v2, tokenizer, service):
    resp = await v2.post("/v1/decisions", json={"input": TICKET, "questions": [choice_question(), yes_no_question()],
                                                 "return_prompt_token_ids": True})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["prompt_format_version"] == 2
    team, refund = body["answers"]["team"], body["answers"]["refund"]
    assert tokenizer.decode(team["prompt_token_ids"]) == (
        f"Context:\n{TICKET}\n\nQuestion: Which team should handle this ticket?\nOptions:\n"
        "(A) billing - invoices, charges, refunds, payment methods\n(B) technical - bugs, errors, outages, login problems\n"
        "(C) sales\nAnswer: (")
    assert tokenizer.decode(refund["prompt_token_ids"]).endswith(
        "Question: The customer asks for a refund.\nOptions:\n(A) no\n(B) yes\nAnswer: (")
    letters = [tokenizer.encode("(" + L, add_special_tokens=False)[-1] for L in "ABC"]
    assert team["label_token_ids"] == letters and refund["label_token_ids"] == [letters[1], letters[0]]  # yes=B, no=A
    for answer, temperature in ((team, 0.5), (refund, 1.0)):  # temperature_by_type: choice 0.5, noul 1.0
        lp = service.scorer.reference_logprobs(answer["prompt_token_ids"])[answer["label_token_ids"]].tolist()
        assert list(answer["probabilities"].values()) == pytest.approx(softmax(lp, temperature), abs=TOL)
    hot = (await v2.post("/v1/decisions", json={"input": TICKET, "questions": [choice_question()], "temperature": 1.0})).json()
    lp = service.scorer.reference_logprobs(team["prompt_token_ids"])[team["label_token_ids"]].tolist()
    assert list(hot["answers"]["team"]["probabilities"].values()) == pytest.approx(softmax(lp, 1.0), abs=TOL)


async def test_a_score_is_read_as_one_yes_no_row_per_level(v2, tokenizer, service):
    question = score_question(levels=["0: no rush", "today", "immediately"])
    body = (await v2.post("/v1/decisions", json={"input": TICKET, "questions": [question]})).json()
    answer = body["answers"]["urgency"]
    state = tokenizer.encode(f"Context:\n{TICKET}", add_special_tokens=False)
    a_id, b_id = (tokenizer.encode("(" + L, add_special_tokens=False)[-1] for L in "AB")
    fits, masses = [], []
    for level in ("no rush", "today", "immediately"):  # the level number is stripped
        row = tokenizer.encode(f"\n\nQuestion: How urgent is this ticket?\nProposed answer: {level}\nDoes the proposed "
                               "answer fit?\nOptions:\n(A) no\n(B) yes\nAnswer: (", add_special_tokens=False)
        lp = service.scorer.reference_logprobs(state + row)[[a_id, b_id]].tolist()
        fits.append(softmax(lp, 2.0)[1])  # temperature_by_type score = 2.0
        masses.append(sum(math.exp(x) for x in lp))
    assert list(answer["probabilities"].values()) == pytest.approx([f / sum(fits) for f in fits], abs=TOL)
    assert answer["label_mass"] == pytest.approx(min(masses), rel=1e-4)
    assert body["usage"]["prompt_tokens"] >= 3 * len(state)  # the state is counted once per level


async def test_decider_refusals(v2):
    wide = choice_question(options=[{"name": f"o{i}"} for i in range(11)])
    resp = await v2.post("/v1/decisions", json={"input": TICKET, "questions": [wide]})
    assert resp.status_code == 400 and "question 'team': the decider format reads at most 10 options" in resp.json()["message"]
    resp = await v2.post("/v1/decisions", json={"input": TICKET, "questions": [score_question()],
                                                 "return_prompt_token_ids": True})
    assert resp.status_code == 400 and "cannot replay a question that is read as one row per level" in resp.json()["message"]
    resp = await v2.post("/v1/decisions", json={"input": TICKET, "questions": [yes_no_question()], "prompt_format_version": 1})
    assert resp.status_code == 400 and resp.json()["message"] == "prompt_format_version 1 is not served, this server uses version 2"
    resp = await v2.post("/v1/decisions", json={"input": TICKET, "questions": [yes_no_question()],
                                                 "chat_template_kwargs": {"enable_thinking": True}})
    assert resp.status_code == 400 and "sets 'enable_thinking' to True" in resp.json()["message"]
    resp = await v2.post("/v1/systemone", json={"state": TICKET, "questions": {
        "wide": {"type": "choice", "criteria": {f"o{i}": None for i in range(12)}}}})
    assert resp.status_code == 400 and "at most 10 options" in resp.json()["message"]


def test_a_chat_layout_decider_config_is_a_start_up_error_not_a_crash(service):
    with pytest.raises(ModelLoadError, match="decider_config.json layout 'chat' is not supported, only 'plain'"):
        DecisionService(replace(service.loaded, decider_config={"layout": "chat"}), scorer=service.scorer)
