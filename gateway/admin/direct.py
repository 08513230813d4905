"""The admin CLI's direct mode: the operations straight on a config's database (``--config``).

``Direct`` has the operations of ``gateway.admin.remote.Remote``, answering what the admin API
answers (its JSON shapes), through the same service functions as the API's routes
(``gateway/admin/service.py``). ``opened(config_path)`` opens the config's database with its
server secret, its models and its Redis (to tell running gateways of a change).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date
from typing import TYPE_CHECKING, Any

from gateway.admin import schemas, service
from gateway.auth import store

if TYPE_CHECKING:
    from gateway.admin.service import Admin


def _json(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json")


class Direct:
    def __init__(self, admin: Admin):
        self.admin = admin

    async def create_key(self, fields: dict[str, Any]) -> dict[str, Any]:
        key, record = await service.create_key(self.admin, schemas.GenerateKeyRequest.model_validate(fields))
        return _json(service.generated(key, record))

    async def list_keys(self, *, page: int, size: int, team_id: str | None) -> tuple[list[dict[str, Any]], int]:
        records, total = await store.list_keys(self.admin.db, page=page, size=size, team_id=team_id)
        return [_json(service.key_info(r)) for r in records], total

    async def key(self, ref: str) -> dict[str, Any]:
        return _json(service.key_info(await service.find_key(self.admin, ref, by_alias=True)))

    async def update_key(self, fields: dict[str, Any]) -> dict[str, Any]:
        return _json(service.key_info(await service.update_key(self.admin,
                                                               schemas.UpdateKeyRequest.model_validate(fields))))

    async def set_blocked(self, token: str, blocked: bool) -> dict[str, Any]:
        return _json(service.key_info(await service.set_key_blocked(self.admin, token, blocked)))

    async def delete_key(self, token: str) -> list[str]:
        return await service.delete_keys(self.admin, schemas.DeleteKeysRequest(keys=[token]))

    async def create_team(self, fields: dict[str, Any]) -> dict[str, Any]:
        return _json(service.team_info(await service.create_team(self.admin,
                                                                 schemas.NewTeamRequest.model_validate(fields))))

    async def teams(self, page: int, size: int) -> list[dict[str, Any]]:
        records, _ = await store.list_teams(self.admin.db, page=page, size=size)
        return [_json(service.team_info(r)) for r in records]

    async def spend_report(self, *, start: date, end: date, group_by: Any, api_key: str | None,
                           team_id: str | None) -> list[dict[str, Any]]:
        from gateway.db import queries
        from gateway.spend.cost import shown_cost

        token = self.admin.token_of(api_key) if api_key else None
        entries = await queries.spend_report(self.admin.db, start_date=start, end_date=end, group_by=group_by,
                                             api_key=token, team_id=team_id)
        return [{**e, "spend": shown_cost(e["spend"]), **({"date": str(e["date"])} if "date" in e else {})}
                for e in entries]


@asynccontextmanager
async def opened(config_path: str) -> AsyncIterator[Direct]:
    from gateway.admin.cli_usage import Usage
    from gateway.admin.service import Admin
    from gateway.auth.cache import KeyCache
    from gateway.auth.keys import SALT_ENV, SALT_FILE, KeyHasher, load_secret
    from gateway.config.errors import ConfigError
    from gateway.config.loader import load_config
    from gateway.config.registry import ModelRegistry
    from gateway.db.engine import (
        DatabaseConfigError,
        auto_migrate_from_settings,
        data_dir,
        database_url_from_settings,
        open_database,
    )
    from gateway.shared_state import redis_url_from_config, state_from_settings

    try:
        config = load_config(config_path)
        general = config.general_settings
        url = database_url_from_settings(general)
        auto_migrate = auto_migrate_from_settings(general)
        redis_url = redis_url_from_config(general, config.router_settings)
    except (ConfigError, DatabaseConfigError, ValueError) as exc:
        raise Usage(f"config error: {exc}") from None
    salt_path = data_dir() / SALT_FILE
    new_salt = not general.get("salt_key") and not os.environ.get(SALT_ENV) and not salt_path.exists()
    hasher = KeyHasher(load_secret(general))
    if new_salt:
        print(f"made a new server secret in {salt_path}: the gateway must read the same one (same "
              f"DECISIONS_GATEWAY_DATA_DIR, or set {SALT_ENV} / general_settings.salt_key for both)", file=sys.stderr)
    db = await open_database(url, auto_migrate=auto_migrate)
    shared = state_from_settings(redis_url) if redis_url else None
    try:  # a change bumps auth:version, so running gateways drop their cached keys (gateway/auth/cache.py)
        yield Direct(Admin(db=db, hasher=hasher, changed=KeyCache(shared).changed,
                           registry=ModelRegistry.from_config(config)))
    finally:
        await db.close()
        if shared is not None:
            await shared.close()
