"""Fixtures for the provider conformance suite: one running fake upstream per provider (session-wide)."""

from __future__ import annotations

import pytest

from tests.providers.cases import CASES


@pytest.fixture(scope="session")
def fakes():
    running = {}
    for case in CASES:
        running[case.provider] = case.make_fake().start()
    yield running
    for fake in running.values():
        fake.stop()


@pytest.fixture
def fake_for(fakes):
    """``fake_for(case)``: the provider's running fake, with its records and script cleared."""
    def get(case):
        fake = fakes[case.provider]
        fake.reset()
        return fake
    return get
