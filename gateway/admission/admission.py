"""Admission: a key's, its team's and its user's rate limits and budgets, checked and reserved before the call.

``admit(identity, estimated_tokens=..., worst_cost_usd=...)`` runs after auth and parse and returns a
``Ticket``; ``settle(ticket, tokens=..., cost_usd=...)`` after the answer turns the reservation into
the true figures and returns the ``x-ratelimit-*`` headers; ``release(ticket)`` on a failure gives
everything back. The master key and an open gateway (``identity.limited`` False), and an identity
without any limit, cost nothing: the shared ``EMPTY_TICKET``, no state call at admission.
``count_spend(identity, cost)`` counts a virtual key's spend all the same when it has no budget (one
state call after the answer), so that ``x-litellm-key-spend`` is the counted spend with this call.

What is checked, for the key, for its team and for its user (``Identity.user_limits``: all the user's
keys together, as a team's), each that has the limit (one atomic shared-state
operation a check, all of a request's checks at once; when one refuses, the reservations the others
made are given back with a negative ``window_add`` / an ``incr -1``):

- ``rpm_limit``: requests in the current **fixed** one-minute window (``floor(now / 60)``; all
  processes share it, it starts afresh at 0 on each minute, it does not slide). Refused: 429 with
  ``Retry-After`` = whole seconds to the next window.
- ``tpm_limit``: the request's estimated tokens reserved in the same kind of window (a request
  estimated above the whole limit reserves the limit: it gets in only when the window is empty);
  ``settle`` replaces the estimate by the true count while the window lasts.
- ``max_parallel_requests``: ``incr +1`` with a ttl safety net (``PARALLEL_TTL_S``: the slots of a
  process that died expire after it); over the limit, the slot is given back and the request
  refused (``Retry-After: 1``). ``settle`` and ``release`` free the slot.
- ``max_budget``: two promises at once: the spend ends at most one request above the budget (cold or
  warm, across processes), and a request whose true cost fits in what is left is not refused for its
  estimate. A request whose worst case (``worst_cost_usd``) fits in what is left (the budget less the
  period's spend and the reservations of requests in flight) holds that worst case, concurrently with
  others. When it does not fit, or is unknown (``None``: an unpriced model, a deployment that never
  answered), the key's (or team's) requests go **one at a time**: a request takes the scope's turn
  and holds all that is left, so nothing else gets past the budget while it runs, and it is let in
  whatever its estimate while anything is left. A request that finds nothing left while others hold
  reservations (or the turn) waits for them, asking again, up to ``budget_wait_s``; one that finds
  nothing left and nothing in flight is refused. Settling gives the reservation back and adds the true
  cost (an unknown cost: the reservation) to the spend, and frees the turn; the shared state does
  each step atomically (``budget_reserve`` / ``budget_settle``, gateway/shared_state/budget.py: one
  Lua script each in Redis). A turn whose process died frees itself after ``TURN_TTL_S``. The key's
  budget is taken before the team's and the team's before the user's, always (``scopes_of``'s order),
  so two waiting requests never hold each other's turn.
  Refused: ``BudgetExceeded``, 400, naming the spend, the reservations in flight and the estimate.

Budget accounting (counter names, periods, the database spend as the seed): gateway/admission/budgets.py.

Redis away (``state.degraded``, or a state call failing, which then counts as an outage for
``RETRY_AFTER_S``): rate limits follow ``on_redis_failure_rate_limits`` (``fail_open``, the default:
counted in this process's own ``MemoryState`` and admitted by it, so limits hold per process;
``fail_closed``: 503), budgets ``on_redis_failure_budgets`` (``fail_closed``, the default: 503 naming
the reason, never an unchecked spend; ``fail_open``: counted per process like the rate limits,
seeded from the database spend). What settling or releasing a ticket reserved in Redis would
change there while Redis is away waits in this process (up to ``PENDING_MAX`` changes) and is
applied when Redis answers again (in the background, from the next admit; ``close()`` at
shutdown); a window or period that ended meanwhile is left alone. Until then, and for good if the
process stops first, a budget keeps the worst case (never less than the truth) and a parallel slot
stays taken until its ttl. ``status()`` says what is served and refused, for readiness.

Clocks: Redis windows run on the Redis server's clock. With a memory backend (one process) the
counters live in a ``MemoryState`` of this module on the wall clock (``time.time``), not in the
process's shared one (monotonic), so budget windows line up with calendar periods and
``Retry-After`` is the true wait.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

# Budget amounts and periods live in gateway/admission/budgets.py; their names are re-exported here for callers.
from gateway.admission.budgets import (  # noqa: F401
    LIFETIME,
    LIFETIME_WINDOW_S,
    MICRO,
    Period,
    PeriodMemo,
    budget_message,
    budget_period,
    micro,
    worst_micro,
)
from gateway.admission.errors import BudgetExceeded, LimitsUnavailable, RateLimited
from gateway.admission.ticket import EMPTY_TICKET, Hold, Scope, Ticket, limit_headers, rate_limited, scopes_of  # noqa: F401 - Scope, Ticket and EMPTY_TICKET are re-exported
from gateway.auth.records import Identity, Limits
from gateway.shared_state import MemoryState, SharedState
from gateway.shared_state.budget import RESERVED, SPENT, TURN, BudgetView

log = logging.getLogger("gateway.admission")

Policy = Literal["fail_open", "fail_closed"]
POLICIES = ("fail_open", "fail_closed")
PREFIX = "admit:"
MINUTE_S = 60.0
PARALLEL_TTL_S = 600.0  # the parallel slots of a process that died expire after this
RETRY_AFTER_S = 1.0  # after a failed state call, the shared state counts as away this long
PENDING_MAX = 100_000  # changes that wait for Redis to come back; past this they are dropped
BUDGET_WAIT_S = 10.0  # how long a request waits for its budget's turn before it is refused
TURN_TTL_S = 300.0  # a turn held by a process that died frees itself after this
WAIT_FIRST_S, WAIT_MAX_S = 0.005, 0.05  # asking again for a turn: the first pause, and the longest

T = TypeVar("T")


class _SharedFailed(Exception):
    """A shared-state call failed, or the state degraded during it."""


class Admission:
    """Rate limits and budgets on the shared state; one per process (its fallback counters, seeds and
    waiting changes are the process's). See the module docstring."""

    def __init__(self, state: SharedState, *, on_redis_failure_rate_limits: Policy = "fail_open",
                 on_redis_failure_budgets: Policy = "fail_closed", prefix: str = PREFIX,
                 clock: Callable[[], float] = time.time, budget_wait_s: float = BUDGET_WAIT_S) -> None:
        for name, value in (("on_redis_failure_rate_limits", on_redis_failure_rate_limits),
                            ("on_redis_failure_budgets", on_redis_failure_budgets)):
            if value not in POLICIES:
                raise ValueError(f"{name} must be fail_open or fail_closed, got {value!r}")
        self.rate_policy: Policy = on_redis_failure_rate_limits
        self.budget_policy: Policy = on_redis_failure_budgets
        self.prefix = prefix
        self.budget_wait_s = budget_wait_s
        self._state = state
        self._clock = clock
        self._local = MemoryState(clock=clock)
        self._shared: SharedState = self._local if state.backend == "memory" else state
        self._away_until = 0.0  # monotonic
        self._errors = 0
        self._pending: list[tuple[Hold, int]] = []
        self._dropped = 0
        self._flusher: asyncio.Task[None] | None = None
        self._last_error: str | None = None
        self._periods = PeriodMemo()
        self._undoing: set[asyncio.Future[None]] = set()  # reservations given back after a cancelled admit

    # ---- readiness ------------------------------------------------------------------------------

    @property
    def shared_away(self) -> bool:
        """True while the shared state (Redis) is known to be unreachable."""
        if self._shared is self._local:
            return False
        return self._state.degraded or time.monotonic() < self._away_until

    def status(self) -> dict[str, Any]:
        """For readiness: the backend, whether Redis is away, and per kind of limit what serves it."""
        away = self.shared_away

        def serving(policy: Policy) -> str:
            return "local" if self._shared is self._local else \
                "shared" if not away else "local" if policy == "fail_open" else "refused"

        status: dict[str, Any] = {
            "backend": self._state.backend, "degraded": away,
            "rate_limits": {"on_redis_failure": self.rate_policy, "serving": serving(self.rate_policy)},
            "budgets": {"on_redis_failure": self.budget_policy, "serving": serving(self.budget_policy)},
            "state_errors": self._errors, "waiting_changes": len(self._pending), "dropped_changes": self._dropped}
        if self._last_error is not None:
            status["last_error"] = self._last_error
        return status

    def key_of(self, kind: str, scope: Scope, period: Period | None = None) -> str:
        """The state key of one counter: ``<prefix><rpm|tpm|parallel>:<key|team|user>:<id>``, and for the
        spend ``<prefix>spend:<key|team|user>:<id>:<period start|life>``."""
        base = f"{self.prefix}{kind}:{scope.kind}:{scope.id}"
        return base if period is None else f"{base}:{period.label}"

    async def usage(self, identity: Identity) -> dict[str, dict[str, Any]]:
        """What the counters hold now for the key, its team and its user: requests and tokens in this minute,
        requests in flight, the period's spend (USD, reservations included) and its start, from the
        state that serves now. For tests and admin views; a state error is raised."""
        store = self._store(self.shared_away)
        when = datetime.fromtimestamp(self._clock(), UTC)
        usage: dict[str, dict[str, Any]] = {}
        for scope in scopes_of(identity):
            period = self._periods.of(scope.limits, when)
            rpm, tpm = await store.window_get_many([self.key_of("rpm", scope), self.key_of("tpm", scope)], MINUTE_S)
            usage[scope.kind] = {
                "rpm": rpm, "tpm": tpm, "parallel": await store.get_int(self.key_of("parallel", scope)),
                "spend_usd": sum(await store.budget_get(self.key_of("spend", scope, period), period.window_s)) / MICRO,
                "period_start": period.start}
        return usage

    # ---- admit ----------------------------------------------------------------------------------

    async def admit(self, identity: Identity, *, estimated_tokens: int, worst_cost_usd: float | None) -> Ticket:
        """Check and reserve the key's, the team's and the user's limits for one request; raise ``RateLimited``
        (429), ``BudgetExceeded`` (400) or ``LimitsUnavailable`` (503). See the module docstring."""
        if not identity.limited:
            return EMPTY_TICKET
        scopes = scopes_of(identity)
        if not scopes:
            return EMPTY_TICKET
        tokens = max(0, int(estimated_tokens))
        worst = None if worst_cost_usd is None or not math.isfinite(worst_cost_usd) else max(0.0, worst_cost_usd)
        if not self.shared_away:
            if self._pending:
                self._flush_soon()
            ticket = Ticket(tokens, worst)
            try:
                await self._reserve(ticket, scopes, local=False)
                return ticket
            except _SharedFailed:
                await self._give_back(ticket)
        ticket = Ticket(tokens, worst)
        await self._reserve(ticket, scopes, local=True)
        return ticket

    async def _reserve(self, ticket: Ticket, scopes: list[Scope], *, local: bool) -> None:
        """Every check at once; on a refusal (or a failure) give back what was reserved and raise."""
        try:
            now = self._clock()
            rate_local = local and self._local_or_refuse(self.rate_policy, "rate_limits",
                                                         any(rate_limited(s.limits) for s in scopes))
            budgeted = [s for s in scopes if s.limits.max_budget is not None]
            budget_local = bool(budgeted) and local and self._local_or_refuse(self.budget_policy, "budgets", True)
            checks: list[Awaitable[None]] = []
            for scope in scopes:
                if scope.limits.rpm_limit is not None:
                    checks.append(self._window(ticket, "rpm", scope, 1, scope.limits.rpm_limit, rate_local, now))
            for scope in scopes:
                if (limit := scope.limits.tpm_limit) is not None:
                    checks.append(self._window(ticket, "tpm", scope, min(ticket.tokens, limit), limit, rate_local,
                                               now))
            for scope in scopes:
                if scope.limits.max_parallel_requests is not None:
                    checks.append(self._parallel(ticket, scope, scope.limits.max_parallel_requests, rate_local, now))
            if budgeted:
                checks.append(self._budgets(ticket, budgeted, budget_local, now))
            # Each check is one atomic operation of its own, so they run at once: one round trip to
            # Redis instead of one per check. A refusal of any gives back what the others reserved.
            outcomes = await asyncio.gather(*checks, return_exceptions=True)
            failures = [o for o in outcomes if isinstance(o, BaseException)]
            if failures:
                raise next((f for f in failures if isinstance(f, (_SharedFailed, LimitsUnavailable))), failures[0])
        except BaseException:
            await self._give_back(ticket)
            raise
        ticket.headers = limit_headers(ticket.holds)

    def _local_or_refuse(self, policy: Policy, what: str, needed: bool) -> bool:
        if not needed or self._shared is self._local or policy == "fail_open":
            return True
        label = "Rate limits" if what == "rate_limits" else "Budgets"
        raise LimitsUnavailable(f"{label} cannot be checked: the shared state (Redis) is unreachable and they "
                                f"fail closed (general_settings.limits_on_redis_failure); try again shortly.",
                                what=what)

    def _store(self, local: bool) -> SharedState:
        return self._local if local else self._shared

    async def _call(self, local: bool, call: Awaitable[T]) -> T:
        """Await one state operation of ``_store(local)``; a failure of the shared one is ``_SharedFailed``."""
        if local or self._shared is self._local:
            return await call
        try:
            result = await call
        except Exception as exc:  # any failure of the shared state is an outage to this module
            self._failed(f"{type(exc).__name__}: {exc}")
            raise _SharedFailed() from exc
        if self._state.degraded:  # the call was served from the failover's memory, not Redis
            self._failed("the shared state is degraded")
            raise _SharedFailed()
        return result

    def _failed(self, error: str) -> None:
        self._errors += 1
        if not self.shared_away:
            log.warning("admission: shared state unavailable (%s); rate limits %s, budgets %s",
                        error, self.rate_policy, self.budget_policy)
        self._last_error = error
        self._away_until = time.monotonic() + RETRY_AFTER_S

    async def _window(self, ticket: Ticket, kind: str, scope: Scope, amount: int, limit: int, local: bool,
                      now: float) -> None:
        """rpm or tpm: ``amount`` reserved in the current fixed minute."""
        key, store = self.key_of(kind, scope), self._store(local)
        if amount > 0:
            ok, total = await self._call(local, store.window_add(key, amount, MINUTE_S, limit))
        else:
            total = await self._call(local, store.window_get(key, MINUTE_S))
            ok = total < limit
        ends_at = (math.floor(now / MINUTE_S) + 1) * MINUTE_S
        hold = Hold(kind, scope, key, amount, local, MINUTE_S, ends_at, limit, total)
        if not ok:
            unit = "requests" if kind == "rpm" else "tokens"
            used = f"{total} {'used' if kind == 'rpm' else 'used or reserved'} in this one"
            need = f"; this request needs about {ticket.tokens}" if kind == "tpm" else ""
            retry = max(1, math.ceil(ends_at - now))
            raise self._limited(ticket, hold, f"{kind}_limit {limit} {unit} per minute (a fixed one-minute "
                                              f"window, {used}{need})", retry)
        ticket.holds.append(hold)

    async def _parallel(self, ticket: Ticket, scope: Scope, limit: int, local: bool, now: float) -> None:
        key, store = self.key_of("parallel", scope), self._store(local)
        total = await self._call(local, store.incr(key, 1, PARALLEL_TTL_S))
        if total > limit:
            hold = Hold("parallel", scope, key, 1, local, 0.0, math.inf, limit, total)
            await self._move([(hold, -1)])  # the slot given back (later, if Redis went away just now)
            hold.amount, hold.total = 0, total - 1
            raise self._limited(ticket, hold, f"max_parallel_requests {limit} (requests in flight at once)", 1)
        ticket.holds.append(Hold("parallel", scope, key, 1, local, 0.0, math.inf, limit, total))

    def _limited(self, ticket: Ticket, refused: Hold, what: str, retry_s: int) -> RateLimited:
        # The holds so far are given back as this is raised: count them out of the remaining figures.
        holds = [Hold(h.kind, h.scope, h.key, 0, h.local, h.window_s, h.ends_at, h.limit, h.total - h.amount)
                 for h in ticket.holds] + [refused]
        headers = {"Retry-After": str(retry_s), **limit_headers(holds)}
        return RateLimited(f"Rate limit exceeded for {refused.scope.name}: {what}; retry after {retry_s} s.",
                           scope=refused.scope.kind, limit=refused.kind + "_limit"
                           if refused.kind != "parallel" else "max_parallel_requests", headers=headers)

    async def _budgets(self, ticket: Ticket, scopes: list[Scope], local: bool, now: float) -> None:
        """The key's budget, then the team's, then the user's: one after the other, always in that order, so two
        requests that each wait for a turn never hold the other's (no deadlock)."""
        for scope in scopes:
            await self._budget(ticket, scope, local, now)

    async def _budget(self, ticket: Ticket, scope: Scope, local: bool, now: float) -> None:
        """The worst case held when it fits in what is left; otherwise this request waits for the
        scope's turn (or for reservations in flight to come back) up to ``budget_wait_s``, and takes
        the turn while anything is left (gateway/shared_state/budget.py)."""
        limits = scope.limits
        period, seed = self._period_and_seed(limits, now)
        key = self.key_of("spend", scope, period)
        budget = micro(limits.max_budget or 0.0)
        worst = None if ticket.cost_usd is None else worst_micro(ticket.cost_usd)
        ends_at = period.end.timestamp() if period.end is not None else math.inf
        waited_until = time.monotonic() + self.budget_wait_s
        pause = WAIT_FIRST_S
        while True:
            view = await self._reserve_once(local, key, period.window_s, budget, worst, seed, ticket.token)
            if view.verdict in (RESERVED, TURN):
                ticket.holds.append(Hold("budget", scope, key, view.amount, local, period.window_s, ends_at, budget,
                                         view.spent + view.held + view.amount,
                                         turn=ticket.token if view.verdict == TURN else None))
                return
            if view.verdict == SPENT or time.monotonic() >= waited_until:
                raise BudgetExceeded(budget_message(scope.name, period, budget, view.spent, view.held, worst),
                                     scope=scope.kind)
            await asyncio.sleep(pause)
            pause = min(WAIT_MAX_S, pause * 2)

    def _period_and_seed(self, limits: Limits, now: float) -> tuple[Period, int]:
        """The budget period that holds ``now`` and the database spend that seeds its counter."""
        if limits.budget_reset_at is None:  # no resets: the lifetime's spend
            return LIFETIME, micro(limits.spend)
        when = datetime.fromtimestamp(now, UTC)
        return self._periods.of(limits, when), micro(limits.current_spend(when))

    async def count_spend(self, identity: Identity, cost_usd: float | None) -> float | None:
        """For a virtual key without a budget (whose ticket settles no spend counter): ``cost_usd``
        added to the key's counted spend of its period, in the shared state as a budget would count
        it; returns that spend (USD), or None when the state cannot say (Redis away: the caller
        falls back to the database's). An unknown cost adds nothing."""
        if not identity.limited or identity.key_hash is None:
            return None
        limits = identity.key_limits
        now = self._clock()
        period, seed = self._period_and_seed(limits, now)
        key = self.key_of("spend", Scope("key", identity.key_hash, "", limits), period)
        local = self.shared_away
        amount = 0 if cost_usd is None or not math.isfinite(cost_usd) else micro(max(0.0, cost_usd))
        try:
            return await self._call(local, self._store(local).spend_add(key, period.window_s, amount, seed)) / MICRO
        except _SharedFailed:
            return None

    async def _reserve_once(self, local: bool, key: str, window_s: float, budget: int, worst: int | None,
                            seed: int, token: str) -> BudgetView:
        """One ``budget_reserve``. Cancelled meanwhile (the client went away), it still finishes, and
        what it held is given back (the turn freed) once it answers, never left to block the budget."""
        store = self._store(local)
        call = asyncio.ensure_future(store.budget_reserve(key, window_s, budget, worst, seed, token, TURN_TTL_S))
        try:
            return await self._call(local, asyncio.shield(call))
        except asyncio.CancelledError:
            def undo(done: asyncio.Future[BudgetView]) -> None:
                if done.cancelled() or done.exception() is not None or done.result().amount == 0:
                    return
                view = done.result()
                hold = Hold("budget", Scope("key", "", "", Limits()), key, view.amount, local, window_s, math.inf,
                            budget, 0, turn=token if view.verdict == TURN else None)
                self._flush_task(self._move([(hold, 0)]))

            call.add_done_callback(undo)
            raise

    def _flush_task(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._undoing.add(task)
        task.add_done_callback(self._undoing.discard)

    # ---- settle and release ---------------------------------------------------------------------

    async def settle(self, ticket: Ticket, *, tokens: int | None, cost_usd: float | None) -> dict[str, str]:
        """After the answer: the token reservation becomes ``tokens`` and the budget's reservation
        ``cost_usd`` of spend (within their window and period); an unknown figure (None) keeps its
        reservation (as spend, for a budget), never a made-up 0. Frees the parallel slot and the
        budget's turn. Returns the ``x-ratelimit-*`` headers, remaining after this request, and sets
        ``ticket.key_spend_usd`` (the key's counted spend, this request's cost included). Once per
        ticket; never raises on a state error."""
        if ticket is EMPTY_TICKET or not ticket._open:
            return {}
        ticket._open = False
        cost = None if cost_usd is None or not math.isfinite(cost_usd) else max(0.0, cost_usd)
        spent = None if cost is None else micro(cost)

        def delta_of(hold: Hold) -> int:
            if hold.kind == "budget":  # what the spent counter gains: the true cost, else the reservation
                return hold.amount if spent is None else spent
            return max(0, int(tokens)) - hold.amount if hold.kind == "tpm" and tokens is not None else 0

        await self._apply(ticket.holds, delta_of)
        for hold in ticket.holds:
            if hold.kind == "budget" and hold.scope.kind == "key" and hold.spent is not None:
                ticket.key_spend_usd = hold.spent / MICRO
        return limit_headers(ticket.holds)

    async def release(self, ticket: Ticket) -> None:
        """On a failure (no answer, no spend): give back every reservation and free the parallel slot
        and the budget's turn. Once per ticket; never raises on a state error."""
        if ticket is EMPTY_TICKET or not ticket._open:
            return
        ticket._open = False
        await self._give_back(ticket)

    async def _give_back(self, ticket: Ticket) -> None:
        await self._apply(ticket.holds, lambda hold: 0 if hold.kind == "budget" else -hold.amount)
        ticket.holds = []

    async def _apply(self, holds: Iterable[Hold], delta_of: Callable[[Hold], int]) -> None:
        """Each hold's window moved by ``delta_of(hold)`` (a budget hold: its reservation given back and
        ``delta_of(hold)`` spent), every parallel slot freed."""
        await self._move([(hold, -1 if hold.kind == "parallel" else delta_of(hold)) for hold in holds])

    async def _move(self, changes: list[tuple[Hold, int]]) -> None:
        """Apply each (hold, delta); a change to the shared state while it is away waits in ``_pending``
        for its return (a window that ended meanwhile is left alone). Errors are logged, never raised."""
        now = self._clock()
        for hold, delta in changes:
            if not delta and hold.kind != "budget":  # a budget hold always: it reads the spend after it
                continue
            if not hold.local and self.shared_away:
                self._defer(hold, delta)
                continue
            try:
                if hold.kind == "parallel":
                    await self._free_slot(hold)
                elif now < hold.ends_at:
                    store = self._store(hold.local)
                    if hold.kind == "budget":
                        spent, held = await self._call(hold.local, store.budget_settle(
                            hold.key, hold.window_s, hold.amount, delta, hold.turn))
                        hold.spent, hold.total = spent, spent + held
                    else:
                        _, hold.total = await self._call(hold.local, store.window_add(hold.key, delta, hold.window_s))
            except _SharedFailed:
                self._defer(hold, delta)
            except Exception:  # noqa: BLE001 - settle and release never raise to the caller
                log.exception("admission: could not settle a %s reservation", hold.kind)

    def _defer(self, hold: Hold, delta: int) -> None:
        if len(self._pending) < PENDING_MAX:
            self._pending.append((hold, delta))
        else:
            self._dropped += 1

    def _flush_soon(self) -> None:
        """The shared state answers again: apply what waited for it, in the background."""
        if self._pending and (self._flusher is None or self._flusher.done()):
            pending, self._pending = self._pending, []
            self._flusher = asyncio.get_running_loop().create_task(self._move(pending), name="admission-flush")

    async def close(self) -> None:
        """At shutdown: apply what still waits for the shared state, if it answers."""
        if not self.shared_away:
            self._flush_soon()
        if self._flusher is not None:
            await self._flusher
        if self._undoing:
            await asyncio.gather(*list(self._undoing), return_exceptions=True)

    async def _free_slot(self, hold: Hold) -> None:
        key, store = hold.key, self._store(hold.local)
        left = await self._call(hold.local, store.incr(key, -1, PARALLEL_TTL_S))
        if left < 0:  # the key expired while the request ran: undo this -1, or one slot too many opens
            left = await self._call(hold.local, store.incr(key, 1, PARALLEL_TTL_S))
        hold.total = left
