"""Who a key is, as data: the key's, its team's and its user's records (what the store reads, without
SQLAlchemy), their limits and budget, and the ``Identity`` built from them. No I/O: the store
(``store.py``) reads and writes these records, the authenticator (``identity.py``) resolves a key to
an ``Identity`` through the store, and admission reads the limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gateway.auth.routes import RouteGrants
from gateway.utc import utc

ALL_MODELS = frozenset({"*", "all-proxy-models", "all-team-models"})  # LiteLLM's names for every model (of the team)


@dataclass(frozen=True, slots=True)
class Limits:
    """A key's or a team's limits and budget; None means no limit."""

    rpm_limit: int | None = None
    tpm_limit: int | None = None
    max_parallel_requests: int | None = None
    max_budget: float | None = None
    budget_duration: str | None = None
    budget_reset_at: datetime | None = None
    spend: float = 0.0

    def current_spend(self, now: datetime | None = None) -> float:
        """The spend that counts against ``max_budget`` now: 0 once ``budget_reset_at`` has passed
        (before the reset job has written it)."""
        if self.budget_reset_at is not None and utc(self.budget_reset_at) <= (now or datetime.now(UTC)):
            return 0.0
        return self.spend

    def budget_left(self, now: datetime | None = None) -> float | None:
        return None if self.max_budget is None else self.max_budget - self.current_spend(now)


NO_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """What the store reads of one key (``verification_tokens``), without SQLAlchemy."""

    token: str  # the HMAC id
    key_alias: str | None = None
    key_prefix: str | None = None
    team_id: str | None = None
    user_id: str | None = None
    models: tuple[str, ...] = ()
    limits: Limits = NO_LIMITS
    expires: datetime | None = None
    blocked: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    created_at: datetime | None = None
    updated_at: datetime | None = None
    allowed_routes: tuple[str, ...] = ()  # LiteLLM's: empty, every decision route; else only these
    allowed_passthrough_routes: tuple[str, ...] = ()  # the pass-throughs it may call (none when empty)


@dataclass(frozen=True, slots=True)
class TeamRecord:
    team_id: str
    team_alias: str | None = None
    models: tuple[str, ...] = ()
    limits: Limits = NO_LIMITS
    blocked: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    allowed_routes: tuple[str, ...] = ()
    allowed_passthrough_routes: tuple[str, ...] = ()
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Membership:
    """One team a user belongs to, and the user's role in it (``admin`` or ``user``)."""

    team_id: str
    role: str = "user"


@dataclass(frozen=True, slots=True)
class UserRecord:
    """What the store reads of one internal user (``users``) and the teams it belongs to."""

    user_id: str
    user_alias: str | None = None
    user_email: str | None = None
    user_role: str = "internal_user"  # proxy_admin | proxy_admin_viewer | internal_user | internal_user_viewer
    models: tuple[str, ...] = ()
    limits: Limits = NO_LIMITS
    metadata: dict[str, Any] = field(default_factory=dict)
    teams: tuple[Membership, ...] = ()
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Identity:
    """The resolved caller. ``models`` None means every model; an empty set means none."""

    key_hash: str | None
    key_alias: str | None = None
    key_prefix: str | None = None
    team_id: str | None = None
    team_alias: str | None = None
    models: frozenset[str] | None = None
    key_limits: Limits = NO_LIMITS
    team_models: frozenset[str] | None = None  # the team's own restriction (None: none), to name it in a refusal
    team_limits: Limits | None = None
    blocked: bool = False
    expires: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    is_master: bool = False
    team_metadata: Mapping[str, Any] = field(default_factory=dict)  # the team's (its ``cache`` switch)
    routes: RouteGrants = field(default_factory=RouteGrants)  # the routes it may call (routes.py)
    user_id: str | None = None  # the key's internal user (None: a key of no user)
    user_role: str | None = None  # the user's role (None without a user; the master key is proxy_admin)
    user_limits: Limits | None = None
    user_models: frozenset[str] | None = None  # the user's own restriction (None: none), to name it in a refusal
    team_roles: Mapping[str, str] = field(default_factory=dict)  # team id -> the user's role in it

    @classmethod
    def master(cls, key_hash: str | None = None) -> Identity:
        return cls(key_hash=key_hash, key_alias="master", is_master=True)

    @classmethod
    def anonymous(cls) -> Identity:
        return cls(key_hash=None, key_alias=None)

    @classmethod
    def of(cls, key: KeyRecord, team: TeamRecord | None, user: UserRecord | None = None) -> Identity:
        models = allowed_models(key.models, team.models if team else ())
        user_models = allowed_models((), user.models) if user else None
        if user_models is not None:
            models = user_models if models is None else models & user_models
        return cls(
            key_hash=key.token, key_alias=key.key_alias, key_prefix=key.key_prefix, team_id=key.team_id,
            team_alias=team.team_alias if team else None,
            models=models,
            team_models=allowed_models((), team.models) if team else None,
            key_limits=key.limits, team_limits=team.limits if team else None,
            blocked=key.blocked or bool(team and team.blocked),
            expires=utc(key.expires) if key.expires is not None else None,
            metadata=dict(key.metadata), tags=key.tags, team_metadata=dict(team.metadata) if team else {},
            routes=RouteGrants.of(key.allowed_routes, key.allowed_passthrough_routes,
                                  team.allowed_routes if team else (), team.allowed_passthrough_routes if team else ()),
            user_id=user.user_id if user else None, user_role=user.user_role if user else None,
            user_limits=user.limits if user else None, user_models=user_models,
            team_roles={m.team_id: m.role for m in user.teams} if user else {},
        )

    @property
    def limited(self) -> bool:
        """False for the master key and an open gateway: no limit or budget applies."""
        return self.key_hash is not None and not self.is_master


def allowed_models(key_models: tuple[str, ...] | list[str], team_models: tuple[str, ...] | list[str]
                   ) -> frozenset[str] | None:
    """The key's models within its team's; None when both allow every model."""
    key_set = None if not key_models or ALL_MODELS & set(key_models) else frozenset(key_models)
    team_set = None if not team_models or ALL_MODELS & set(team_models) else frozenset(team_models)
    if key_set is None:
        return team_set
    return key_set if team_set is None else key_set & team_set


# A key's row, its team's (None: no team, or the team is gone) and its user's (None: no user, or gone).
Entry = tuple[KeyRecord, TeamRecord | None, UserRecord | None]
