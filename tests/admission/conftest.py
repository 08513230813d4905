"""Fixtures for the admission tests: an ``Admission`` per backend (memory, or the real Redis at
``DECISIONS_GATEWAY_TEST_REDIS_URL``, default 127.0.0.1:6379), each test under its own key prefix,
identities with unique key hashes, and a start away from a minute boundary. What a test wrote to
Redis is deleted after it."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from gateway.admission.admission import Admission
from gateway.auth.records import Identity, Limits
from gateway.shared_state import MemoryState, SharedState
from tests.shared_state.conftest import delete_prefix, make_redis_state

MARGIN_S = 3.0


@pytest.fixture(autouse=True)
def away_from_a_minute_boundary() -> None:
    """The rpm and tpm windows are fixed minutes (on the Redis server's clock, this machine's): a test
    that counts in one starts at least ``MARGIN_S`` before the next boundary, or waits for it."""
    left = 60 - time.time() % 60
    if left < MARGIN_S:
        time.sleep(left + 0.05)


@pytest.fixture
def prefix() -> str:
    return f"test:admission:{uuid.uuid4().hex}:"


def identity(alias: str = "k", team: Limits | None = None, team_alias: str | None = "t", **limits: Any) -> Identity:
    """A key with ``limits`` (and, with ``team``, in a team with those limits), with a fresh key hash."""
    return Identity(key_hash=uuid.uuid4().hex, key_alias=alias, key_limits=Limits(**limits),
                    team_id=f"team-{uuid.uuid4().hex[:8]}" if team is not None else None,
                    team_alias=team_alias if team is not None else None, team_limits=team)


class Backend:
    """Admissions over one backend: ``make()`` gives another, as another gateway process would have,
    each over its own ``RedisState``; in memory there is one process, so ``make()`` gives the same one."""

    def __init__(self, name: str, prefix: str) -> None:
        self.name = name
        self.prefix = prefix
        self.states: list[SharedState] = []

    def make(self, **options: Any) -> Admission:
        """Another process's ``Admission``; a request that finds its budget held by others is refused
        at once unless ``budget_wait_s`` says otherwise."""
        options.setdefault("budget_wait_s", 0.0)
        if self.name == "memory" and self.states:
            return self.one  # one process: one Admission
        state: SharedState = make_redis_state() if self.name == "redis" else MemoryState()
        self.states.append(state)
        self.one = Admission(state, prefix=self.prefix, **options)
        return self.one

    async def close(self) -> None:
        for state in self.states:
            await state.close()
        if self.name == "redis":
            await delete_prefix(self.prefix)


@pytest_asyncio.fixture(loop_scope="function", params=["memory", "redis"])
async def backend(request: pytest.FixtureRequest, prefix: str) -> AsyncIterator[Backend]:
    made = Backend(request.param, prefix)
    yield made
    await made.close()


@pytest_asyncio.fixture(loop_scope="function")
async def redis_backend(prefix: str) -> AsyncIterator[Backend]:
    made = Backend("redis", prefix)
    yield made
    await made.close()
