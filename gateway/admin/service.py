"""What the admin API and the CLI do to keys and teams, once: validated requests in, records out.

``Admin(db, hasher, changed)``: the database, the key hasher (the server secret) and what to call after
every change (``Authenticator.changed``: every gateway process forgets the keys it cached). The HTTP
routes (``keys.py``, ``teams.py``) and ``cli.py`` build one and call the same functions, so both
validate alike. A key is shown once, in the result of ``create_key`` / ``regenerate_key``; everything
else names it by its id (``token``, the keyed hash) or alias.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from gateway.admin import schemas, user_schemas
from gateway.auth import roles, store, user_store
from gateway.auth.durations import expires_at, next_reset
from gateway.auth.errors import PermissionDenied
from gateway.auth.keys import KEY_PREFIX, KeyHasher, display_prefix, generate_key, is_hash_id
from gateway.auth.records import ALL_MODELS, Identity, KeyRecord, TeamRecord, UserRecord, allowed_models
from gateway.config.registry import ModelRegistry
from gateway.db import queries
from gateway.db.engine import Database
from gateway.db.models import new_team_id
from providers.registry import PROVIDERS
from translators.errors import DecisionError, RequestInvalid, Where

Saved = TypeVar("Saved", KeyRecord, TeamRecord, UserRecord)
MASTER = Identity.master()  # who the CLI acts as (it holds the database)


class NotFound(DecisionError):
    def __init__(self, message: str, field: str):
        super().__init__(status=404, message=message, loc=(field,), type="not_found_error", code="not_found")


async def _nothing() -> None:
    return None


@dataclass
class Admin:
    db: Database
    hasher: KeyHasher
    changed: Callable[[], Awaitable[None]] = _nothing
    registry: ModelRegistry | None = None  # the gateway's: the models a key or team names must be among them

    def token_of(self, ref: str) -> str | None:
        """The id of a key given as the key itself or as its id; None for anything else."""
        if ref.startswith(KEY_PREFIX):
            return self.hasher.hash(ref)
        return ref if is_hash_id(ref) else None


# ---- keys ---------------------------------------------------------------------------------------


def _limit_columns(req: schemas.LimitFields, now: datetime, *, only_set: bool) -> dict[str, Any]:
    """The columns a request sets; with ``only_set``, just the fields it named (an update)."""
    given = req.model_fields_set if only_set else set(type(req).model_fields)
    values: dict[str, Any] = {}
    for name in ("max_budget", "tpm_limit", "rpm_limit", "max_parallel_requests"):
        if name in given:
            values[name] = getattr(req, name)
    for name in ("models", "allowed_routes", "allowed_passthrough_routes"):
        if name in given:
            values[name] = list(getattr(req, name) or [])
    if "metadata" in given:
        values["metadata"] = dict(req.metadata or {})
    if "blocked" in given and (req.blocked is not None or not only_set):
        values["blocked"] = bool(req.blocked)
    if "budget_duration" in given:
        values["budget_duration"] = req.budget_duration
        values["budget_reset_at"] = next_reset(req.budget_duration, now) if req.budget_duration else None
    return values


def _key_columns(req: schemas.KeyFields, now: datetime, *, only_set: bool) -> dict[str, Any]:
    values = _limit_columns(req, now, only_set=only_set)
    given = req.model_fields_set if only_set else set(type(req).model_fields)
    for name in ("key_alias", "team_id", "user_id"):
        if name in given:
            values[name] = getattr(req, name)
    if "tags" in given:
        values["tags"] = list(req.tags or [])
    duration = getattr(req, "duration", None)
    if "duration" in given:
        values["expires"] = expires_at(duration, now) if duration else None
    return values


def check_models(admin: Admin, values: dict[str, Any]) -> None:
    """Each model a request names is one of the gateway's (checked only when it names models)."""
    if admin.registry is None or "models" not in values:
        return
    for index, name in enumerate(values["models"]):
        problem = unknown_model(admin.registry, name)
        if problem is not None:
            raise RequestInvalid(f"models[{index}]: {problem}", ("models", index), code="model_not_found")


def unknown_model(registry: ModelRegistry, name: str) -> str | None:
    """Why ``name`` is no model a key or team may be given, or None: a configured group or
    ``model_group_alias``, a pass-through's ``provider/model`` of a known provider, or a wildcard for
    every model (``*``, LiteLLM's ``all-proxy-models`` / ``all-team-models``)."""
    if name in ALL_MODELS or registry.knows(name):
        return None
    shown = name[:200]
    if "*" in name:
        return (f"'{shown}' is a wildcard pattern, which this gateway does not match; give * (or all-proxy-models) "
                "for every model, or name the models")
    provider, _, model = name.partition("/")
    if model and provider in PROVIDERS:
        return None  # the pass-throughs name their upstream's models so (gateway/passthrough/admit.py)
    listed = ", ".join(registry.listed[:20]) + (", ..." if len(registry.listed) > 20 else "")
    return (f"'{shown}' is not a model of this gateway; name a configured model ({listed}), a provider/model "
            "for the pass-throughs, or * for every model")


async def check_key_columns(admin: Admin, values: dict[str, Any], current: KeyRecord | None = None) -> None:
    """The models exist, the alias is free, the team exists, and the key's models lie within the team's."""
    check_models(admin, values)
    alias = values.get("key_alias")
    if alias is not None and (current is None or alias != current.key_alias):
        holders = await queries.keys_with_alias_like(admin.db, alias)
        if any(current is None or token != current.token for token in holders):
            raise RequestInvalid("key_alias is in use by another key (aliases are compared ignoring case and "
                                 "surrounding spaces); choose another.", ("key_alias",), code="conflict")
    team_id = values["team_id"] if "team_id" in values else (current.team_id if current else None)
    if team_id is None:
        return
    team = await store.get_team(admin.db, team_id)
    if team is None:
        raise NotFound("team_id names no team; make it with /team/new first.", "team_id")
    models = values["models"] if "models" in values else list(current.models if current else ())
    team_allows, key_wants = allowed_models((), team.models), allowed_models(models, ())
    if team_allows is not None and key_wants is not None and key_wants - team_allows:
        outside = ", ".join(sorted(key_wants - team_allows)[:10])
        raise RequestInvalid(f"models {outside} are not among the team's models.", ("models",),
                             code="model_not_in_team")


def refused(identity: Identity, why: str, field: str | None = None) -> PermissionDenied:
    """403 for a caller that may not do this: ``read_only`` for a viewer, ``admin_only`` otherwise."""
    viewer = roles.role_of(identity) in (roles.PROXY_ADMIN_VIEWER, roles.INTERNAL_USER_VIEWER)
    return PermissionDenied(why, code="read_only" if viewer else "admin_only",
                            loc=Where(field) if field else None)


async def _check_owner(admin: Admin, identity: Identity, team_id: str | None, user_id: str | None) -> None:
    """The key's user exists, and the caller may make or keep a key with this team and user
    (``roles.may_own``); a team admin gives its team's keys only to itself or to the team's members
    whose role is an internal user's, never to a proxy admin or viewer (that would make an admin key)."""
    user = None
    if user_id is not None:
        user = await user_store.get_user(admin.db, user_id)
        if user is None:
            raise NotFound("user_id names no user; make it with /user/new first.", "user_id")
    if roles.writes_all(identity):
        return
    problem = roles.may_own(identity, team_id, user_id)
    if problem is not None:
        field, _, why = problem.partition(": ")
        raise refused(identity, f"{why[:1].upper()}{why[1:]}.", field)
    if user is not None and user_id != identity.user_id:
        member = any(m.team_id == team_id for m in user.teams)
        if not member or user.user_role not in (roles.INTERNAL_USER, roles.INTERNAL_USER_VIEWER):
            raise refused(identity, "A team admin gives the team's keys only to itself or to the team's members "
                          "who are internal users (never to a proxy admin or viewer).", "user_id")


def _check_spend(identity: Identity, req: Any, team_id: str | None) -> None:
    """Only a proxy admin, or the team's admin, sets a key's spend (an internal user may not clear its own)."""
    if getattr(req, "spend", None) is None or roles.writes_all(identity):
        return
    if team_id is not None and team_id in roles.admin_teams(identity):
        return
    raise refused(identity, "Only a proxy admin or the key's team admin may set a key's spend.", "spend")


async def writable_key(admin: Admin, identity: Identity, ref: str, *, by_alias: bool = False) -> KeyRecord:
    """The key, when the caller may change it as it is now; 403 otherwise (and, for a caller that does
    not read every key, for a key that is not there, so that nothing shows whether others' keys exist)."""
    if roles.writes_all(identity):
        return await find_key(admin, ref, by_alias=by_alias)
    try:
        record = await find_key(admin, ref, by_alias=by_alias)
    except NotFound:
        if roles.reads_all(identity):
            raise
        record = None
    if record is None or not roles.writes_key(identity, record):
        raise refused(identity, "This key is not one the caller may change (its own keys, or its teams' as "
                      "their admin).", "key")
    await _check_owner(admin, identity, record.team_id, record.user_id)
    return record


async def create_key(admin: Admin, req: schemas.GenerateKeyRequest,
                     identity: Identity = MASTER) -> tuple[str, KeyRecord]:
    """(the key, shown once; its record). An internal user's key is its own unless it names a user."""
    now = datetime.now(UTC)
    values = _key_columns(req, now, only_set=False)
    if (values.get("user_id") is None and not roles.writes_all(identity) and identity.user_id is not None
            and values.get("team_id") not in roles.admin_teams(identity)):
        values["user_id"] = identity.user_id
    await _check_owner(admin, identity, values.get("team_id"), values.get("user_id"))
    _check_spend(identity, req, values.get("team_id"))
    await check_key_columns(admin, values)
    key = generate_key()
    values.update(token=admin.hasher.hash(key), key_prefix=display_prefix(key), spend=req.spend or 0.0)
    record = await store.insert_key(admin.db, values)
    await admin.changed()
    return key, record


async def find_key(admin: Admin, ref: str, *, by_alias: bool = False) -> KeyRecord:
    """The key given as the key or its id (or, ``by_alias``, its alias); 404 otherwise."""
    token = admin.token_of(ref)
    record = None
    if token is not None:
        record = await store.get_key(admin.db, token=token)
    elif by_alias:
        record = await store.get_key(admin.db, alias=ref)
    if record is None:
        raise NotFound("No such key (give the key, its id or its alias).", "key")
    return record


async def _check_change(admin: Admin, identity: Identity, values: dict[str, Any], current: KeyRecord,
                        req: Any) -> None:
    """The key as it will be: its owner is one the caller may give it, and only who may sets its spend."""
    team_id = values["team_id"] if "team_id" in values else current.team_id
    user_id = values["user_id"] if "user_id" in values else current.user_id
    if ("team_id" in values or "user_id" in values) and (team_id, user_id) != (current.team_id, current.user_id):
        await _check_owner(admin, identity, team_id, user_id)
    _check_spend(identity, req, team_id)


async def update_key(admin: Admin, req: schemas.UpdateKeyRequest, identity: Identity = MASTER) -> KeyRecord:
    current = await writable_key(admin, identity, req.key)
    values = _key_columns(req, datetime.now(UTC), only_set=True)
    if "spend" in req.model_fields_set:
        values["spend"] = req.spend or 0.0
    await _check_change(admin, identity, values, current, req)
    await check_key_columns(admin, values, current)
    return await _save_key(admin, current.token, values)


async def set_key_blocked(admin: Admin, ref: str, blocked: bool, *, by_alias: bool = False,
                          identity: Identity = MASTER) -> KeyRecord:
    current = await writable_key(admin, identity, ref, by_alias=by_alias)
    return await _save_key(admin, current.token, {"blocked": blocked})


async def regenerate_key(admin: Admin, req: schemas.RegenerateKeyRequest,
                         identity: Identity = MASTER) -> tuple[str, KeyRecord]:
    """A new key for the record: the old one stops working at once; limits, spend and alias stay
    unless the request changes them."""
    current = await writable_key(admin, identity, req.key)
    values = _key_columns(req, datetime.now(UTC), only_set=True)
    await _check_change(admin, identity, values, current, req)
    await check_key_columns(admin, values, current)
    key = generate_key()
    values.update(token=admin.hasher.hash(key), key_prefix=display_prefix(key))
    return key, await _save_key(admin, current.token, values)


async def _save_key(admin: Admin, token: str, values: dict[str, Any]) -> KeyRecord:
    return await announced(admin, await store.update_key(admin.db, token, values), "key", "key")


async def delete_keys(admin: Admin, req: schemas.DeleteKeysRequest, identity: Identity = MASTER) -> list[str]:
    refs = list(req.keys or [])
    tokens = [t for t in (admin.token_of(ref) for ref in refs) if t is not None]
    aliases = list(req.key_aliases or [])
    if not refs and not aliases:
        raise RequestInvalid("Give keys (keys or their ids) or key_aliases to delete.", ("keys",), code="missing")
    if not roles.writes_all(identity):  # each key one the caller may delete, all checked before any goes
        found = [await writable_key(admin, identity, ref) for ref in refs]
        found += [await writable_key(admin, identity, alias, by_alias=True) for alias in aliases]
        tokens, aliases = [record.token for record in found], []
    deleted = await store.delete_keys(admin.db, tokens, aliases)
    if deleted:
        await admin.changed()
    return deleted


# ---- teams --------------------------------------------------------------------------------------


async def create_team(admin: Admin, req: schemas.NewTeamRequest) -> TeamRecord:
    now = datetime.now(UTC)
    values = _limit_columns(req, now, only_set=False)
    check_models(admin, values)
    values.update(team_id=req.team_id or new_team_id(), team_alias=req.team_alias, spend=0.0)
    if await store.get_team(admin.db, values["team_id"]) is not None:
        raise RequestInvalid("A team with this team_id exists already.", ("team_id",), code="conflict")
    record = await store.insert_team(admin.db, values)
    await admin.changed()
    return record


async def find_team(admin: Admin, team_id: str) -> TeamRecord:
    record = await store.get_team(admin.db, team_id)
    if record is None:
        raise NotFound("No such team.", "team_id")
    return record


async def update_team(admin: Admin, req: schemas.UpdateTeamRequest) -> TeamRecord:
    values = _limit_columns(req, datetime.now(UTC), only_set=True)
    check_models(admin, values)
    if "team_alias" in req.model_fields_set:
        values["team_alias"] = req.team_alias
    return await _save_team(admin, req.team_id, values)


async def set_team_blocked(admin: Admin, team_id: str, blocked: bool) -> TeamRecord:
    return await _save_team(admin, team_id, {"blocked": blocked})


async def _save_team(admin: Admin, team_id: str, values: dict[str, Any]) -> TeamRecord:
    return await announced(admin, await store.update_team(admin.db, team_id, values), "team", "team_id")


async def announced(admin: Admin, record: Saved | None, what: str, field: str) -> Saved:
    """The changed record, once every gateway has been told; 404 when it was not there (deleted meanwhile)."""
    if record is None:
        raise NotFound(f"No such {what}.", field)
    await admin.changed()
    return record


async def delete_teams(admin: Admin, req: schemas.DeleteTeamsRequest) -> tuple[list[str], int]:
    deleted, keys = await store.delete_teams(admin.db, req.team_ids)
    if deleted:
        await admin.changed()
    return deleted, keys


# ---- records -> response bodies -----------------------------------------------------------------


def _limit_info(record: KeyRecord | TeamRecord) -> dict[str, Any]:
    limits = record.limits
    return {"models": list(record.models), "max_budget": limits.max_budget,
            "budget_duration": limits.budget_duration, "budget_reset_at": limits.budget_reset_at,
            "spend": limits.spend, "tpm_limit": limits.tpm_limit, "rpm_limit": limits.rpm_limit,
            "max_parallel_requests": limits.max_parallel_requests, "blocked": record.blocked,
            "metadata": dict(record.metadata), "created_at": record.created_at, "updated_at": record.updated_at,
            "allowed_routes": list(record.allowed_routes),
            "allowed_passthrough_routes": list(record.allowed_passthrough_routes)}


def key_info(record: KeyRecord) -> schemas.KeyInfo:
    return schemas.KeyInfo(token=record.token, key_name=f"{record.key_prefix}..." if record.key_prefix else None,
                           key_alias=record.key_alias, team_id=record.team_id, user_id=record.user_id,
                           expires=record.expires,
                           tags=list(record.tags), **_limit_info(record))


def generated(key: str, record: KeyRecord) -> schemas.GenerateKeyResponse:
    return schemas.GenerateKeyResponse(key=key, **key_info(record).model_dump())


def team_info(record: TeamRecord, members: list[dict[str, Any]] | None = None) -> schemas.TeamInfo:
    return schemas.TeamInfo(team_id=record.team_id, team_alias=record.team_alias,
                            members_with_roles=[schemas.TeamMember(**m) for m in members or []], **_limit_info(record))


async def team_infos(admin: Admin, records: list[TeamRecord]) -> list[schemas.TeamInfo]:
    """The teams with their ``members_with_roles``."""
    members = await user_store.members_of(admin.db, [r.team_id for r in records])
    return [team_info(r, members.get(r.team_id)) for r in records]


def user_info(record: UserRecord) -> user_schemas.UserInfo:
    limits = record.limits
    return user_schemas.UserInfo(
        user_id=record.user_id, user_alias=record.user_alias, user_email=record.user_email,
        user_role=record.user_role, models=list(record.models), max_budget=limits.max_budget,
        budget_duration=limits.budget_duration, budget_reset_at=limits.budget_reset_at, spend=limits.spend,
        tpm_limit=limits.tpm_limit, rpm_limit=limits.rpm_limit, max_parallel_requests=limits.max_parallel_requests,
        metadata=dict(record.metadata), teams=[m.team_id for m in record.teams],
        team_roles={m.team_id: m.role for m in record.teams}, created_at=record.created_at,
        updated_at=record.updated_at)
