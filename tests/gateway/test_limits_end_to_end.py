"""A key's rate limit and budget hold across two gateways on one Redis and one database."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.conftest import start_gateway
from tests.fakes.typesafe import FakeTypeSafe
from tests.minute_windows import Clock, Span, admitted_within_an_rpm_limit
from tests.shared_state.conftest import REDIS_URL

MASTER = "sk-master-limits-0123456789"
UPSTREAM_KEY = "ts-limits-upstream-key"
S1 = {"model": "jev", "state": "I was charged twice.",
      "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}
PRICE = 0.001  # USD per input token, so a call costs a few cents


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    with FakeTypeSafe(UPSTREAM_KEY) as upstream:
        db = tmp_path_factory.mktemp("limits") / "gateway.db"
        config = {"model_list": [{"model_name": "jev", "litellm_params": {
            "model": "typesafe/jev-latest", "api_key": UPSTREAM_KEY, "api_base": upstream.url,
            "input_cost_per_token": PRICE}}],
            "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}",
                                 "redis_url": REDIS_URL},
            "router_settings": {"num_retries": 0}}
        first, second = start_gateway(config), start_gateway(config)
        yield first, second, upstream
        first.stop()
        second.stop()


def new_key(gateway, **fields) -> str:
    r = httpx.post(gateway.url + "/key/generate", json=fields, headers={"Authorization": f"Bearer {MASTER}"},
                   timeout=20)
    assert r.status_code == 200, r.text
    return r.json()["key"]


async def burst(urls: list[str], key: str, n: int, spans: list[Span] | None = None) -> list[httpx.Response]:
    """``n`` calls at once over ``urls``; with ``spans``, the minutes each call was in flight in, in order."""
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=64)) as client:
        async def call(i: int) -> tuple[httpx.Response, Span]:
            with Clock() as clock:
                response = await client.post(urls[i % len(urls)] + "/v1/systemone", json=S1,
                                             headers={"Authorization": f"Bearer {key}"})
            return response, clock.span

        answered = await asyncio.gather(*(call(i) for i in range(n)))
    if spans is not None:
        spans.extend(span for _, span in answered)
    return [response for response, _ in answered]


def test_an_rpm_limit_holds_across_two_gateways(pair):
    first, second, _ = pair
    key = new_key(first, key_alias="limits-rpm", rpm_limit=50)
    spans: list[Span] = []  # the window is a calendar minute: the minutes each call was in flight in
    answers = asyncio.run(burst([first.url, second.url], key, 200, spans))
    ok = [r for r in answers if r.status_code == 200]
    limited = [r for r in answers if r.status_code == 429]
    assert len(ok) + len(limited) == 200
    # in one minute: 50 or 51 answered (as before); across a boundary, so in each minute
    wrong = admitted_within_an_rpm_limit([(span, r.status_code == 200) for span, r in zip(spans, answers)], 50, slack=1)
    assert wrong is None, wrong
    for r in limited:
        assert int(r.headers["retry-after"]) >= 1 and r.headers["x-ratelimit-limit-requests"] == "50"
        assert r.headers["x-ratelimit-remaining-requests"] == "0" and "rpm_limit" in r.json()["detail"]["message"]
    assert {r.headers["x-ratelimit-limit-requests"] for r in ok} == {"50"}


def test_a_budget_is_not_overspent_under_concurrency(pair):
    first, second, _ = pair
    key = new_key(first, key_alias="limits-budget", max_budget=0.25)
    answers = asyncio.run(burst([first.url, second.url], key, 60))
    ok = [r for r in answers if r.status_code == 200]
    over = [r for r in answers if r.status_code == 400]
    assert ok and over and len(ok) + len(over) == 60
    costs = [float(r.headers["x-decisions-response-cost"]) for r in ok]
    assert sum(costs) <= 0.25 + max(costs)  # at most one request's cost over the budget
    message = over[0].json()["detail"]["message"]
    assert "limits-budget" in message and "0.25" in message
