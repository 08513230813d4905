"""Teams: LiteLLM's ``/team/*`` routes, the master key only. A team's models bound its keys' models; a
blocked team blocks its keys; deleting a team deletes its keys."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from gateway.admin import schemas, service
from gateway.admin.common import AdminRoute, MasterAdmin
from gateway.auth import store

router = APIRouter(route_class=AdminRoute, tags=["teams"])

TEAM_INFO_KEYS = 100  # keys listed by /team/info (the first page; /key/list?team_id= pages through all)


@router.post("/team/new", summary="Make a team")
async def new_team(body: schemas.NewTeamRequest, admin: MasterAdmin) -> schemas.TeamInfo:
    return service.team_info(await service.create_team(admin, body))


@router.get("/team/info", summary="A team and its keys")
async def team_info(admin: MasterAdmin, team_id: Annotated[schemas.TeamId, Query()]) -> schemas.TeamInfoResponse:
    record = await service.find_team(admin, team_id)
    keys, _ = await store.list_keys(admin.db, page=1, size=TEAM_INFO_KEYS, team_id=team_id)
    return schemas.TeamInfoResponse(team_id=record.team_id, team_info=service.team_info(record),
                                    keys=[service.key_info(k) for k in keys])


@router.post("/team/update", summary="Change a team's alias, models, budget or limits")
async def update_team(body: schemas.UpdateTeamRequest, admin: MasterAdmin) -> schemas.TeamInfo:
    return service.team_info(await service.update_team(admin, body))


@router.post("/team/delete", summary="Delete teams and their keys")
async def delete_teams(body: schemas.DeleteTeamsRequest, admin: MasterAdmin) -> schemas.DeleteTeamsResponse:
    deleted, keys = await service.delete_teams(admin, body)
    return schemas.DeleteTeamsResponse(deleted_teams=deleted, deleted_keys=keys)


@router.get("/team/list", summary="Teams, a page at a time")
async def list_teams(admin: MasterAdmin, page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
                     size: Annotated[int, Query(ge=1, le=schemas.MAX_PAGE_SIZE)] = schemas.MAX_PAGE_SIZE,
                     ) -> list[schemas.TeamInfo]:
    records, _ = await store.list_teams(admin.db, page=page, size=size)
    return [service.team_info(r) for r in records]


@router.post("/team/block", summary="Block a team: its keys are refused within a second")
async def block_team(body: schemas.TeamRequest, admin: MasterAdmin) -> schemas.TeamInfo:
    return service.team_info(await service.set_team_blocked(admin, body.team_id, True))


@router.post("/team/unblock", summary="Unblock a team")
async def unblock_team(body: schemas.TeamRequest, admin: MasterAdmin) -> schemas.TeamInfo:
    return service.team_info(await service.set_team_blocked(admin, body.team_id, False))
