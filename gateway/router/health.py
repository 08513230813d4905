"""Deployment health and load in the shared state: cooldowns, failures, in-flight, latency, usage.

Keys (``router:<kind>:<deployment id>``): ``cool`` (the reason, living for the cooldown), ``fails``
(a fixed window of ``cooldown_time``), ``bad400`` (upstream 400s in a row), ``inflight``,
``latency``, ``rpm`` and ``tpm`` (fixed one-minute windows), ``last`` (the last outcome of a call,
for ``/health/providers``: gateway/router/outcomes.py). With Redis every gateway process
reads and writes the same keys, so a deployment one process cooled is cooled for all.

Only what the group's strategy and caps need is tracked on the hot path: in-flight counts for
``least-busy``, latency for ``latency-based-routing``, usage for the usage strategies and for
deployments with an ``rpm``/``tpm`` cap. Successes are booked behind the response (background
tasks); failures are booked before the next try, so a retry already sees the cooldown.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Sequence
from typing import Any

from gateway.router import policy
from gateway.router.outcomes import Outcome, Outcomes, masked
from gateway.router.settings import GroupPolicy
from gateway.router.strategies import Candidate
from gateway.shared_state import SharedState
from gateway.spend.cost import price_for
from providers.base import Deployment
from translators.errors import DecisionError
from translators.ir import Usage

log = logging.getLogger("gateway.router")

MINUTE_S = 60.0
INFLIGHT_TTL_S = 600.0  # in-flight counts of a process that died expire after this


def key_of(dep: Deployment) -> str:
    """The deployment's stable id (the same in every process for the same config entry)."""
    return dep.id or f"{dep.provider}/{dep.model}@{dep.api_base or ''}"


class Health:
    def __init__(self, state: SharedState, *, disable_cooldowns: bool = False):
        self.state = state
        self.disable_cooldowns = disable_cooldowns
        self._failing: set[str] = set()  # deployments this process saw fail (their counters to reset)
        self._tasks: set[asyncio.Task] = set()
        self.outcomes = Outcomes(state)  # the last outcome of each deployment's calls

    # ---- reading -----------------------------------------------------------------------------------

    async def candidates(self, deps: Sequence[Deployment], group: GroupPolicy,
                         excluded: Sequence[Deployment]) -> list[Candidate]:
        ids = [key_of(dep) for dep in deps]
        reads: dict[str, Awaitable[list[Any]]] = {}  # only what this group's strategy and limits need
        if not self.disable_cooldowns:
            reads["cooling"] = self.state.get_many([f"router:cool:{i}" for i in ids])
        if group.strategy == "least-busy":
            reads["in_flight"] = self.state.get_ints([f"router:inflight:{i}" for i in ids])
        if group.strategy == "latency-based-routing":
            reads["latency"] = self.state.latency([f"router:latency:{i}" for i in ids])
        if any(dep.rpm is not None for dep in deps):
            reads["rpm"] = self.state.window_get_many([f"router:rpm:{i}" for i in ids], MINUTE_S)
        if _tracks_usage(group, deps):
            reads["tpm"] = self.state.window_get_many([f"router:tpm:{i}" for i in ids], MINUTE_S)
        # More than one read goes out at once: with Redis, in one batch (one round trip), not one by one.
        values = await asyncio.gather(*reads.values()) if len(reads) > 1 else [await r for r in reads.values()]
        got = dict(zip(reads, values, strict=True))
        none, zero = [None] * len(ids), [0] * len(ids)
        cooling, in_flight, latency = got.get("cooling", none), got.get("in_flight", zero), got.get("latency", none)
        rpm, tpm = got.get("rpm", zero), got.get("tpm", zero)
        excluded_ids = {key_of(dep) for dep in excluded}
        out = []
        for k, dep in enumerate(deps):
            price = price_for(dep) if group.strategy == "cost-based-routing" else None
            out.append(Candidate(dep, cooling=cooling[k] is not None, tried=ids[k] in excluded_ids,
                                 in_flight=in_flight[k], latency_ms=latency[k], rpm_used=rpm[k], tpm_used=tpm[k],
                                 price=price.input if price is not None else None))
        return out

    async def is_cooling(self, dep: Deployment) -> bool:
        return not self.disable_cooldowns and await self.state.get(f"router:cool:{key_of(dep)}") is not None

    async def cooldown(self, dep: Deployment) -> tuple[str | None, float | None]:
        """(the reason, seconds left) of a deployment's cooldown, or (None, None)."""
        key = f"router:cool:{key_of(dep)}"
        return await self.state.get(key), await self.state.ttl(key)

    async def cooldowns(self, deps: Sequence[Deployment]) -> list[tuple[str | None, float | None]]:
        """``cooldown`` of many deployments: one round trip for the reasons, one more per cooling one."""
        keys = [f"router:cool:{key_of(dep)}" for dep in deps]
        reasons = await self.state.get_many(keys)
        return [(reason, await self.state.ttl(key) if reason is not None else None)
                for key, reason in zip(keys, reasons)]

    # ---- booking -----------------------------------------------------------------------------------

    def begin(self, dep: Deployment, group: GroupPolicy) -> None:
        dep_id = key_of(dep)
        if group.strategy == "least-busy":
            self._background(self.state.incr(f"router:inflight:{dep_id}", 1, INFLIGHT_TTL_S))
        if dep.rpm is not None or _tracks_usage(group, (dep,)):
            self._background(self.state.window_add(f"router:rpm:{dep_id}", 1, MINUTE_S))

    def end(self, dep: Deployment, group: GroupPolicy) -> None:
        if group.strategy == "least-busy":
            self._background(self.state.incr(f"router:inflight:{key_of(dep)}", -1, INFLIGHT_TTL_S))

    def succeeded(self, dep: Deployment, group: GroupPolicy, latency_ms: float, usage: Usage) -> None:
        self.end(dep, group)
        dep_id = key_of(dep)
        self._outcome(dep_id, Outcome(True, 200, round(latency_ms, 3), time.time()))
        if group.strategy == "latency-based-routing":
            self._background(self.state.record_latency(f"router:latency:{dep_id}", latency_ms, group.latency_ttl_s))
        tokens = usage.total_tokens
        if tokens and _tracks_usage(group, (dep,)):
            self._background(self.state.window_add(f"router:tpm:{dep_id}", int(tokens), MINUTE_S))
        if dep_id in self._failing:  # healthy again: its failure counts and any cooldown are lifted
            self._failing.discard(dep_id)
            for kind in ("fails", "bad400", "cool"):
                self._background(self.state.delete(f"router:{kind}:{dep_id}"))

    async def failed(self, dep: Deployment, group: GroupPolicy, err: DecisionError,
                     latency_ms: float | None = None) -> None:
        """Count the failure, and cool the deployment when its policy says so."""
        self.end(dep, group)
        dep_id = key_of(dep)
        self._outcome(dep_id, Outcome(False, err.status, round(latency_ms, 3) if latency_ms is not None else None,
                                      time.time(), err.code or err.type, masked(err.message, dep.api_key)))
        if self.disable_cooldowns:
            return
        self._failing.add(dep_id)
        error_class = policy.error_class(err)
        allowed = group.allowed_fails_policy.get(error_class, group.allowed_fails)
        if policy.cools_at_once(err):
            ttl = max(group.cooldown_time_s, policy.retry_after_s(err) or 0.0)
            await self._cool(dep, f"answered {err.status}", ttl)
        elif policy.counts_as_bad_request(err):
            in_a_row = await self.state.incr(f"router:bad400:{dep_id}", 1, max(group.cooldown_time_s, MINUTE_S))
            if in_a_row > allowed:
                await self._cool(dep, f"answered 400 to {in_a_row} valid requests in a row", group.cooldown_time_s)
        elif policy.retryable(err):
            fails = await self.state.fail_counter(f"router:fails:{dep_id}", group.cooldown_time_s)
            if fails > allowed:
                await self._cool(dep, f"{fails} failures within {group.cooldown_time_s:g} s (last: {err.status})",
                                 group.cooldown_time_s)

    async def _cool(self, dep: Deployment, reason: str, ttl_s: float) -> None:
        if ttl_s <= 0:
            return
        await self.state.set_until(f"router:cool:{key_of(dep)}", reason, ttl_s)
        log.warning("deployment %s/%s (%s) cooling down for %.1f s: %s", dep.provider, dep.model, key_of(dep),
                    ttl_s, reason)

    def _outcome(self, dep_id: str, outcome: Outcome) -> None:
        write = self.outcomes.record(dep_id, outcome)
        if write is not None:
            self._background(write)

    def _background(self, work) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("router bookkeeping failed: %s", task.exception())

    async def drain(self) -> None:
        """Wait for the bookkeeping in flight (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


def _tracks_usage(group: GroupPolicy, deps: Sequence[Deployment]) -> bool:
    return group.strategy in ("usage-based-routing", "usage-based-routing-v2") or any(
        dep.tpm is not None for dep in deps)
