"""Upstreams that are down, slow, flapping, resetting connections or answering 429 storms, under a load of
concurrent requests through the router (retries, cooldowns, fallbacks as configured).

Every request gets one well-formed answer in its caller's wire (System One and OpenAI in turn), none
hangs, and nothing is lost or made up: every 200 the callers got is one complete answer a fake gave
(``ok``), and where no fallback is involved the upstream calls equal what the answers' retry headers
say. (tests/router/test_routing_faults.py checks each router rule one request at a time.)
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from tests.conftest import RunningGateway
from tests.fakes.faulty import FaultyTypeSafe
from tests.reliability.conftest import decisions
from tests.reliability.wire_checks import Answer, bad, drive
from tests.shared_state.conftest import free_port

KEY = "ts-faults-key"
N = 160  # requests per load
HEAVY, LIGHT = 1_000_000, 1  # weights that make the first pick all but certain


@pytest.fixture
def fakes():
    made: list[FaultyTypeSafe] = []

    def make() -> FaultyTypeSafe:
        made.append(FaultyTypeSafe(KEY).start())
        return made[-1]

    yield make
    for fake in made:
        fake.stop()


def deployment(group: str, base: str, weight: int | None = None, timeout: float = 10) -> dict:
    params = {"model": "typesafe/jev-latest", "api_key": KEY, "api_base": base, "timeout": timeout}
    if weight is not None:
        params["weight"] = weight
    return {"model_name": group, "litellm_params": params}


def load(gw: RunningGateway, model: str, n: int = N, timeout_s: float = 30) -> list[Answer]:
    return asyncio.run(drive(gw.url, decisions(n, model), concurrency=16, timeout_s=timeout_s))


def retries(answers: list[Answer]) -> int:
    return sum(int(a.headers["x-decisions-attempted-retries"]) for a in answers)


def statuses(answers: list[Answer]) -> Counter:
    return Counter(a.status for a in answers)


def well_formed(answers: list[Answer], n: int = N) -> None:
    assert len(answers) == n and bad(answers) == [], bad(answers)[:5]
    assert len({a.request_id for a in answers}) == n  # one answer each, none shared


def test_an_upstream_that_is_down_is_cooled_and_its_sibling_answers_everything(fakes, gateway):
    up = fakes()
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens: connection refused
    gw = gateway([deployment("g", dead, HEAVY), deployment("g", up.url, LIGHT), deployment("solo", dead)],
                 num_retries=1, allowed_fails=1, cooldown_time=30)
    answers = load(gw, "g")
    well_formed(answers)
    assert statuses(answers) == {200: N} and up.ok == N  # each 200 one answer of the live deployment
    assert retries(answers) <= 16 + 2  # the first wave tried the dead one; then it was cooling
    solo = load(gw, "solo", 16)
    well_formed(solo, 16)
    assert statuses(solo) == {502: 16}
    assert all("typesafe" in a.body.decode().lower() and KEY not in a.body.decode() for a in solo)


def test_a_slow_upstream_times_out_and_the_retry_goes_to_its_sibling(fakes, gateway):
    slow, fast = fakes(), fakes()
    slow.fault("slow", delay=2.0)
    gw = gateway([deployment("g", slow.url, HEAVY, timeout=0.3), deployment("g", fast.url, LIGHT),
                  deployment("solo", slow.url, timeout=0.3)], num_retries=1, allowed_fails=100, cooldown_time=1)
    answers = load(gw, "g", 64)
    well_formed(answers, 64)
    assert statuses(answers) == {200: 64} and fast.ok == 64
    assert max(a.seconds for a in answers) < 5  # the timeout, not the upstream, set the pace
    solo = load(gw, "solo", 16)
    well_formed(solo, 16)
    assert statuses(solo) == {504: 16} and max(a.seconds for a in solo) < 5


def test_a_flapping_upstream_is_cooled_and_let_back_in_turns_and_its_sibling_covers(fakes, gateway):
    flapping, steady = fakes(), fakes()
    flapping.fault("flap", period=0.15)
    gw = gateway([deployment("g", flapping.url), deployment("g", steady.url)], num_retries=3, allowed_fails=0,
                 cooldown_time=0.1)
    answers = load(gw, "g")
    well_formed(answers)
    assert statuses(answers) == {200: N}
    assert flapping.ok + steady.ok == N and flapping.ok > 0  # let back in after its cooldowns
    assert len(flapping.requests) + len(steady.requests) == N + retries(answers)  # the headers' counts are true


def test_two_upstreams_flapping_out_of_phase_answer_each_request_once(fakes, gateway):
    a, b = fakes(), fakes()
    a.fault("flap", period=0.15)
    b.fault("flap", period=0.15, failing_first=True)
    gw = gateway([deployment("g", a.url), deployment("g", b.url)], num_retries=3, allowed_fails=0, cooldown_time=0.1)
    answers = load(gw, "g")
    well_formed(answers)
    counts = statuses(answers)
    # one of them is up at any moment; a request whose tries all land on the failing side of a turn
    # gets its 502 (the last upstream error, in its envelope), never a made-up answer
    assert set(counts) <= {200, 502} and counts[200] >= 0.9 * N, counts
    assert a.ok + b.ok == counts[200]
    assert len(a.requests) + len(b.requests) == N + retries(answers)


@pytest.mark.parametrize("mid_body", [False, True], ids=["before-answering", "mid-body"])
def test_connections_reset_by_the_upstream_are_retried_elsewhere(fakes, gateway, mid_body):
    resetting, steady = fakes(), fakes()
    resetting.fault("reset", mid_body=mid_body)
    gw = gateway([deployment("g", resetting.url, HEAVY), deployment("g", steady.url, LIGHT),
                  deployment("solo", resetting.url)], num_retries=2, allowed_fails=100, cooldown_time=1)
    answers = load(gw, "g")
    well_formed(answers)
    assert statuses(answers) == {200: N} and steady.ok == N and resetting.ok == 0
    assert len(resetting.requests) + len(steady.requests) == N + retries(answers)
    resetting.fault("reset", mid_body=mid_body, every=2)  # every other call: some retries succeed on it
    solo = load(gw, "solo", 16)
    well_formed(solo, 16)
    assert set(statuses(solo)) <= {200, 502} and statuses(solo)[502] >= 1
    assert resetting.ok == statuses(solo)[200]


def test_a_429_storm_is_answered_with_429s_carrying_retry_after_and_then_served(fakes, gateway):
    a, b = fakes(), fakes()
    for fake in (a, b):
        fake.fault("storm", retry_after=1, seconds=0.8)
    gw = gateway([deployment("g", a.url), deployment("g", b.url)], num_retries=1, cooldown_time=0.5)
    answers = load(gw, "g", 96)
    well_formed(answers, 96)
    counts = statuses(answers)
    assert set(counts) <= {200, 429}, counts
    assert a.ok + b.ok == counts[200]
    assert len(a.requests) + len(b.requests) == 96 + retries(answers)
    for refused in (x for x in answers if x.status == 429):
        assert int(refused.headers["retry-after"]) >= 1  # the caller is told when to come back
    over = max(fake.since for fake in (a, b)) + 0.8 + 1.0  # the storm's end, then its Retry-After's cooldown
    time.sleep(max(0.0, over - time.monotonic()))
    after = load(gw, "g", 32)  # the storm is over: served again
    well_formed(after, 32)
    assert statuses(after) == {200: 32}


def test_a_storm_on_every_deployment_falls_back_to_another_group(fakes, gateway):
    stormy, spare = fakes(), fakes()
    stormy.fault("storm", retry_after=30)
    gw = gateway([deployment("g", stormy.url), deployment("spare", spare.url)], num_retries=0,
                 cooldown_time=30, fallbacks=[{"g": ["spare"]}])
    answers = load(gw, "g")
    well_formed(answers)
    assert statuses(answers) == {200: N} and spare.ok == N and stormy.ok == 0
    assert all(a.headers["x-decisions-attempted-fallbacks"] == "1" for a in answers)
    assert len(stormy.requests) <= 16  # cooled at its first 429: the rest went straight to the fallback


def test_a_long_retry_after_does_not_hold_a_request_that_has_a_fallback(fakes, gateway):
    stormy, spare = fakes(), fakes()
    stormy.fault("storm", retry_after=6)
    gw = gateway([deployment("g", stormy.url), deployment("spare", spare.url)], num_retries=1,
                 cooldown_time=30, fallbacks=[{"g": ["spare"]}])
    answers = load(gw, "g", 4, timeout_s=4)
    well_formed(answers, 4)
    assert statuses(answers) == {200: 4}
