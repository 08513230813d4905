"""Virtual keys: LiteLLM's ``/key/*`` routes, by the caller's role (``gateway/auth/roles.py``): a proxy
admin changes any key and a viewer reads any; an internal user makes, changes and reads its own keys;
a team admin its teams' keys; a key of no user reads only itself (``GET /key/info``). ``/key/list``
narrows to the keys the caller may see."""

from __future__ import annotations

import datetime as dt
import hmac
import logging
from typing import Annotated

from fastapi import APIRouter, Query, Request

from gateway.admin import schemas, service
from gateway.admin.common import AdminRoute, AnyCaller, KeyReader, KeyWriter, pages
from gateway.auth import roles, store
from gateway.auth.errors import PermissionDenied, unknown_key
from gateway.auth.records import Identity, KeyRecord
from gateway.db import queries
from translators.errors import RequestInvalid, Where

router = APIRouter(route_class=AdminRoute, tags=["keys"])
log = logging.getLogger("gateway.admin")
FIRST_DAY = dt.date(2000, 1, 1)


async def key_usage(request: Request, caller: AnyCaller, record: KeyRecord) -> schemas.KeyUsage:
    """The key's spend from the spend log, and (for a key asking about itself, when its limits are
    counted) the budget period's spend as the limits count it now."""
    today = dt.datetime.now(dt.UTC).date()
    rows = await queries.spend_report(caller.admin.db, start_date=FIRST_DAY, end_date=today, group_by="key",
                                      api_key=record.token)
    usage = schemas.KeyUsage(total_spend=sum(r["spend"] for r in rows), requests=sum(r["requests"] for r in rows))
    admission = getattr(request.app.state.gateway, "admission", None)
    identity: Identity = caller.identity
    if (admission is not None and not identity.is_master and identity.limited and identity.key_limits.max_budget
            and identity.key_hash == record.token):
        try:
            live = (await admission.usage(identity))["key"]
        except Exception as exc:  # noqa: BLE001 - the counters are away: the spend log still answers
            log.warning("key usage counters unavailable: %s", type(exc).__name__)
        else:
            usage.period_spend, usage.period_start = live["spend_usd"], live["period_start"]
    return usage


@router.post("/key/generate", summary="Make a virtual key (shown once)")
async def generate_key(body: schemas.GenerateKeyRequest, caller: KeyWriter) -> schemas.GenerateKeyResponse:
    key, record = await service.create_key(caller.admin, body, caller.identity)
    return service.generated(key, record)


@router.get("/key/info", summary="A key's limits, budget and spend")
async def key_info(request: Request, caller: AnyCaller,
                   key: Annotated[schemas.KeyRef | None, Query(description="The key or its id; "
                                                               "a virtual key may leave it out")] = None,
                   ) -> schemas.KeyInfoResponse:
    admin, identity = caller.admin, caller.identity
    if identity.is_master or (key is not None and roles.reads_all(identity)):
        if key is None:
            raise RequestInvalid("key is required: the key or its id.", ("key",), code="missing")
        record = await service.find_key(admin, key)
    elif key is not None and (identity.user_id is not None or roles.admin_teams(identity)):
        found = await store.get_key(admin.db, token=admin.token_of(key) or "")
        if found is None or not roles.reads_key(identity, found):
            raise PermissionDenied("This key is not one the caller may read (its own, its user's, or its "
                                   "teams' as their admin).", code="admin_only")
        record = found
    else:
        own = identity.key_hash or ""
        asked = admin.token_of(key) if key is not None else own
        if asked is None or not hmac.compare_digest(asked, own):
            raise PermissionDenied("A virtual key may read only its own info.", code="admin_only")
        found = await store.get_key(admin.db, token=own)
        if found is None:
            raise unknown_key()
        record = found
    return schemas.KeyInfoResponse(key=record.token, info=service.key_info(record),
                                   usage=await key_usage(request, caller, record))


@router.post("/key/update", summary="Change a key's alias, team, models, budget or limits")
async def update_key(body: schemas.UpdateKeyRequest, caller: KeyWriter) -> schemas.KeyInfo:
    return service.key_info(await service.update_key(caller.admin, body, caller.identity))


@router.post("/key/delete", summary="Delete keys by key, id or alias")
async def delete_keys(body: schemas.DeleteKeysRequest, caller: KeyWriter) -> schemas.DeleteKeysResponse:
    return schemas.DeleteKeysResponse(deleted_keys=await service.delete_keys(caller.admin, body, caller.identity))


@router.get("/key/list", summary="Keys, a page at a time (ids and prefixes, never the keys); a user sees its "
            "own, a team admin its teams'")
async def list_keys(caller: KeyReader,
                    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
                    size: Annotated[int, Query(ge=1, le=schemas.MAX_PAGE_SIZE)] = 10,
                    team_id: Annotated[schemas.TeamId | None, Query()] = None,
                    key_alias: Annotated[schemas.Alias | None, Query()] = None,
                    user_id: Annotated[schemas.UserId | None, Query()] = None,
                    return_full_object: bool = False) -> schemas.KeyListResponse:
    admin, identity = caller.admin, caller.identity
    mine: str | None = None
    teams: list[str] | None = None
    if not roles.reads_all(identity):  # narrowed to what the caller may see; a filter outside it is refused
        managed = roles.admin_teams(identity)
        if team_id is not None and team_id not in managed and team_id not in identity.team_roles:
            raise PermissionDenied("team_id: the caller reads only the keys of the teams it administers (and its "
                                   "own).", code="admin_only", loc=Where("team_id"))
        if user_id is not None and user_id != identity.user_id:
            raise PermissionDenied("user_id: a user lists only its own keys.", code="admin_only",
                                   loc=Where("user_id"))
        mine, teams = identity.user_id, [] if user_id is not None else sorted(managed)
        user_id = None
    records, total = await store.list_keys(admin.db, page=page, size=size, team_id=team_id, key_alias=key_alias,
                                           user_id=user_id if mine is None else mine, team_ids=teams)
    keys: list[str] | list[schemas.KeyInfo]
    keys = [service.key_info(r) for r in records] if return_full_object else [r.token for r in records]
    return schemas.KeyListResponse(keys=keys, total_count=total, current_page=page, total_pages=pages(total, size))


@router.post("/key/block", summary="Block a key: refused everywhere within a second")
async def block_key(body: schemas.KeyRequest, caller: KeyWriter) -> schemas.KeyInfo:
    return service.key_info(await service.set_key_blocked(caller.admin, body.key, True, identity=caller.identity))


@router.post("/key/unblock", summary="Unblock a key")
async def unblock_key(body: schemas.KeyRequest, caller: KeyWriter) -> schemas.KeyInfo:
    return service.key_info(await service.set_key_blocked(caller.admin, body.key, False, identity=caller.identity))


@router.post("/key/regenerate", summary="A new key for the same record (shown once); the old one stops working")
async def regenerate_key(body: schemas.RegenerateKeyRequest, caller: KeyWriter) -> schemas.GenerateKeyResponse:
    key, record = await service.regenerate_key(caller.admin, body, caller.identity)
    return service.generated(key, record)
