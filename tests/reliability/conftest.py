"""The reliability suite's fixtures: the throwaway PostgreSQL cluster and Redis server of tests/db and
tests/shared_state (never the machine's own on 5432 and 6379), and load bodies for both wires."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from tests.db.conftest import pg_cluster  # noqa: F401 - a fixture: initdb in a temporary folder, its own port
from tests.reliability.wire_checks import Request
from tests.router.test_routing_faults import gateway  # noqa: F401 - a fixture: gateway(model_list, **router)
from tests.shared_state.conftest import redis_server  # noqa: F401 - a fixture: redis-server on a free port

S1 = {"state": "I was charged twice for order #4411.",
      "questions": {"refund": {"type": "noul", "instructions": "Is this a refund request?"}}}
OPENAI = {"input": "I was charged twice for order #4411.",
          "questions": [{"type": "predicate", "name": "refund", "instructions": "Is this a refund request?"}]}


def decision(model: str, n: int, headers: dict[str, str] | None = None) -> Request:
    """The n-th request of a load: both wires in turn."""
    if n % 2:
        return "POST", "/v1/decisions", {**OPENAI, "model": model}, headers or {}
    return "POST", "/v1/systemone", {**S1, "model": model}, headers or {}


class Flag:
    def __init__(self) -> None:
        self.up = False

    def set(self) -> None:
        self.up = True


def decisions_until(stop: Flag, model: str, headers: dict[str, str] | None = None) -> Iterator[Request]:
    for n in itertools.count():
        if stop.up:
            return
        yield decision(model, n, headers)


def decisions(count: int, model: str, headers: dict[str, str] | None = None) -> Iterator[Request]:
    return (decision(model, n, headers) for n in range(count))
