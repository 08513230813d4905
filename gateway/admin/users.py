"""Internal users: LiteLLM's ``/user/*`` routes. A proxy admin makes, changes and deletes users; a proxy
admin or viewer reads and lists them all; a user reads itself. ``GET /user/info`` without ``user_id``
answers for the caller, with ``caller``: its role, the teams it administers, its key's team and user,
which is what the UI shows by. Deleting a user deletes its keys (they are refused within a second)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from gateway.admin import schemas, service, user_schemas, user_service
from gateway.admin.common import AdminRoute, AnyCaller, MasterAdmin, ReadAll, pages
from gateway.auth import roles, store, user_store
from gateway.auth.errors import PermissionDenied
from gateway.auth.records import UserRecord
from translators.errors import Where

router = APIRouter(route_class=AdminRoute, tags=["users"])

USER_INFO_KEYS = 100  # keys listed by /user/info (/key/list?user_id= pages through all)


@router.post("/user/new", summary="Make an internal user (and, by default, a key for it, shown once)")
async def new_user(body: user_schemas.NewUserRequest, admin: MasterAdmin) -> user_schemas.NewUserResponse:
    user, key, record = await user_service.create_user(admin, body)
    made = service.user_info(user).model_dump()
    if record is not None:
        made.update(key=key, token=record.token, key_name=f"{record.key_prefix}..." if record.key_prefix else None,
                    key_alias=record.key_alias, expires=record.expires, team_id=record.team_id)
    return user_schemas.NewUserResponse(**made)


async def _user_details(admin: service.Admin, user: UserRecord) -> tuple[list[schemas.KeyInfo],
                                                                        list[schemas.TeamInfo]]:
    keys, _ = await store.list_keys(admin.db, page=1, size=USER_INFO_KEYS, user_id=user.user_id)
    teams = [team for team in [await store.get_team(admin.db, m.team_id) for m in user.teams] if team is not None]
    return [service.key_info(k) for k in keys], await service.team_infos(admin, teams)


@router.get("/user/info", summary="A user, its keys and teams; without user_id, the caller")
async def user_info(caller: AnyCaller, user_id: Annotated[schemas.UserId | None, Query()] = None,
                    ) -> user_schemas.UserInfoResponse:
    admin, identity = caller.admin, caller.identity
    if user_id is not None:
        if not roles.reads_user(identity, user_id):
            raise PermissionDenied("A user may read only itself (proxy admins and viewers read every user).",
                                   code="admin_only", loc=Where("user_id"))
        user = await user_service.find_user(admin, user_id)
        keys, teams = await _user_details(admin, user)
        return user_schemas.UserInfoResponse(user_id=user.user_id, user_info=service.user_info(user), keys=keys,
                                        teams=teams)
    me = await user_store.get_user(admin.db, identity.user_id) if identity.user_id is not None else None
    if me is not None:
        keys, teams = await _user_details(admin, me)
    else:  # the master key, or a key of no user: its own key and team
        own = await store.get_key(admin.db, token=identity.key_hash) if identity.key_hash else None
        team = await store.get_team(admin.db, own.team_id) if own is not None and own.team_id else None
        keys = [service.key_info(own)] if own is not None and not identity.is_master else []
        teams = await service.team_infos(admin, [team]) if team is not None else []
    who = user_schemas.CallerInfo(role=roles.role_of(identity), admin_teams=sorted(roles.admin_teams(identity)),
                             team_id=identity.team_id, user_id=identity.user_id,
                             key=None if identity.is_master else identity.key_hash)
    return user_schemas.UserInfoResponse(user_id=me.user_id if me else None,
                                    user_info=service.user_info(me) if me else None, keys=keys, teams=teams,
                                    caller=who)


@router.get("/user/list", summary="Users, a page at a time, each with its number of keys")
async def list_users(caller: ReadAll, page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
                     page_size: Annotated[int, Query(ge=1, le=schemas.MAX_PAGE_SIZE)] = 25,
                     role: Annotated[schemas.UserRole | None, Query()] = None,
                     user_ids: Annotated[str | None, Query(max_length=10_000,
                                                           description="Comma-separated user ids")] = None,
                     team: Annotated[schemas.TeamId | None, Query(description="Members of this team")] = None,
                     ) -> user_schemas.UserListResponse:
    ids = [part.strip() for part in user_ids.split(",") if part.strip()] if user_ids is not None else None
    found, total = await user_store.list_users(caller.admin.db, page=page, size=page_size, user_ids=ids, role=role,
                                               team_id=team)
    users = [user_schemas.UserListItem(**service.user_info(user).model_dump(), key_count=count)
             for user, count in found]
    return user_schemas.UserListResponse(users=users, total=total, page=page, page_size=page_size,
                                         total_pages=pages(total, page_size))


@router.post("/user/update", summary="Change a user's alias, email, role, models, budget or limits")
async def update_user(body: user_schemas.UpdateUserRequest, admin: MasterAdmin) -> user_schemas.UserInfo:
    return service.user_info(await user_service.update_user(admin, body))


@router.post("/user/delete", summary="Delete users and their keys")
async def delete_users(body: user_schemas.DeleteUsersRequest, admin: MasterAdmin) -> user_schemas.DeleteUsersResponse:
    deleted, keys = await user_service.delete_users(admin, body)
    return user_schemas.DeleteUsersResponse(deleted_users=deleted, deleted_keys=keys)
