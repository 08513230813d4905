"""The budget reset job: each key's and team's period ends in the database too.

Admission counts a period's spend in the shared state and starts a new period on its own when
``budget_reset_at`` passes; the database's ``spend`` column (what ``/key/info`` and ``/team/info``
show) and ``budget_reset_at`` are moved on by ``store.reset_budgets``, which this job runs: at the
earliest ``budget_reset_at`` of any key or team, and at least every ``max_wait_s`` (LiteLLM's
``proxy_budget_rescheduler_max_time``, 605 s by default; a key made meanwhile with a shorter period
is reset then, and its budget already starts afresh in admission at its period's end). A random
pause from ``proxy_budget_rescheduler_min_time`` (597 s) to the maximum stands for "nothing due";
``general_settings.disable_reset_budget: true`` turns the job off. Each gateway process runs it; a
reset is safe from several at once (rows locked while reset). A database error is logged and the
job tries again later; it never stops the gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gateway.auth import store

if TYPE_CHECKING:
    from gateway.db.engine import Database

log = logging.getLogger("gateway.auth.budget_resets")

MIN_WAIT_S, MAX_WAIT_S = 597.0, 605.0  # LiteLLM's defaults
SOONEST_S = 0.05  # a reset due now, or just past, runs after this pause (the clock's rounding)
NO_DATABASE_S = 1.0  # how often it looks for the database before it is open
RETRY_S = 5.0  # after a database error


class BudgetResets:
    """``start()`` once the event loop runs; ``close()`` at shutdown. See the module docstring."""

    def __init__(self, db_of: Callable[[], Database | None], general_settings: dict[str, Any]) -> None:
        self._db_of = db_of
        self.enabled = not bool(general_settings.get("disable_reset_budget", False))
        self.min_wait_s = _seconds(general_settings.get("proxy_budget_rescheduler_min_time"), MIN_WAIT_S)
        self.max_wait_s = max(self.min_wait_s, _seconds(general_settings.get("proxy_budget_rescheduler_max_time"),
                                                        MAX_WAIT_S))
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.enabled and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="budget-resets")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run_once(self, db: Database) -> float:
        """Reset what is due; return how long to wait for the next run."""
        reset = await store.reset_budgets(db)
        if reset:
            log.info("budget resets: %d key(s) and team(s) started a new budget period", reset)
        pause = random.uniform(self.min_wait_s, self.max_wait_s)
        due = await store.next_budget_reset(db)
        if due is not None:
            pause = min(pause, max(SOONEST_S, (due - datetime.now(UTC)).total_seconds() + SOONEST_S))
        return pause

    async def _run(self) -> None:
        while True:
            db = self._db_of()
            pause = NO_DATABASE_S
            if db is not None:
                try:
                    pause = await self.run_once(db)
                except Exception as exc:  # noqa: BLE001 - the job retries; it never stops the gateway
                    log.warning("budget resets: the database failed (%s: %s); trying again in %.0f s",
                                type(exc).__name__, exc, RETRY_S)
                    pause = RETRY_S
            await asyncio.sleep(pause)


def _seconds(value: Any, default: float) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return default
    return seconds if math.isfinite(seconds) and seconds > 0 else default
