"""Keys and teams in the database (``gateway/db/models.py``): reads and writes, every value a bound parameter.

Rows leave as plain records (``KeyRecord``, ``TeamRecord`` from ``identity.py``), never as ORM objects,
so nothing outside a session can lazy-load. Callers validate values first (``gateway/admin/service.py``);
the functions here only read and write. A write that breaks a constraint (a second key with one alias,
a team that vanished meanwhile) raises ``Conflict``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.auth.durations import next_reset
from gateway.auth.records import Entry, KeyRecord, Limits, Membership, TeamRecord, UserRecord
from gateway.db.engine import Database
from gateway.db.models import Team, TeamMembership, User, VerificationToken
from gateway.utc import utc
from translators.errors import DecisionError

Row = TypeVar("Row", VerificationToken, Team, User)
Out = TypeVar("Out", KeyRecord, TeamRecord, UserRecord)

KEY_COLUMNS = frozenset(c.key for c in sa.inspect(VerificationToken).column_attrs)
TEAM_COLUMNS = frozenset(c.key for c in sa.inspect(Team).column_attrs)
USER_COLUMNS = frozenset(c.key for c in sa.inspect(User).column_attrs)


class Conflict(DecisionError):
    def __init__(self, message: str, field: str | None = None):
        super().__init__(status=400, message=message, loc=(field,) if field else None,
                         type="invalid_request_error", code="conflict")


def _limits(row: VerificationToken | Team | User) -> Limits:
    return Limits(rpm_limit=row.rpm_limit, tpm_limit=row.tpm_limit, max_parallel_requests=row.max_parallel_requests,
                  max_budget=row.max_budget, budget_duration=row.budget_duration,
                  budget_reset_at=row.budget_reset_at, spend=row.spend or 0.0)


def key_record(row: VerificationToken) -> KeyRecord:
    return KeyRecord(token=row.token, key_alias=row.key_alias, key_prefix=row.key_prefix, team_id=row.team_id,
                     user_id=row.user_id, models=tuple(row.models or ()), limits=_limits(row), expires=row.expires,
                     blocked=bool(row.blocked), metadata=_object(row.metadata_), tags=_texts(row.tags),
                     created_at=row.created_at, updated_at=row.updated_at, **_routes(row))


def team_record(row: Team) -> TeamRecord:
    return TeamRecord(team_id=row.team_id, team_alias=row.team_alias, models=tuple(row.models or ()),
                      limits=_limits(row), blocked=bool(row.blocked), metadata=_object(row.metadata_),
                      created_at=row.created_at, updated_at=row.updated_at, **_routes(row))


def user_record(row: User, teams: Sequence[Membership] = ()) -> UserRecord:
    return UserRecord(user_id=row.user_id, user_alias=row.user_alias, user_email=row.user_email,
                      user_role=row.user_role, models=tuple(row.models or ()), limits=_limits(row),
                      metadata=_object(row.metadata_), teams=tuple(teams), created_at=row.created_at,
                      updated_at=row.updated_at)


def _object(value: Any) -> dict[str, Any]:
    """``metadata``: anything but a JSON object (written by hand into the table) reads as empty."""
    return dict(value) if isinstance(value, dict) else {}


def _texts(value: Any) -> tuple[str, ...]:
    """``tags``: the strings of a JSON array; anything else reads as none."""
    return tuple(entry for entry in value if isinstance(entry, str)) if isinstance(value, list) else ()


def _routes(row: VerificationToken | Team) -> dict[str, tuple[str, ...]]:
    """The route grants; anything but strings (written by hand into the table) grants nothing."""
    out = {}
    for name in ("allowed_routes", "allowed_passthrough_routes"):
        value = getattr(row, name)
        out[name] = tuple(entry for entry in value if isinstance(entry, str)) if isinstance(value, list) else ()
    return out


def table_columns(values: Mapping[str, Any], allowed: frozenset[str]) -> dict[str, Any]:
    out = {("metadata_" if name == "metadata" else name): value for name, value in values.items()}
    unknown = set(out) - allowed
    if unknown:
        raise ValueError(f"not a column: {sorted(unknown)}")
    return out


# ---- keys ---------------------------------------------------------------------------------------


async def load_entry(db: Database, token: str) -> Entry | None:
    """The key with this id, its team and its user (each None when it has none) in one query, and the
    user's team memberships in a second (only for a key of a user); None when unknown."""
    query = (sa.select(VerificationToken, Team, User).outerjoin(Team, Team.team_id == VerificationToken.team_id)
             .outerjoin(User, User.user_id == VerificationToken.user_id).where(VerificationToken.token == token))
    async with db.sessions() as session:
        row = (await session.execute(query)).first()
        if row is None:
            return None
        key, team, user = row
        teams: list[Membership] = []
        if user is not None:
            members = sa.select(TeamMembership.team_id, TeamMembership.role).where(
                TeamMembership.user_id == user.user_id).order_by(TeamMembership.team_id)
            teams = [Membership(team_id, role) for team_id, role in (await session.execute(members)).all()]
    return (key_record(key), team_record(team) if team is not None else None,
            user_record(user, teams) if user is not None else None)


async def get_key(db: Database, *, token: str | None = None, alias: str | None = None) -> KeyRecord | None:
    if (token is None) == (alias is None):
        raise ValueError("give token or alias")
    where = VerificationToken.token == token if token is not None else VerificationToken.key_alias == alias
    async with db.sessions() as session:
        row = (await session.execute(sa.select(VerificationToken).where(where))).scalar_one_or_none()
        return key_record(row) if row is not None else None


async def insert_key(db: Database, values: Mapping[str, Any]) -> KeyRecord:
    return await _insert(db, VerificationToken(**table_columns(values, KEY_COLUMNS)), key_record)


async def update_key(db: Database, token: str, values: Mapping[str, Any]) -> KeyRecord | None:
    """Set ``values`` on the key ``token`` (a new ``token`` among them replaces its id: regenerate)."""
    return await _update(db, VerificationToken, token, table_columns(values, KEY_COLUMNS), key_record)


async def delete_keys(db: Database, tokens: Sequence[str] = (), aliases: Sequence[str] = ()) -> list[str]:
    """Delete the keys with these ids or aliases; the ids of those that existed."""
    conditions = []
    if tokens:
        conditions.append(VerificationToken.token.in_(list(tokens)))
    if aliases:
        conditions.append(VerificationToken.key_alias.in_(list(aliases)))
    if not conditions:
        return []
    async with db.sessions() as session:
        result = await session.execute(sa.delete(VerificationToken).where(sa.or_(*conditions))
                                       .returning(VerificationToken.token))
        deleted = [token for (token,) in result.all()]
        await session.commit()
    return deleted


async def list_keys(db: Database, *, page: int, size: int, team_id: str | None = None,
                    key_alias: str | None = None, user_id: str | None = None,
                    team_ids: Sequence[str] | None = None) -> tuple[list[KeyRecord], int]:
    """One page (from 1) of keys, newest first, and how many match in all. ``team_ids`` (None: any)
    bounds them to those teams' keys, or (with ``user_id``) to those teams' keys and the user's own."""
    where: list[Any] = []
    if team_id is not None:
        where.append(VerificationToken.team_id == team_id)
    if team_ids is not None:
        within = VerificationToken.team_id.in_(list(team_ids))
        where.append(sa.or_(within, VerificationToken.user_id == user_id) if user_id is not None else within)
    elif user_id is not None:
        where.append(VerificationToken.user_id == user_id)
    if key_alias is not None:
        where.append(VerificationToken.key_alias == key_alias)
    query = (sa.select(VerificationToken).where(*where)
             .order_by(VerificationToken.created_at.desc(), VerificationToken.token)
             .limit(size).offset((page - 1) * size))
    async with db.sessions() as session:
        total = (await session.execute(sa.select(sa.func.count()).select_from(VerificationToken)
                                       .where(*where))).scalar_one()
        rows = (await session.execute(query)).scalars().all()
        return [key_record(row) for row in rows], int(total)


# ---- teams --------------------------------------------------------------------------------------


async def get_team(db: Database, team_id: str) -> TeamRecord | None:
    async with db.sessions() as session:
        row = await session.get(Team, team_id)
        return team_record(row) if row is not None else None


async def teams_by_alias(db: Database, alias: str, limit: int = 2) -> list[TeamRecord]:
    """Teams with this alias (aliases need not be unique: ``limit`` tells whether there are several)."""
    query = sa.select(Team).where(Team.team_alias == alias).order_by(Team.created_at).limit(limit)
    async with db.sessions() as session:
        return [team_record(row) for row in (await session.execute(query)).scalars().all()]


async def insert_team(db: Database, values: Mapping[str, Any]) -> TeamRecord:
    return await _insert(db, Team(**table_columns(values, TEAM_COLUMNS)), team_record,
                         "a team with this team_id exists already", "team_id")


async def update_team(db: Database, team_id: str, values: Mapping[str, Any]) -> TeamRecord | None:
    return await _update(db, Team, team_id, table_columns(values, TEAM_COLUMNS), team_record)


async def delete_teams(db: Database, team_ids: Sequence[str]) -> tuple[list[str], int]:
    """Delete these teams, their keys and memberships, in one transaction: (the team ids deleted, keys deleted)."""
    return await delete_with_keys(db, Team, "team_id", team_ids)


async def delete_with_keys(db: Database, owner: type[Team] | type[User], id_name: str,
                           ids: Sequence[str]) -> tuple[list[str], int]:
    """Delete these teams or users (``owner`` rows by ``id_name``), the keys they own and their
    memberships, in one transaction: (the ids deleted, the number of keys deleted)."""
    ids = list(ids)
    async with db.sessions() as session:
        keys = await session.execute(sa.delete(VerificationToken).where(getattr(VerificationToken, id_name).in_(ids))
                                     .returning(VerificationToken.token))
        key_count = len(keys.all())
        await session.execute(sa.delete(TeamMembership).where(getattr(TeamMembership, id_name).in_(ids)))
        owners = await session.execute(sa.delete(owner).where(getattr(owner, id_name).in_(ids))
                                       .returning(getattr(owner, id_name)))
        deleted = [owner_id for (owner_id,) in owners.all()]
        await session.commit()
    return deleted, key_count


async def list_teams(db: Database, *, page: int, size: int) -> tuple[list[TeamRecord], int]:
    query = sa.select(Team).order_by(Team.created_at.desc(), Team.team_id).limit(size).offset((page - 1) * size)
    async with db.sessions() as session:
        total = (await session.execute(sa.select(sa.func.count()).select_from(Team))).scalar_one()
        rows = (await session.execute(query)).scalars().all()
        return [team_record(row) for row in rows], int(total)


TEAM_SORTS = frozenset({"team_id", "team_alias", "created_at", "updated_at", "spend", "max_budget", "tpm_limit",
                        "rpm_limit"})  # LiteLLM's /v2/team/list sort_by columns


async def search_teams(db: Database, *, page: int, size: int, team_ids: Sequence[str] | None = None,
                       alias_contains: str | None = None, sort_by: str | None = None, descending: bool = False,
                       ) -> tuple[list[tuple[TeamRecord, int]], int]:
    """One page (from 1) of teams, each with its number of keys, and how many match in all. ``team_ids``
    (None: any) bounds them; ``alias_contains`` matches ignoring case; ``sort_by`` is one of ``TEAM_SORTS``
    (newest first without it), then team_id."""
    where: list[Any] = []
    if team_ids is not None:
        where.append(Team.team_id.in_(list(team_ids)))
    if alias_contains:
        escaped = alias_contains.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        where.append(sa.func.lower(Team.team_alias).like(f"%{escaped.lower()}%", escape="\\"))
    if sort_by in TEAM_SORTS:
        column = getattr(Team, sort_by)
        order = [(column.desc() if descending else column.asc()).nulls_last(), Team.team_id]
    else:
        order = [Team.created_at.desc(), Team.team_id]
    keys = (sa.select(sa.func.count()).select_from(VerificationToken)
            .where(VerificationToken.team_id == Team.team_id).scalar_subquery())
    query = sa.select(Team, keys).where(*where).order_by(*order).limit(size).offset((page - 1) * size)
    async with db.sessions() as session:
        total = (await session.execute(sa.select(sa.func.count()).select_from(Team).where(*where))).scalar_one()
        rows = (await session.execute(query)).all()
        return [(team_record(row[0]), int(row[1])) for row in rows], int(total)


# ---- budget resets ------------------------------------------------------------------------------


async def reset_budgets(db: Database, now: datetime | None = None) -> int:
    """Zero the spend of every key, team and user whose ``budget_reset_at`` has passed and set its next reset;
    how many rows were reset. Safe to run from several processes (each row is locked while reset)."""
    now = now or datetime.now(UTC)
    async with db.sessions() as session:
        due: list[VerificationToken | Team | User] = [
            *await _due(session, VerificationToken, now, row_locks(db)), *await _due(session, Team, now, row_locks(db)),
            *await _due(session, User, now, row_locks(db))]
        for row in due:
            _reset(row, now)
        await session.commit()
    return len(due)


async def next_budget_reset(db: Database) -> datetime | None:
    """The earliest ``budget_reset_at`` of any key, team or user (None when none has one), so that the
    reset job can run when that period ends."""
    async with db.sessions() as session:
        found = [await session.scalar(sa.select(sa.func.min(model.budget_reset_at)))
                 for model in (VerificationToken, Team, User)]
    times = [utc(when) for when in found if when is not None]
    return min(times) if times else None


async def _due(session: AsyncSession, model: type[Row], now: datetime, lock: bool) -> Sequence[Row]:
    query = sa.select(model).where(model.budget_reset_at.is_not(None), model.budget_reset_at <= now)
    if lock:
        query = query.with_for_update(skip_locked=True)
    return (await session.execute(query)).scalars().all()


def _reset(row: VerificationToken | Team | User, now: datetime) -> None:
    row.spend = 0.0
    try:
        row.budget_reset_at = next_reset(row.budget_duration, now) if row.budget_duration else None
    except ValueError:  # written by hand into the table: no further resets rather than a failed job
        row.budget_reset_at = None


async def _insert(db: Database, row: Row, record: Callable[[Row], Out], *conflict: str) -> Out:
    async with db.sessions() as session:
        session.add(row)
        await commit_or_conflict(session, *conflict)
        return record(row)


async def _update(db: Database, model: type[Row], key: str, columns: Mapping[str, Any],
                  record: Callable[[Row], Out]) -> Out | None:
    async with db.sessions() as session:
        row = await session.get(model, key, with_for_update=row_locks(db))
        if row is None:
            return None
        for name, value in columns.items():
            setattr(row, name, value)
        row.updated_at = datetime.now(UTC)
        await commit_or_conflict(session)
        return record(row)


def row_locks(db: Database) -> bool:
    """Row locks where the database has them (SQLite's BEGIN IMMEDIATE already serialises writers)."""
    return db.dialect == "postgresql"


KEY_OR_TEAM_CONFLICT = "conflicts with an existing key or team (key_alias in use, or the team is gone)"


async def commit_or_conflict(session: AsyncSession, message: str = KEY_OR_TEAM_CONFLICT,
                             field: str | None = None) -> None:
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        raise Conflict(message, field) from None
