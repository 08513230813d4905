"""Waiting for the work a gateway under test (``tests.conftest.RunningGateway``) does behind its
responses: the settling of limits and budgets, the client watchers, the spend outbox's drain.

``resting = tasks_of(gateway)`` before the requests; ``wait_settled(gateway, resting, what)`` after
them returns once every task they started on the gateway's event loop has ended and the spend
outbox is empty (each row in the database), and fails naming ``what`` after the deadline. It reads
the loop from the test's thread (``asyncio.all_tasks`` of another thread's loop), so it makes no
objects on the gateway's side: the garbage test counts those.
"""

from __future__ import annotations

import asyncio

from tests.shared_state.conftest import SETTLE_TIMEOUT_S, wait_for


def tasks_of(gateway) -> set[asyncio.Task]:
    """The tasks running now on the gateway's event loop (its server thread's)."""
    return asyncio.all_tasks(gateway.server.servers[0].get_loop())


def settled(gateway, resting: set[asyncio.Task]) -> bool:
    outbox = gateway.state.spend.outbox
    return tasks_of(gateway) <= resting and (outbox is None or outbox.depth() == 0)


def wait_settled(gateway, resting: set[asyncio.Task], what: str, timeout_s: float = SETTLE_TIMEOUT_S) -> None:
    wait_for(lambda: settled(gateway, resting), timeout_s, lambda:
             f"{what}: tasks still running {sorted(t.get_name() for t in tasks_of(gateway) - resting)}, "
             f"spend rows in the outbox {gateway.state.spend.outbox and gateway.state.spend.outbox.depth()}")
