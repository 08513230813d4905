"""Teams and their members: LiteLLM's ``/team/*`` routes and ``/v2/team/list`` (its paginated list). A
proxy admin changes teams and members; a proxy admin or viewer reads every team; a team's admin reads
that team (``/team/info``, ``/v2/team/list``); any key lists its own team (``/v2/team/list``). A team's
models bound its keys' models; a blocked team blocks its keys; deleting a team deletes its keys. Team
answers carry LiteLLM's ``members_with_roles``."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from gateway.admin import schemas, service, user_schemas, user_service
from gateway.admin.common import AdminRoute, AnyCaller, MasterAdmin, ReadAll, TeamReader, pages
from gateway.auth import roles, store, user_store
from gateway.auth.errors import PermissionDenied
from translators.errors import RequestInvalid, Where

router = APIRouter(route_class=AdminRoute, tags=["teams"])

TEAM_INFO_KEYS = 100  # keys listed by /team/info (the first page; /key/list?team_id= pages through all)


@router.post("/team/new", summary="Make a team")
async def new_team(body: schemas.NewTeamRequest, admin: MasterAdmin) -> schemas.TeamInfo:
    return service.team_info(await service.create_team(admin, body))


@router.get("/team/info", summary="A team, its members and keys (a proxy admin or viewer, or the team's admin)")
async def team_info(caller: TeamReader, team_id: Annotated[schemas.TeamId, Query()]) -> schemas.TeamInfoResponse:
    admin, identity = caller.admin, caller.identity
    if not (roles.reads_all(identity) or team_id in roles.admin_teams(identity)):
        raise PermissionDenied("team_id: only proxy admins and viewers, and the team's admins, read a team.",
                               code="admin_only", loc=Where("team_id"))
    record = await service.find_team(admin, team_id)
    keys, _ = await store.list_keys(admin.db, page=1, size=TEAM_INFO_KEYS, team_id=team_id)
    return schemas.TeamInfoResponse(team_id=record.team_id, team_info=(await service.team_infos(admin, [record]))[0],
                                    keys=[service.key_info(k) for k in keys])


@router.post("/team/update", summary="Change a team's alias, models, budget or limits")
async def update_team(body: schemas.UpdateTeamRequest, admin: MasterAdmin) -> schemas.TeamInfo:
    return service.team_info(await service.update_team(admin, body))


@router.post("/team/delete", summary="Delete teams and their keys")
async def delete_teams(body: schemas.DeleteTeamsRequest, admin: MasterAdmin) -> schemas.DeleteTeamsResponse:
    deleted, keys = await service.delete_teams(admin, body)
    return schemas.DeleteTeamsResponse(deleted_teams=deleted, deleted_keys=keys)


@router.get("/team/list", summary="Teams, a page at a time")
async def list_teams(caller: ReadAll, page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
                     size: Annotated[int, Query(ge=1, le=schemas.MAX_PAGE_SIZE)] = schemas.MAX_PAGE_SIZE,
                     ) -> list[schemas.TeamInfo]:
    records, _ = await store.list_teams(caller.admin.db, page=page, size=size)
    return await service.team_infos(caller.admin, records)


@router.post("/team/block", summary="Block a team: its keys are refused within a second")
async def block_team(body: schemas.TeamRequest, admin: MasterAdmin) -> schemas.TeamInfo:
    return service.team_info(await service.set_team_blocked(admin, body.team_id, True))


@router.post("/team/unblock", summary="Unblock a team")
async def unblock_team(body: schemas.TeamRequest, admin: MasterAdmin) -> schemas.TeamInfo:
    return service.team_info(await service.set_team_blocked(admin, body.team_id, False))


TeamSort = Literal["team_id", "team_alias", "created_at", "updated_at", "spend", "max_budget", "tpm_limit",
                   "rpm_limit"]
NOT_HERE = {"user_id": "list a user's teams with /user/info", "organization_id": "this gateway has no organizations",
            "search": "give team_id or team_alias", "status": "deleted teams are not kept"}


@router.get("/v2/team/list", summary="Teams, a page at a time (LiteLLM's v2); a virtual key sees its own team")
async def list_teams_v2(caller: AnyCaller, team_id: Annotated[schemas.TeamId | None, Query()] = None,
                        team_alias: Annotated[schemas.Text | None, Query(description="Part of the alias, any case")
                                              ] = None,
                        page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
                        page_size: Annotated[int, Query(ge=1, le=schemas.MAX_PAGE_SIZE)] = 10,
                        sort_by: Annotated[TeamSort | None, Query()] = None,
                        sort_order: Annotated[Literal["asc", "desc"], Query()] = "asc",
                        user_id: Annotated[str | None, Query(include_in_schema=False)] = None,
                        organization_id: Annotated[str | None, Query(include_in_schema=False)] = None,
                        search: Annotated[str | None, Query(include_in_schema=False)] = None,
                        status: Annotated[str | None, Query(include_in_schema=False)] = None,
                        ) -> schemas.TeamListResponse:
    for name, value in (("user_id", user_id), ("organization_id", organization_id), ("search", search),
                        ("status", status)):
        if value is not None:
            raise RequestInvalid(f"{name}: is not supported here ({NOT_HERE[name]}); leave it out.", (name,),
                                 code="unsupported_parameter")
    identity = caller.identity
    scope: list[str] | None = None
    if not roles.reads_all(identity):  # its own key's team and the teams it administers
        scope = sorted(roles.admin_teams(identity) | ({identity.team_id} if identity.team_id else set()))
    if team_id is not None:
        scope = [team_id] if scope is None or team_id in scope else []
    found, total = await store.search_teams(caller.admin.db, page=page, size=page_size, team_ids=scope,
                                            alias_contains=team_alias, sort_by=sort_by,
                                            descending=sort_order == "desc")
    members = await user_store.members_of(caller.admin.db, [record.team_id for record, _ in found])
    teams = [schemas.TeamListItem(**service.team_info(record, members.get(record.team_id)).model_dump(),
                                  members_count=len(members.get(record.team_id, [])), keys_count=count)
             for record, count in found]
    return schemas.TeamListResponse(teams=teams, total=total, page=page, page_size=page_size,
                                    total_pages=pages(total, page_size))


@router.post("/team/member_add", summary="Add users to a team (or change their role in it)")
async def member_add(body: user_schemas.TeamMemberAddRequest, admin: MasterAdmin) -> user_schemas.TeamAddMemberResponse:
    team, users = await user_service.add_members(admin, body)
    info = (await service.team_infos(admin, [team]))[0]
    memberships = [user_schemas.TeamMembership(team_id=team.team_id, user_id=user.user_id, role=m.role)
                   for user in users for m in user.teams if m.team_id == team.team_id]
    return user_schemas.TeamAddMemberResponse(**info.model_dump(), updated_users=[service.user_info(u) for u in users],
                                         updated_team_memberships=memberships)


@router.post("/team/member_delete", summary="Remove a user from a team (its keys stay)")
async def member_delete(body: user_schemas.TeamMemberDeleteRequest, admin: MasterAdmin) -> schemas.TeamInfo:
    await user_service.delete_member(admin, body)
    return (await service.team_infos(admin, [await service.find_team(admin, body.team_id)]))[0]


@router.post("/team/member_update", summary="Change a member's role in a team (admin or user)")
async def member_update(body: user_schemas.TeamMemberUpdateRequest, admin: MasterAdmin
                        ) -> user_schemas.TeamMemberUpdateResponse:
    user, role = await user_service.update_member(admin, body)
    return user_schemas.TeamMemberUpdateResponse(team_id=body.team_id, user_id=user.user_id, user_email=user.user_email,
                                            role=role)
