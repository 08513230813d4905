"""The admin API over HTTP: a small FastAPI app per test holding a real Database and a shared state.

``admin_env(db_kind)`` builds the database (a SQLite file in ``tmp_path``, or this run's PostgreSQL
database from ``tests/db/conftest.py``'s ``PgDatabases``, emptied after each test) and
``env.app()`` makes an app instance on it: ``app.state.gateway`` holds ``config`` (its
``general_settings``: master key and salt), ``db`` and ``shared``, as the gateway's state will.
Several ``env.app()`` on one env are several gateway processes: one database, one shared state, a
key cache each. ``env.client(app)`` talks HTTP to it through httpx's ASGI transport.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import pytest_asyncio
import sqlalchemy as sa
from fastapi import FastAPI

from gateway.admin import admin_router
from gateway.db.engine import Database, open_database
from gateway.shared_state import MemoryState, SharedState
from tests.db.conftest import PG_SERVER, TABLES, PgDatabases

MASTER = "sk-master-test-" + "q" * 24
SALT = "a-salt-for-the-admin-tests-0123456789"


@dataclass
class AdminEnv:
    db: Database
    shared: SharedState
    general_settings: dict[str, Any] = field(default_factory=lambda: {"master_key": MASTER, "salt_key": SALT})
    clients: list[httpx.AsyncClient] = field(default_factory=list)

    def app(self, *, db: Database | None | bool = True, shared: SharedState | None = None,
            general_settings: dict[str, Any] | None = None) -> FastAPI:
        app = FastAPI()
        app.state.gateway = SimpleNamespace(
            config=SimpleNamespace(general_settings=self.general_settings if general_settings is None
                                   else general_settings),
            db=self.db if db is True else (db or None), shared=shared or self.shared)
        app.include_router(admin_router())
        return app

    def client(self, app: FastAPI | None = None, key: str | None = MASTER) -> httpx.AsyncClient:
        headers = {"authorization": f"Bearer {key}"} if key else {}
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app or self.app()), base_url="http://gateway",
                                   headers=headers)
        self.clients.append(client)
        return client


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "data"
    monkeypatch.setenv("DECISIONS_GATEWAY_DATA_DIR", str(path))
    monkeypatch.delenv("DECISIONS_GATEWAY_MASTER_KEY", raising=False)
    monkeypatch.delenv("DECISIONS_GATEWAY_SALT_KEY", raising=False)
    return path


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def admin_pg_databases() -> AsyncIterator[PgDatabases]:
    """This run's PostgreSQL databases for the admin tests, dropped at the end."""
    databases = PgDatabases(PG_SERVER)
    yield databases
    await databases.drop_all()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def admin_pg_url(admin_pg_databases: PgDatabases) -> str:
    return await admin_pg_databases.create()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'admin.db'}"
    return str(request.getfixturevalue("admin_pg_url"))


@asynccontextmanager
async def admin_env(url: str) -> AsyncIterator[AdminEnv]:
    db = await open_database(url)
    environment = AdminEnv(db=db, shared=MemoryState())
    try:
        yield environment
    finally:
        for client in environment.clients:
            await client.aclose()
        if db.dialect == "postgresql":  # one database for the run: empty it for the next test
            async with db.engine.begin() as conn:
                for table in TABLES:
                    await conn.execute(sa.text(f"DELETE FROM {table}"))
        await db.close()
        await environment.shared.close()


@pytest_asyncio.fixture(loop_scope="function")
async def env(db_url: str) -> AsyncIterator[AdminEnv]:
    """The admin API on SQLite and on PostgreSQL."""
    async with admin_env(db_url) as environment:
        yield environment


@pytest_asyncio.fixture(loop_scope="function")
async def sqlite_env(tmp_path: Path) -> AsyncIterator[AdminEnv]:
    """SQLite only, for what does not depend on the database."""
    async with admin_env(f"sqlite:///{tmp_path / 'admin.db'}") as environment:
        yield environment
