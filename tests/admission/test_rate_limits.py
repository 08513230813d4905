"""rpm, tpm and max_parallel_requests, for a key and its team, in memory and across two processes on
the real Redis: exact counts under concurrency, 429 with Retry-After and the x-ratelimit headers."""

from __future__ import annotations

import asyncio
import math
import time

import pytest

from gateway.admission.admission import EMPTY_TICKET, Admission, Ticket
from gateway.admission.errors import RateLimited
from gateway.auth.records import Identity, Limits
from tests.admission.conftest import Backend, identity


async def admit_all(admissions: list[Admission], who: Identity, n: int, tokens: int = 0
                    ) -> tuple[list[Ticket], list[RateLimited]]:
    """``n`` concurrent admits spread over ``admissions``; the tickets and the refusals."""
    results = await asyncio.gather(*(admissions[i % len(admissions)].admit(who, estimated_tokens=tokens,
                                                                           worst_cost_usd=None)
                                     for i in range(n)), return_exceptions=True)
    for result in results:
        if not isinstance(result, Ticket | RateLimited):
            raise result  # type: ignore[misc]
    return [r for r in results if isinstance(r, Ticket)], [r for r in results if isinstance(r, RateLimited)]


def minute(now: float) -> int:
    return math.floor(now / 60)


async def test_rpm_across_two_processes_on_redis_admits_exactly_the_limit(redis_backend: Backend):
    one, two = redis_backend.make(), redis_backend.make()  # two gateway processes, one Redis
    who = identity("batch", rpm_limit=50)
    started = time.time()
    admitted, refused = await admit_all([one, two], who, 200)
    same_window = minute(started) == minute(time.time())
    assert len(admitted) == 50 if same_window else len(admitted) <= 100
    assert len(admitted) + len(refused) == 200
    for err in refused:
        assert err.status == 429 and err.type == "rate_limit_error" and err.scope == "key"
        assert err.limit == "rpm_limit"
        assert "key 'batch'" in err.message and "rpm_limit 50" in err.message and "fixed" in err.message
        assert 1 <= int(err.headers["Retry-After"]) <= 60
        assert err.headers["x-ratelimit-limit-requests"] == "50"
        assert err.headers["x-ratelimit-remaining-requests"] == "0"
    remaining = sorted(int(t.headers["x-ratelimit-remaining-requests"]) for t in admitted)
    if same_window:
        assert remaining == list(range(50))  # each admitted request saw its own place in the window
    for ticket in admitted:
        assert (await (one if admitted.index(ticket) % 2 else two).settle(ticket, tokens=None, cost_usd=None)
                )["x-ratelimit-limit-requests"] == "50"


async def test_max_parallel_requests_under_concurrency(backend: Backend):
    one, two = backend.make(), backend.make()
    who = identity("slots", max_parallel_requests=3)
    admitted, refused = await admit_all([one, two], who, 40)
    assert len(admitted) == 3 and len(refused) == 37
    assert all(err.headers["Retry-After"] == "1" and err.limit == "max_parallel_requests" for err in refused)
    assert "max_parallel_requests 3" in refused[0].message
    assert (await one.usage(who))["key"]["parallel"] == 3
    await one.settle(admitted[0], tokens=None, cost_usd=None)  # one slot free: exactly one more gets in
    again, refused = await admit_all([one, two], who, 10)
    assert len(again) == 1 and len(refused) == 9
    for ticket in admitted[1:] + again:
        await two.release(ticket)
    assert (await one.usage(who))["key"]["parallel"] == 0


async def test_requests_in_flight_never_pass_max_parallel(backend: Backend):
    admissions = [backend.make(), backend.make()]
    who = identity(max_parallel_requests=4)
    running = peak = served = 0

    async def client(i: int) -> None:
        nonlocal running, peak, served
        for _ in range(10):
            try:
                ticket = await admissions[i % 2].admit(who, estimated_tokens=0, worst_cost_usd=None)
            except RateLimited:
                await asyncio.sleep(0.001)
                continue
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.002)
            running -= 1
            served += 1
            await admissions[i % 2].settle(ticket, tokens=None, cost_usd=None)

    await asyncio.gather(*(client(i) for i in range(12)))
    assert peak <= 4 and served > 0
    assert (await admissions[0].usage(who))["key"]["parallel"] == 0


async def test_a_team_limit_applies_on_top_of_its_keys(backend: Backend):
    admission = backend.make()
    team = Limits(rpm_limit=5)
    first = identity("first", team=team, team_alias="research", rpm_limit=10)
    second = Identity(key_hash="k2-" + first.key_hash, key_alias="second", key_limits=Limits(rpm_limit=10),
                      team_id=first.team_id, team_alias="research", team_limits=team)
    for _ in range(3):
        await admission.admit(first, estimated_tokens=0, worst_cost_usd=None)
    for _ in range(2):
        await admission.admit(second, estimated_tokens=0, worst_cost_usd=None)
    with pytest.raises(RateLimited) as refused:
        await admission.admit(second, estimated_tokens=0, worst_cost_usd=None)
    err = refused.value
    assert err.scope == "team" and "team 'research'" in err.message and "rpm_limit 5" in err.message
    assert err.headers["x-ratelimit-limit-requests"] == "5" and err.headers["x-ratelimit-remaining-requests"] == "0"
    usage = await admission.usage(second)
    assert usage["key"]["rpm"] == 2 and usage["team"]["rpm"] == 5  # the key's reservation was given back

    tight = identity("tight", team=Limits(rpm_limit=100), rpm_limit=1)
    ticket = await admission.admit(tight, estimated_tokens=0, worst_cost_usd=None)
    assert ticket.headers["x-ratelimit-limit-requests"] == "1"  # the tighter of key and team
    assert ticket.headers["x-ratelimit-remaining-requests"] == "0"
    with pytest.raises(RateLimited) as refused:
        await admission.admit(tight, estimated_tokens=0, worst_cost_usd=None)
    assert refused.value.scope == "key" and "key 'tight'" in refused.value.message
    assert (await admission.usage(tight))["team"]["rpm"] == 1  # the team's was given back


async def test_tpm_reserves_the_estimate_and_settles_to_the_true_count(backend: Backend):
    admission = backend.make()
    who = identity("tokens", rpm_limit=100, tpm_limit=1000)
    ticket = await admission.admit(who, estimated_tokens=600, worst_cost_usd=None)
    assert ticket.headers["x-ratelimit-remaining-tokens"] == "400"
    with pytest.raises(RateLimited) as refused:
        await admission.admit(who, estimated_tokens=600, worst_cost_usd=None)
    err = refused.value
    assert err.limit == "tpm_limit" and "tpm_limit 1000" in err.message and "600" in err.message
    assert err.headers["x-ratelimit-limit-tokens"] == "1000" and err.headers["x-ratelimit-remaining-tokens"] == "400"
    assert err.headers["x-ratelimit-remaining-requests"] == "99"  # its own request was given back
    usage = await admission.usage(who)
    assert usage["key"]["rpm"] == 1 and usage["key"]["tpm"] == 600
    headers = await admission.settle(ticket, tokens=250, cost_usd=None)
    assert headers["x-ratelimit-remaining-tokens"] == "750" and headers["x-ratelimit-remaining-requests"] == "99"
    assert (await admission.usage(who))["key"]["tpm"] == 250
    await admission.admit(who, estimated_tokens=600, worst_cost_usd=None)  # fits now


async def test_a_request_estimated_above_the_whole_tpm_limit_gets_in_on_an_empty_window(backend: Backend):
    admission = backend.make()
    who = identity(tpm_limit=100)
    ticket = await admission.admit(who, estimated_tokens=5000, worst_cost_usd=None)
    assert (await admission.usage(who))["key"]["tpm"] == 100
    with pytest.raises(RateLimited):
        await admission.admit(who, estimated_tokens=1, worst_cost_usd=None)
    await admission.settle(ticket, tokens=4000, cost_usd=None)
    assert (await admission.usage(who))["key"]["tpm"] == 4000  # the truth, even past the limit


class Untouchable:
    """A shared state whose every call fails the test."""

    backend = "redis"
    degraded = False

    def __getattr__(self, name: str):
        raise AssertionError(f"the state was used: {name}")


async def test_the_unlimited_cost_nothing():
    admission = Admission(Untouchable())  # type: ignore[arg-type]
    for who in (Identity.master("m" * 64), Identity.anonymous(), identity()):  # the last: a key without limits
        ticket = await admission.admit(who, estimated_tokens=10**6, worst_cost_usd=10.0)
        assert ticket is EMPTY_TICKET and ticket.headers == {}
        assert await admission.settle(ticket, tokens=1, cost_usd=1.0) == {}
        await admission.release(ticket)
        assert await admission.settle(ticket, tokens=1, cost_usd=1.0) == {}  # shared: any number of times


async def test_settle_and_release_act_once(backend: Backend):
    admission = backend.make()
    who = identity(rpm_limit=10, tpm_limit=1000, max_parallel_requests=5)
    ticket = await admission.admit(who, estimated_tokens=100, worst_cost_usd=None)
    assert ticket.open
    assert await admission.settle(ticket, tokens=10, cost_usd=None) != {}
    assert not ticket.open
    assert await admission.settle(ticket, tokens=900, cost_usd=None) == {}
    await admission.release(ticket)
    assert await admission.usage(who) == {"key": {"rpm": 1, "tpm": 10, "parallel": 0, "spend_usd": 0.0,
                                                  "period_start": None}}
    other = await admission.admit(who, estimated_tokens=100, worst_cost_usd=None)
    await admission.release(other)
    await admission.release(other)
    await admission.settle(other, tokens=5, cost_usd=None)
    usage = (await admission.usage(who))["key"]
    assert (usage["rpm"], usage["tpm"], usage["parallel"]) == (1, 10, 0)  # release gave back exactly its own
