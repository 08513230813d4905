"""Internal users and team memberships in the database: reads and writes, every value a bound parameter.

Like ``store.py`` (keys and teams), rows leave as plain records (``UserRecord``, ``Membership``) and
callers validate first (``gateway/admin/service.py``). Deleting a user deletes its keys and memberships
in one transaction; spend rows keep the user id they were written with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from gateway.auth.records import Membership, UserRecord
from gateway.auth.store import (
    USER_COLUMNS,
    Conflict,
    commit_or_conflict,
    delete_with_keys,
    row_locks,
    table_columns,
    user_record,
)
from gateway.db.engine import Database
from gateway.db.models import TeamMembership, User, VerificationToken, new_user_id


async def _teams_of(session: Any, user_ids: Sequence[str]) -> dict[str, list[Membership]]:
    if not user_ids:
        return {}
    query = (sa.select(TeamMembership.user_id, TeamMembership.team_id, TeamMembership.role)
             .where(TeamMembership.user_id.in_(list(user_ids))).order_by(TeamMembership.team_id))
    out: dict[str, list[Membership]] = {}
    for user_id, team_id, role in (await session.execute(query)).all():
        out.setdefault(user_id, []).append(Membership(team_id, role))
    return out


async def get_user(db: Database, user_id: str | None = None, *, email: str | None = None) -> UserRecord | None:
    """The user with this id (or, ``email``, this email) and its memberships; None when there is none."""
    if (user_id is None) == (email is None):
        raise ValueError("give user_id or email")
    where = User.user_id == user_id if user_id is not None else User.user_email == email
    async with db.sessions() as session:
        row = (await session.execute(sa.select(User).where(where))).scalar_one_or_none()
        if row is None:
            return None
        return user_record(row, (await _teams_of(session, [row.user_id])).get(row.user_id, ()))


async def insert_user(db: Database, values: Mapping[str, Any], teams: Sequence[Membership] = ()) -> UserRecord:
    """A new user and its memberships, in one transaction (``Conflict`` for a taken id or email, or a team gone)."""
    async with db.sessions() as session:
        row = User(**table_columns({"user_id": new_user_id(), **values}, USER_COLUMNS))
        session.add(row)
        try:  # the user first: without relationship()s the unit of work may not order the two tables
            await session.flush()
        except IntegrityError:
            await session.rollback()
            raise Conflict("a user with this user_id or user_email exists already", "user_id") from None
        session.add_all([TeamMembership(team_id=member.team_id, user_id=row.user_id, role=member.role)
                         for member in teams])
        await commit_or_conflict(session, "a team named in teams does not exist", "teams")
        return user_record(row, teams)


async def update_user(db: Database, user_id: str, values: Mapping[str, Any]) -> UserRecord | None:
    async with db.sessions() as session:
        row = await session.get(User, user_id, with_for_update=row_locks(db))
        if row is None:
            return None
        for name, value in table_columns(values, USER_COLUMNS).items():
            setattr(row, name, value)
        row.updated_at = datetime.now(UTC)
        await commit_or_conflict(session, "user_email is in use by another user", "user_email")
        return user_record(row, (await _teams_of(session, [user_id])).get(user_id, ()))


async def delete_users(db: Database, user_ids: Sequence[str]) -> tuple[list[str], int]:
    """Delete these users, their keys and memberships, in one transaction: (the user ids deleted, keys deleted)."""
    return await delete_with_keys(db, User, "user_id", user_ids)


async def list_users(db: Database, *, page: int, size: int, user_ids: Sequence[str] | None = None,
                     role: str | None = None, team_id: str | None = None,
                     ) -> tuple[list[tuple[UserRecord, int]], int]:
    """One page (from 1) of users, newest first, each with its number of keys, and how many match in
    all. ``user_ids`` (None: any) bounds them; ``role`` and ``team_id`` (a member of it) filter."""
    where: list[Any] = []
    if user_ids is not None:
        where.append(User.user_id.in_(list(user_ids)))
    if role is not None:
        where.append(User.user_role == role)
    if team_id is not None:
        where.append(User.user_id.in_(sa.select(TeamMembership.user_id).where(TeamMembership.team_id == team_id)))
    keys = (sa.select(sa.func.count()).select_from(VerificationToken)
            .where(VerificationToken.user_id == User.user_id).scalar_subquery())
    query = (sa.select(User, keys).where(*where).order_by(User.created_at.desc(), User.user_id)
             .limit(size).offset((page - 1) * size))
    async with db.sessions() as session:
        total = (await session.execute(sa.select(sa.func.count()).select_from(User).where(*where))).scalar_one()
        rows = (await session.execute(query)).all()
        teams = await _teams_of(session, [row[0].user_id for row in rows])
        return [(user_record(row[0], teams.get(row[0].user_id, ())), int(row[1])) for row in rows], int(total)


async def set_members(db: Database, team_id: str, members: Sequence[tuple[str, str]]) -> None:
    """Add (user_id, role) members to the team, or change the role of those already in it."""
    async with db.sessions() as session:
        for user_id, role in members:
            row = await session.get(TeamMembership, (team_id, user_id), with_for_update=row_locks(db))
            if row is None:
                session.add(TeamMembership(team_id=team_id, user_id=user_id, role=role))
            else:
                row.role = role
        await commit_or_conflict(session, "the team or a user is gone", "team_id")


async def remove_members(db: Database, team_id: str, user_ids: Sequence[str]) -> list[str]:
    """Remove these users from the team; the ids of those that were members."""
    async with db.sessions() as session:
        result = await session.execute(sa.delete(TeamMembership).where(
            TeamMembership.team_id == team_id, TeamMembership.user_id.in_(list(user_ids)))
            .returning(TeamMembership.user_id))
        removed = [user_id for (user_id,) in result.all()]
        await session.commit()
    return removed


async def members_of(db: Database, team_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Each team's members as LiteLLM's ``members_with_roles``: ``{"user_id", "user_email", "role"}``."""
    if not team_ids:
        return {}
    query = (sa.select(TeamMembership.team_id, TeamMembership.user_id, User.user_email, TeamMembership.role)
             .join(User, User.user_id == TeamMembership.user_id)
             .where(TeamMembership.team_id.in_(list(team_ids))).order_by(TeamMembership.created_at,
                                                                         TeamMembership.user_id))
    out: dict[str, list[dict[str, Any]]] = {team_id: [] for team_id in team_ids}
    async with db.sessions() as session:
        for team_id, user_id, email, role in (await session.execute(query)).all():
            out[team_id].append({"user_id": user_id, "user_email": email, "role": role})
    return out
