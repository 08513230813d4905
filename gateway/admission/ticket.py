"""What admission reserves for one request: the scopes whose limits apply (the key, its team, its user), each
reservation (``Hold``), the ``Ticket`` that carries them, and the ``x-ratelimit-*`` headers they give."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from gateway.auth.records import Identity, Limits


@dataclass(frozen=True, slots=True)
class Scope:
    """The key, the team or the user whose limits apply."""

    kind: str  # "key" | "team" | "user"
    id: str
    name: str  # for messages: key 'alias', team 'alias', user 'id'
    limits: Limits


@dataclass(slots=True)
class Hold:
    """One reservation of a ticket."""

    kind: str  # "rpm" | "tpm" | "parallel" | "budget"
    scope: Scope
    key: str
    amount: int  # requests, tokens, slots or micro-dollars reserved
    local: bool  # in this process's own state (Redis away), not the shared one
    window_s: float
    ends_at: float  # wall clock: after it the window is gone and the hold is left alone
    limit: int
    total: int  # the window's (or counter's) total after this hold (a budget's: spent and held)
    turn: str | None = None  # a budget hold that took the key's or team's turn: the ticket's token
    spent: int | None = None  # a budget hold, once settled: the period's spent counter after it


class Ticket:
    """What ``admit`` reserved: ``holds``, the ``headers`` to send, the ``tokens`` and ``cost_usd`` it
    reserved. Settle or release it once; a second call does nothing."""

    __slots__ = ("holds", "headers", "tokens", "cost_usd", "token", "key_spend_usd", "_open")

    def __init__(self, tokens: int = 0, cost_usd: float | None = None) -> None:
        self.holds: list[Hold] = []
        self.headers: dict[str, str] = {}
        self.tokens = tokens
        self.cost_usd = cost_usd
        self.token = uuid.uuid4().hex  # names this request's budget turn in the shared state
        self.key_spend_usd: float | None = None  # the key's counted spend after settle (a key with a budget)
        self._open = True

    @property
    def open(self) -> bool:
        return self._open


EMPTY_TICKET = Ticket()  # for the unlimited: never settled, never released


def rate_limited(limits: Limits) -> bool:
    return limits.rpm_limit is not None or limits.tpm_limit is not None or limits.max_parallel_requests is not None


def scopes_of(identity: Identity) -> list[Scope]:
    """The key, its team and its user, each that has a limit or a budget, always in this order (budget
    turns are taken in it, so two waiting requests never hold each other's turn). A user's limits
    apply to all its keys together, as a team's do."""
    scopes = []
    key = identity.key_limits
    if identity.key_hash is not None and (rate_limited(key) or key.max_budget is not None):
        name = f"key '{identity.key_alias}'" if identity.key_alias else \
            f"key {identity.key_prefix}" if identity.key_prefix else "this key"
        scopes.append(Scope("key", identity.key_hash, name, key))
    team = identity.team_limits
    if identity.team_id is not None and team is not None and (rate_limited(team) or team.max_budget is not None):
        scopes.append(Scope("team", identity.team_id, f"team '{identity.team_alias or identity.team_id}'", team))
    user = identity.user_limits
    if identity.user_id is not None and user is not None and (rate_limited(user) or user.max_budget is not None):
        scopes.append(Scope("user", identity.user_id, f"user '{identity.user_id}'", user))
    return scopes


def limit_headers(holds: Iterable[Hold]) -> dict[str, str]:
    """``x-ratelimit-{limit,remaining}-{requests,tokens}`` of the tightest of key, team and user."""
    tightest: dict[str, Hold] = {}
    for hold in holds:
        if hold.kind in ("rpm", "tpm"):
            other = tightest.get(hold.kind)
            if other is None or hold.limit - hold.total < other.limit - other.total:
                tightest[hold.kind] = hold
    headers: dict[str, str] = {}
    for kind, unit in (("rpm", "requests"), ("tpm", "tokens")):
        if (best := tightest.get(kind)) is not None:
            headers[f"x-ratelimit-limit-{unit}"] = str(best.limit)
            headers[f"x-ratelimit-remaining-{unit}"] = str(max(0, best.limit - best.total))
    return headers
