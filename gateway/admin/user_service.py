"""What the admin API does to internal users and team members, once: validated requests in, records out.

The users' half of ``service.py`` (keys and teams), sharing its ``Admin``, checks and change announcement.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gateway.admin import user_schemas
from gateway.admin.service import Admin, NotFound, announced, check_key_columns, check_models, find_team
from gateway.auth import roles, store, user_store
from gateway.auth.durations import expires_at, next_reset
from gateway.auth.keys import display_prefix, generate_key
from gateway.auth.records import KeyRecord, Membership, TeamRecord, UserRecord
from gateway.db.models import new_user_id
from translators.errors import RequestInvalid


def _user_columns(req: user_schemas.UserFields, now: datetime, *, only_set: bool) -> dict[str, Any]:
    given = req.model_fields_set if only_set else set(type(req).model_fields)
    values: dict[str, Any] = {}
    for name in ("user_alias", "user_email", "max_budget", "tpm_limit", "rpm_limit", "max_parallel_requests"):
        if name in given:
            values[name] = getattr(req, name)
    if "user_role" in given and (req.user_role is not None or not only_set):
        values["user_role"] = req.user_role or roles.INTERNAL_USER
    if "models" in given:
        values["models"] = list(req.models or [])
    if "metadata" in given:
        values["metadata"] = dict(req.metadata or {})
    if "budget_duration" in given:
        values["budget_duration"] = req.budget_duration
        values["budget_reset_at"] = next_reset(req.budget_duration, now) if req.budget_duration else None
    return values


async def find_user(admin: Admin, user_id: str | None = None, email: str | None = None,
                    field: str = "user_id") -> UserRecord:
    if user_id is None and email is None:
        raise RequestInvalid("Give user_id or user_email.", (field,), code="missing")
    record = await (user_store.get_user(admin.db, user_id) if user_id is not None
                    else user_store.get_user(admin.db, email=email))
    if record is None:
        raise NotFound("No such user.", field if user_id is not None else field.replace("user_id", "user_email"))
    return record


async def create_user(admin: Admin, req: user_schemas.NewUserRequest
                      ) -> tuple[UserRecord, str | None, KeyRecord | None]:
    """The user, its memberships and (``auto_create_key``) its key: (user, the key shown once, its record)."""
    now = datetime.now(UTC)
    values = _user_columns(req, now, only_set=False)
    check_models(admin, values)
    values.update(user_id=req.user_id or new_user_id(), spend=0.0)
    teams: dict[str, str] = {}
    for index, team in enumerate(req.teams or []):
        team_id, role = (team, roles.TEAM_USER) if isinstance(team, str) else (team.team_id, team.user_role)
        if await store.get_team(admin.db, team_id) is None:
            raise NotFound(f"teams[{index}] names no team; make it with /team/new first.", f"teams[{index}]")
        teams[team_id] = role
    if req.team_id is not None:
        if await store.get_team(admin.db, req.team_id) is None:
            raise NotFound("team_id names no team; make it with /team/new first.", "team_id")
        teams.setdefault(req.team_id, roles.TEAM_USER)
    if await user_store.get_user(admin.db, values["user_id"]) is not None:
        raise RequestInvalid("A user with this user_id exists already.", ("user_id",), code="conflict")
    if req.user_email is not None and await user_store.get_user(admin.db, email=req.user_email) is not None:
        raise RequestInvalid("A user with this user_email exists already.", ("user_email",), code="conflict")
    key_values: dict[str, Any] = {}
    if req.auto_create_key:
        key_values = {"key_alias": req.key_alias, "team_id": req.team_id,
                      "expires": expires_at(req.duration, now) if req.duration else None}
        await check_key_columns(admin, {k: v for k, v in key_values.items() if k != "expires"})
    user = await user_store.insert_user(admin.db, values, [Membership(t, r) for t, r in teams.items()])
    key = record = None
    if req.auto_create_key:
        key = generate_key()
        record = await store.insert_key(admin.db, {**key_values, "user_id": user.user_id, "spend": 0.0,
                                                   "token": admin.hasher.hash(key), "key_prefix": display_prefix(key)})
    await admin.changed()
    return user, key, record


async def update_user(admin: Admin, req: user_schemas.UpdateUserRequest) -> UserRecord:
    current = await find_user(admin, req.user_id, req.user_email if req.user_id is None else None)
    values = _user_columns(req, datetime.now(UTC), only_set=True)
    if req.user_id is None:
        values.pop("user_email", None)  # it named the user
    if "spend" in req.model_fields_set:
        values["spend"] = req.spend or 0.0
    check_models(admin, values)
    if values.get("user_email") is not None and values["user_email"] != current.user_email:
        if await user_store.get_user(admin.db, email=values["user_email"]) is not None:
            raise RequestInvalid("user_email is in use by another user.", ("user_email",), code="conflict")
    return await announced(admin, await user_store.update_user(admin.db, current.user_id, values), "user",
                            "user_id")


async def delete_users(admin: Admin, req: user_schemas.DeleteUsersRequest) -> tuple[list[str], int]:
    deleted, keys = await user_store.delete_users(admin.db, req.user_ids)
    if deleted:
        await admin.changed()
    return deleted, keys


async def add_members(admin: Admin, req: user_schemas.TeamMemberAddRequest) -> tuple[TeamRecord, list[UserRecord]]:
    team = await find_team(admin, req.team_id)
    members = req.member if isinstance(req.member, list) else [req.member]
    found: dict[str, tuple[UserRecord, str]] = {}
    for index, member in enumerate(members):
        where = f"member[{index}]" if isinstance(req.member, list) else "member"
        if member.user_id is None and member.user_email is None:
            raise RequestInvalid(f"{where}: give user_id or user_email.", (where, "user_id"), code="missing")
        user = await user_store.get_user(admin.db, member.user_id) if member.user_id is not None else \
            await user_store.get_user(admin.db, email=member.user_email)
        if user is None:
            raise NotFound(f"{where} names no user; make it with /user/new first.", where)
        found[user.user_id] = (user, member.role)
    await user_store.set_members(admin.db, team.team_id, [(uid, role) for uid, (_, role) in found.items()])
    await admin.changed()
    users = [await find_user(admin, uid) for uid in found]
    return team, users


async def _member(admin: Admin, team_id: str, user_id: str | None, email: str | None) -> UserRecord:
    await find_team(admin, team_id)
    user = await find_user(admin, user_id, email)
    if not any(m.team_id == team_id for m in user.teams):
        raise NotFound("The user is not a member of this team.", "user_id")
    return user


async def delete_member(admin: Admin, req: user_schemas.TeamMemberDeleteRequest) -> UserRecord:
    user = await _member(admin, req.team_id, req.user_id, req.user_email)
    await user_store.remove_members(admin.db, req.team_id, [user.user_id])
    await admin.changed()
    return user


async def update_member(admin: Admin, req: user_schemas.TeamMemberUpdateRequest) -> tuple[UserRecord, str]:
    user = await _member(admin, req.team_id, req.user_id, req.user_email)
    role: str = req.role or next(m.role for m in user.teams if m.team_id == req.team_id)
    await user_store.set_members(admin.db, req.team_id, [(user.user_id, role)])
    await admin.changed()
    return user, role


