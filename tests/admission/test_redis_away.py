"""Redis away: rate limits fail open (counted in this process) or closed (503), budgets fail closed
(503, never an unchecked spend) or open; settle and release never raise; a Redis known to be down
costs no request a timeout; the unlimited are untouched."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from gateway.admission import admission as admission_module
from gateway.admission.admission import LIFETIME, Admission, Scope
from gateway.admission.errors import BudgetExceeded, LimitsUnavailable, RateLimited
from gateway.auth.records import Identity
from gateway.shared_state import FailoverState, MemoryState, RedisState, SharedState
from gateway.shared_state.budget import BudgetView
from tests.admission.conftest import identity
from tests.shared_state.conftest import free_port, wait_until

DEADLINE_S = 5.0


def dead_url() -> str:
    return f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there


@pytest_asyncio.fixture(loop_scope="function", params=["failover", "plain"])
async def dead_state(request: pytest.FixtureRequest) -> AsyncIterator[SharedState]:
    """A Redis that is not there: behind a FailoverState (what the gateway runs), or a bare RedisState
    whose calls raise."""
    redis = RedisState(dead_url())
    state: SharedState = FailoverState(redis, MemoryState(), retry_after_s=0.1) if request.param == "failover" \
        else redis
    yield state
    await state.close()


async def test_rate_limits_fail_open_and_count_in_this_process(dead_state: SharedState):
    admission = Admission(dead_state)
    who = identity("open", rpm_limit=3)
    started = time.monotonic()
    tickets = [await admission.admit(who, estimated_tokens=0, worst_cost_usd=None) for _ in range(3)]
    with pytest.raises(RateLimited):  # the limit still holds, per process
        await admission.admit(who, estimated_tokens=0, worst_cost_usd=None)
    for ticket in tickets:
        await admission.settle(ticket, tokens=None, cost_usd=None)
    assert time.monotonic() - started < DEADLINE_S
    status = admission.status()
    assert status["degraded"] is True and status["rate_limits"] == {"on_redis_failure": "fail_open",
                                                                    "serving": "local"}
    assert status["budgets"] == {"on_redis_failure": "fail_closed", "serving": "refused"}
    assert status["state_errors"] >= 1 and status["last_error"]


async def test_budgets_fail_closed_by_default(dead_state: SharedState):
    admission = Admission(dead_state)
    who = identity("budgeted", rpm_limit=100, max_budget=5.0)
    for _ in range(3):  # the first call finds Redis away, the others know it already
        with pytest.raises(LimitsUnavailable) as refused:
            await admission.admit(who, estimated_tokens=0, worst_cost_usd=0.01)
        err = refused.value
        assert err.status == 503 and err.code == "budgets_unavailable" and err.what == "budgets"
        assert "Redis" in err.message and "fail closed (general_settings.limits_on_redis_failure)" in err.message
        assert err.headers == {"Retry-After": "1"}
    assert (await admission.usage(who))["key"]["rpm"] == 0  # the rpm reservation was given back


async def test_rate_limits_fail_closed_when_told(dead_state: SharedState):
    admission = Admission(dead_state, on_redis_failure_rate_limits="fail_closed")
    with pytest.raises(LimitsUnavailable) as refused:
        await admission.admit(identity(rpm_limit=10), estimated_tokens=0, worst_cost_usd=None)
    assert refused.value.code == "rate_limits_unavailable"
    assert admission.status()["rate_limits"]["serving"] == "refused"
    master = await admission.admit(Identity.master("m" * 64), estimated_tokens=0, worst_cost_usd=None)
    assert master.headers == {}  # the unlimited need no state


async def test_budgets_fail_open_when_told_and_still_count_in_this_process(dead_state: SharedState):
    admission = Admission(dead_state, on_redis_failure_budgets="fail_open", budget_wait_s=0.0)
    who = identity(max_budget=0.05, spend=0.02)
    admitted = []
    for _ in range(5):
        try:
            admitted.append(await admission.admit(who, estimated_tokens=0, worst_cost_usd=0.01))
        except BudgetExceeded:
            pass
    assert len(admitted) == 3  # seeded from the database spend here too
    await admission.settle(admitted[0], tokens=None, cost_usd=0.001)
    assert (await admission.usage(who))["key"]["spend_usd"] == 0.041


class Flaky(MemoryState):
    """A "Redis" (a MemoryState on the wall clock) whose calls raise while ``broken``."""

    def __init__(self) -> None:
        super().__init__(clock=time.time)
        self.broken = False

    @property
    def backend(self) -> Any:
        return "redis"

    def _check(self) -> None:
        if self.broken:
            raise ConnectionError("Redis went away")

    async def incr(self, key: str, delta: int = 1, ttl_s: float | None = None) -> int:
        self._check()
        return await super().incr(key, delta, ttl_s)

    async def window_add(self, key: str, amount: int, window_s: float, limit: int | None = None) -> tuple[bool, int]:
        self._check()
        return await super().window_add(key, amount, window_s, limit)

    async def window_get(self, key: str, window_s: float) -> int:
        self._check()
        return await super().window_get(key, window_s)

    async def budget_reserve(self, *args: Any) -> BudgetView:
        self._check()
        return await super().budget_reserve(*args)

    async def budget_settle(self, *args: Any) -> tuple[int, int]:
        self._check()
        return await super().budget_settle(*args)


async def test_settle_and_release_never_raise_and_apply_their_changes_when_redis_is_back(monkeypatch):
    monkeypatch.setattr(admission_module, "RETRY_AFTER_S", 0.05)
    state = Flaky()
    admission = Admission(state)
    who = identity(rpm_limit=10, tpm_limit=1000, max_parallel_requests=2, max_budget=1.0)
    first = await admission.admit(who, estimated_tokens=10, worst_cost_usd=0.01)
    second = await admission.admit(who, estimated_tokens=10, worst_cost_usd=0.01)
    state.broken = True
    assert await admission.settle(first, tokens=5, cost_usd=0.001) == first.headers  # the figures of admit
    await admission.release(second)
    assert admission.status()["waiting_changes"] == 7  # tpm, slot, spend; rpm, tpm, slot, spend
    key = Scope("key", who.key_hash or "", "", who.key_limits)

    async def in_redis() -> tuple[int, int, int, int]:
        return (await state.window_get(admission.key_of("rpm", key), 60),
                await state.window_get(admission.key_of("tpm", key), 60),
                await state.get_int(admission.key_of("parallel", key)),
                sum(await state.budget_get(admission.key_of("spend", key, LIFETIME), LIFETIME.window_s)))

    state.broken = False
    assert await in_redis() == (2, 20, 2, 20_000)  # while Redis was away: the slots taken, the worst cases
    await wait_until(lambda: not admission.shared_away, DEADLINE_S, "the outage is over")
    await admission.close()  # what waited is applied
    assert await in_redis() == (1, 5, 0, 1_000)
    assert admission.status()["waiting_changes"] == 0


async def test_an_outage_mid_admit_falls_back_to_the_policy():
    state = Flaky()
    admission = Admission(state)
    who = identity(rpm_limit=10, max_budget=1.0)
    state.broken = True
    with pytest.raises(LimitsUnavailable):
        await admission.admit(who, estimated_tokens=10, worst_cost_usd=0.01)
    rate_only = identity(rpm_limit=1)
    await admission.admit(rate_only, estimated_tokens=0, worst_cost_usd=None)  # counted locally
    with pytest.raises(RateLimited):
        await admission.admit(rate_only, estimated_tokens=0, worst_cost_usd=None)


async def test_many_requests_against_a_dead_redis_pay_no_timeouts(dead_state: SharedState):
    admission = Admission(dead_state)
    started = time.monotonic()
    await asyncio.gather(*(admission.admit(identity(rpm_limit=5), estimated_tokens=0, worst_cost_usd=None)
                           for _ in range(200)))
    assert time.monotonic() - started < DEADLINE_S


async def test_a_memory_backend_is_never_degraded():
    admission = Admission(MemoryState(), on_redis_failure_budgets="fail_closed")
    await admission.admit(identity(max_budget=1.0), estimated_tokens=0, worst_cost_usd=0.01)
    assert admission.status()["degraded"] is False and admission.status()["budgets"]["serving"] == "local"


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="fail_open or fail_closed"):
        Admission(MemoryState(), on_redis_failure_budgets="open")  # type: ignore[arg-type]
