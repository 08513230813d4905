"""The router under fault injection, through the running gateway and fake TypeSafe / OpenAI upstreams:
retries, fallbacks, cooldowns, deadlines, hedging and the headers that count them."""

from __future__ import annotations

import time
from dataclasses import replace

import httpx
import pytest

from tests.conftest import start_gateway
from tests.fakes.openai import FakeOpenAI
from tests.fakes.typesafe import FakeTypeSafe
from tests.settled import tasks_of, wait_settled
from tests.shared_state.conftest import wait_for

KEY = "ts-router-key"
S1 = {"state": "I was charged twice for order #4411.",
      "questions": {"refund": {"type": "noul", "instructions": "Is this a refund request?"},
                    "team": {"type": "choice", "instructions": "Which team?",
                             "criteria": {"billing": None, "tech": None}}}}
HEAVY, LIGHT = 1_000_000, 1  # weights that make the first pick all but certain


@pytest.fixture
def fakes():
    made = []

    def make(kind=FakeTypeSafe):
        fake = kind(KEY) if kind is FakeTypeSafe else kind("sk-openai-router")
        made.append(fake.start())
        return fake

    yield make
    for fake in made:
        fake.stop()


@pytest.fixture
def gateway():
    started = []

    def start(model_list: list, **router) -> object:
        started.append(start_gateway({"model_list": model_list, "router_settings": router}))
        return started[-1]

    yield start
    for running in started:
        running.stop()


def typesafe(group: str, fake, weight: int | None = None, **params) -> dict:
    litellm_params = {"model": "typesafe/jev-latest", "api_key": KEY, "api_base": fake.url, "timeout": 10, **params}
    if weight is not None:
        litellm_params["weight"] = weight
    return {"model_name": group, "litellm_params": litellm_params}


def ask(gw, model: str, headers: dict | None = None, timeout: float = 30) -> httpx.Response:
    return httpx.post(f"{gw.url}/v1/systemone", json={**S1, "model": model}, headers=headers, timeout=timeout)


def calls(fake) -> int:
    return len(fake.requests)


# ---- retries ------------------------------------------------------------------------------------


def test_a_retry_goes_to_the_other_deployment_first_and_the_headers_count_it(fakes, gateway):
    a, b = fakes(), fakes()
    gw = gateway([typesafe("g", a, HEAVY), typesafe("g", b, LIGHT)], num_retries=2, disable_cooldowns=True)
    a.fail_next(500, "a is down")
    r = ask(gw, "g")
    assert r.status_code == 200, r.text
    assert (calls(a), calls(b)) == (1, 1)  # never back to the one that just failed while another exists
    assert r.headers["x-decisions-attempted-retries"] == r.headers["x-litellm-attempted-retries"] == "1"
    assert r.headers["x-decisions-attempted-fallbacks"] == "0"
    assert r.headers["x-decisions-model-group"] == r.headers["x-litellm-model-group"] == "g"
    assert r.headers["x-decisions-model"] == "typesafe/jev-latest"
    assert r.headers["x-decisions-model-id"] == gw.state.registry.group("g")[1].id


def test_when_every_deployment_failed_the_same_one_is_retried_after_a_back_off(fakes, gateway):
    a, b = fakes(), fakes()
    gw = gateway([typesafe("g", a), typesafe("g", b)], num_retries=2, disable_cooldowns=True)
    a.fail_next(503, "busy")
    b.fail_next(503, "busy")
    started = time.monotonic()
    r = ask(gw, "g")
    assert r.status_code == 200 and r.headers["x-decisions-attempted-retries"] == "2"
    assert calls(a) + calls(b) == 3 and calls(a) >= 1 and calls(b) >= 1
    assert time.monotonic() - started >= 0.25  # the third call reused a deployment: it waited first


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_caller_side_failure_is_never_retried(fakes, gateway, status):
    a, b = fakes(), fakes()
    gw = gateway([typesafe("g", a), typesafe("g", b)], num_retries=3, disable_cooldowns=True)
    a.fail_next(status, "no")
    b.fail_next(status, "no")
    r = ask(gw, "g")
    assert r.status_code == status and calls(a) + calls(b) == 1
    assert r.headers["x-decisions-attempted-retries"] == "0"


def test_a_429_with_retry_after_is_waited_out_on_a_single_deployment(fakes, gateway):
    a = fakes()
    gw = gateway([typesafe("g", a)], num_retries=1, disable_cooldowns=True)
    a.fail_next(429, "slow down", headers={"Retry-After": "1"})
    started = time.monotonic()
    r = ask(gw, "g")
    assert r.status_code == 200 and calls(a) == 2 and time.monotonic() - started >= 1.0


def test_retry_policy_per_error_class(fakes, gateway):
    a = fakes()
    gw = gateway([typesafe("g", a)], num_retries=3, disable_cooldowns=True,
                 retry_policy={"InternalServerErrorRetries": 0})
    a.fail_next(500, "boom")
    assert ask(gw, "g").status_code == 502 and calls(a) == 1


def test_a_split_request_retries_only_the_chunk_that_failed(fakes, gateway):
    a = fakes()
    entry = typesafe("g", a)
    entry["model_info"] = {"max_questions": 1}
    gw = gateway([entry], num_retries=1, disable_cooldowns=True)
    a.queue_answer(lambda rec: a.handle(rec))  # the first chunk to arrive is answered
    a.fail_next(500, "the second chunk fails once")
    r = ask(gw, "g")
    assert r.status_code == 200, r.text
    assert set(r.json()["answers"]) == {"refund", "team"}
    assert calls(a) == 3 and r.headers["x-decisions-attempted-retries"] == "1"  # not 4: the sibling kept its answer


# ---- fallbacks ------------------------------------------------------------------------------------


def test_fallbacks_are_tried_in_order_each_with_its_retries(fakes, gateway):
    a, b, c = fakes(), fakes(), fakes()
    for _ in range(2):
        a.fail_next(500, "a down")
        b.fail_next(500, "b down")
    gw = gateway([typesafe("first", a), typesafe("second", b), typesafe("third", c)], num_retries=1,
                 fallbacks=[{"first": ["second", "third"]}], disable_cooldowns=True)
    r = ask(gw, "first")
    assert r.status_code == 200, r.text
    assert (calls(a), calls(b), calls(c)) == (2, 2, 1)
    assert a.requests[-1].time <= b.requests[0].time and b.requests[-1].time <= c.requests[0].time
    assert r.headers["x-decisions-attempted-fallbacks"] == r.headers["x-litellm-attempted-fallbacks"] == "2"
    assert r.headers["x-decisions-attempted-retries"] == "2"
    assert r.headers["x-decisions-model-group"] == "first"


def test_when_everything_fails_the_error_names_the_group_the_last_error_and_the_fallbacks(fakes, gateway):
    a, b = fakes(), fakes()
    a.fail_next(500, "a down")
    b.fail_next(503, "b overloaded")
    gw = gateway([typesafe("first", a), typesafe("second", b)], num_retries=0, fallbacks=[{"first": ["second"]}],
                 disable_cooldowns=True)
    r = ask(gw, "first")
    assert r.status_code == 503
    message = r.json()["detail"]["message"]
    assert "Model group 'first' failed" in message and "b overloaded" in message and "'second'" in message
    assert r.headers["x-decisions-attempted-fallbacks"] == "1"
    lone = gateway([typesafe("alone", a)], num_retries=0, disable_cooldowns=True)
    a.fail_next(500, "down again")
    r = ask(lone, "alone")
    assert r.status_code == 502 and "No fallback was attempted" in r.json()["detail"]["message"]


def test_a_system_one_request_falls_back_to_an_openai_deployment(fakes, gateway):
    a, luna = fakes(), fakes(FakeOpenAI)
    a.fail_next(500, "down")
    gw = gateway([typesafe("jev", a), {"model_name": "luna", "litellm_params": {
        "model": "openai/gpt-6-luna", "api_key": "sk-openai-router", "api_base": f"{luna.url}/v1"}}],
        num_retries=0, fallbacks=[{"jev": ["luna"]}])
    r = ask(gw, "jev")
    assert r.status_code == 200, r.text
    assert r.headers["x-decisions-model"] == "openai/gpt-6-luna" and calls(luna) == 1
    assert set(r.json()["answers"]) == {"refund", "team"}


def test_no_deployment_can_take_it_so_the_capacity_fallback_answers(fakes, gateway):
    a, b = fakes(), fakes()
    small = typesafe("small", a)
    small["model_info"] = {"max_options": 1}
    gw = gateway([small, typesafe("big", b)], capacity_fallbacks=[{"small": ["big"]}])
    r = ask(gw, "small")
    assert r.status_code == 200 and calls(a) == 0 and calls(b) == 1
    alone = gateway([small])
    r = ask(alone, "small")
    assert r.status_code == 400 and "options per choice" in r.json()["detail"]["message"] and calls(a) == 0


def test_the_pre_call_filter_skips_a_deployment_that_cannot_take_the_request(fakes, gateway):
    a, b = fakes(), fakes()
    small = typesafe("g", a, HEAVY)
    small["model_info"] = {"max_options": 1}
    gw = gateway([small, typesafe("g", b, LIGHT)])
    for _ in range(5):
        assert ask(gw, "g").status_code == 200
    assert (calls(a), calls(b)) == (0, 5)


# ---- cooldowns --------------------------------------------------------------------------------------


def test_a_429_cools_a_deployment_at_once_and_the_cooldown_lifts_on_time(fakes, gateway):
    a, b = fakes(), fakes()
    cooldown_s = 2
    gw = gateway([typesafe("g", a, HEAVY), typesafe("g", b, LIGHT)], num_retries=1, cooldown_time=cooldown_s)
    a.fail_next(429, "slow down")
    asked = time.monotonic()  # the cooldown starts after this (at the 429)...
    assert ask(gw, "g").status_code == 200 and (calls(a), calls(b)) == (1, 1)
    cooled = time.monotonic()  # ...and before this (the retry waits for it)
    # Whatever the machine's speed: a request answered before asked + cooldown_s was routed while a
    # was surely cooling, and one sent after cooled + cooldown_s is surely past the cooldown.
    checked = 0
    for _ in range(4):
        assert ask(gw, "g").status_code == 200
        if time.monotonic() < asked + cooldown_s:
            assert calls(a) == 1  # cooling: every request went to b
            checked += 1
    assert checked, f"not one request answered within the {cooldown_s} s cooldown"
    time.sleep(max(0.0, cooled + cooldown_s + 0.2 - time.monotonic()))  # idle past the cooldown's end
    assert ask(gw, "g").status_code == 200 and calls(a) == 2  # lifted: a takes its share again


def test_a_deployment_that_answers_400_to_everything_is_cooled(fakes, gateway):
    a, b = fakes(), fakes()
    gw = gateway([typesafe("g", a, HEAVY), typesafe("g", b, LIGHT)], allowed_fails=2, cooldown_time=30)
    for _ in range(10):
        a.fail_next(400, "I refuse everything")
    statuses = [ask(gw, "g").status_code for _ in range(6)]
    assert statuses[:3] == [400, 400, 400] and statuses[3:] == [200, 200, 200]
    assert calls(a) == 3


def test_failures_beyond_allowed_fails_cool_a_deployment(fakes, gateway):
    a, b = fakes(), fakes()
    gw = gateway([typesafe("g", a, HEAVY), typesafe("g", b, LIGHT)], num_retries=0, allowed_fails=1,
                 cooldown_time=30)
    for _ in range(5):
        a.fail_next(500, "flapping")
    statuses = [ask(gw, "g").status_code for _ in range(5)]
    assert statuses[:2] == [502, 502] and statuses[2:] == [200, 200, 200] and calls(a) == 2


def test_a_lone_cooling_deployment_still_gets_the_request_and_says_so(fakes, gateway):
    a = fakes()
    gw = gateway([typesafe("g", a)], num_retries=0, cooldown_time=30)
    a.fail_next(429, "slow down")
    assert ask(gw, "g").status_code == 429
    r = ask(gw, "g")
    assert r.status_code == 200 and calls(a) == 2 and "cooling" in r.headers["x-decisions-cooldown"]


def test_a_cooling_group_goes_straight_to_its_fallback(fakes, gateway):
    a, b = fakes(), fakes()
    gw = gateway([typesafe("g", a), typesafe("spare", b)], num_retries=0, cooldown_time=30,
                 fallbacks=[{"g": ["spare"]}])
    a.fail_next(429, "slow down")
    assert ask(gw, "g").status_code == 200 and (calls(a), calls(b)) == (1, 1)
    r = ask(gw, "g")
    assert r.status_code == 200 and (calls(a), calls(b)) == (1, 2)
    assert r.headers["x-decisions-attempted-fallbacks"] == "1"


# ---- deadlines and hedging ----------------------------------------------------------------------------


def test_the_deadline_cancels_the_call_in_flight_and_starts_no_other(fakes, gateway):
    a = fakes()
    gw = gateway([typesafe("g", a)], num_retries=3)
    a.hang_next(10)
    resting = tasks_of(gw)
    started = time.monotonic()
    r = ask(gw, "g", headers={"x-decisions-deadline-ms": "400"})
    assert r.status_code == 504 and "deadline of 400 ms" in r.json()["detail"]["message"]
    assert time.monotonic() - started < 5  # the deadline's answer, not the 10 s hang's
    wait_for(lambda: a.abandoned >= 1, what="the call in flight was cancelled at the fake")
    assert a.abandoned == 1 and calls(a) == 1  # cancelled at the fake; no retry after the deadline
    wait_settled(gw, resting, "the request's work ended")  # nothing left that could still send a retry
    assert calls(a) == 1


def test_the_deadline_bounds_the_waits_between_retries(fakes, gateway):
    a = fakes()
    gw = gateway([typesafe("g", a)], num_retries=3, disable_cooldowns=True,
                 model_group_settings={"g": {"deadline_ms": 600}})
    a.fail_next(429, "slow down", headers={"Retry-After": "30"})
    started = time.monotonic()
    r = ask(gw, "g")
    assert r.status_code == 504 and time.monotonic() - started < 5 and calls(a) == 1  # not the 30 s Retry-After


def test_a_bad_deadline_header_is_refused(fakes, gateway):
    a = fakes()
    gw = gateway([typesafe("g", a)])
    r = httpx.post(f"{gw.url}/v1/decisions", json={"model": "g", "input": "hi", "questions": [
        {"type": "predicate", "name": "q", "instructions": "Is it?"}]}, headers={"x-decisions-deadline-ms": "-5"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "x-decisions-deadline-ms" and calls(a) == 0


def test_a_hedge_asks_a_second_deployment_and_the_fast_answer_wins(fakes, gateway):
    slow, fast = fakes(), fakes()
    hedge_after_s = 1.5
    gw = gateway([typesafe("g", slow, HEAVY), typesafe("g", fast, LIGHT)],
                 model_group_settings={"g": {"hedge_after_ms": int(hedge_after_s * 1000)}})
    slow.hang_next(10)
    started = time.monotonic()
    r = ask(gw, "g")
    # the hedge's answer, not the end of the 10 s hang (nor of the deployment's 10 s timeout)
    assert r.status_code == 200 and time.monotonic() - started < 10
    assert r.headers["x-decisions-hedged"] == "true" and calls(fast) == 1
    assert r.headers["x-decisions-model-id"] == gw.state.registry.group("g")[1].id
    wait_for(lambda: slow.abandoned >= 1, what="the slow call was cancelled at the fake")
    assert slow.abandoned == 1  # the slow call was cancelled at the fake
    started = time.monotonic()
    quick = ask(gw, "g")
    took = time.monotonic() - started  # the gateway waited for the upstream no longer than this
    assert quick.status_code == 200
    if took < hedge_after_s:  # answered before the hedge was due: none may have been sent
        assert "x-decisions-hedged" not in quick.headers and calls(fast) == 1
    else:  # the machine stalled past the threshold: a hedge was allowed (and counted as one)
        assert quick.headers.get("x-decisions-hedged") in (None, "true")


def test_every_request_gets_exactly_one_answer_under_mixed_faults(fakes, gateway):
    a, b = fakes(), fakes()
    gw = gateway([typesafe("g", a), typesafe("g", b)], num_retries=2, cooldown_time=0.2, allowed_fails=1)
    for _ in range(6):
        a.fail_next(500, "flap")
        b.queue_answer(lambda rec: replace(b.handle(rec), delay=0.05))
    with httpx.Client(timeout=30) as client:
        results = [client.post(f"{gw.url}/v1/systemone", json={**S1, "model": "g"}) for _ in range(12)]
    assert all(r.status_code == 200 for r in results)
    ids = [r.headers["x-request-id"] for r in results]
    assert len(set(ids)) == 12
    retries = sum(int(r.headers["x-decisions-attempted-retries"]) for r in results)
    assert calls(a) + calls(b) == 12 + retries  # the counts in the headers are true
