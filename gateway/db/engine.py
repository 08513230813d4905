"""Open the database: the URL from ``general_settings``, an async engine, the Alembic chain applied.

    url = database_url_from_settings(config.general_settings)
    db = await open_database(url, auto_migrate=auto_migrate_from_settings(config.general_settings))
    async with db.sessions() as session: ...
    await db.close()

``general_settings.database_url`` accepts LiteLLM's plain URLs: ``sqlite:///path`` becomes
``sqlite+aiosqlite:///path`` and ``postgresql://`` (or ``postgres://``, or a sync driver such as
``postgresql+psycopg2://``) becomes ``postgresql+asyncpg://``; libpq's ``sslmode`` is passed to asyncpg
as ``ssl``. Without one, the database is ``decisions-gateway.db`` in the data directory
(``DECISIONS_GATEWAY_DATA_DIR``, else ``$XDG_DATA_HOME/decisions-gateway``, else
``~/.local/share/decisions-gateway``), created on first use. A relative SQLite path in a config
file (``sqlite:///spend.db``) is the file beside that config, whatever the working directory
(``sqlite_beside``, applied by ``gateway.config.loader.load_config``); an absolute path
(``sqlite:////var/lib/x.db``), ``~/x.db`` and an in-memory database are kept as they are.

SQLite runs in WAL mode with ``busy_timeout`` and foreign keys on; every transaction starts with
``BEGIN IMMEDIATE``, so several processes on one file queue for the write lock (within the busy
timeout) instead of failing a read-then-write with "database is locked", and migrations are
transactional. ``synchronous=FULL``: a commit survives a power cut; commits here are batches of
spend rows or admin writes, so the fsync is paid rarely. On PostgreSQL the migrations run under an
advisory lock, so several gateways starting at once apply the chain once.

A URL is only ever shown through ``safe_url`` (password masked).
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import StaticPool

log = logging.getLogger("gateway.db")

DATA_DIR_ENV = "DECISIONS_GATEWAY_DATA_DIR"
DEFAULT_DB_FILE = "decisions-gateway.db"
SQLITE_BUSY_TIMEOUT_MS = 10_000
MIGRATIONS_DIR = Path(__file__).resolve().parent.parent.parent / "migrations"  # beside gateway/, in a wheel too
MIGRATION_LOCK_ID = 0x6467_6d69_6772  # pg_advisory_xact_lock key: "dgmigr"


class DatabaseConfigError(ValueError):
    """``general_settings.database_url`` (or a database setting) that cannot be used; names the setting."""


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The gateway's data directory (database file, spend outbox), created (mode 0700) when missing."""
    env = os.environ if environ is None else environ
    if env.get(DATA_DIR_ENV):
        path = Path(env[DATA_DIR_ENV]).expanduser()
    elif env.get("XDG_DATA_HOME"):
        path = Path(env["XDG_DATA_HOME"]).expanduser() / "decisions-gateway"
    else:
        path = Path.home() / ".local" / "share" / "decisions-gateway"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def default_database_url(environ: Mapping[str, str] | None = None) -> str:
    return f"sqlite+aiosqlite:///{data_dir(environ) / DEFAULT_DB_FILE}"


def database_url_from_settings(general_settings: Mapping[str, Any] | None,
                               environ: Mapping[str, str] | None = None) -> str:
    """``general_settings.database_url`` as an async SQLAlchemy URL; the data directory's SQLite file without one."""
    raw = (general_settings or {}).get("database_url")
    if raw is None or raw == "":
        return default_database_url(environ)
    if not isinstance(raw, str):
        raise DatabaseConfigError("general_settings.database_url: must be a URL such as "
                                  "postgresql://user@host/db or sqlite:///path/to/file.db")
    return async_url(raw)


def sqlite_beside(raw: str, folder: Path) -> str:
    """``raw`` with a relative SQLite file path taken from ``folder`` (a config file's); any other URL as it is."""
    try:
        url = make_url(raw)
    except ArgumentError:
        return raw  # refused with its reason where the URL is checked
    path = url.database or ""
    if (url.get_backend_name() != "sqlite" or path in ("", ":memory:") or path.startswith(("file:", "~"))
            or Path(path).is_absolute()):
        return raw
    return url.set(database=str(folder / path)).render_as_string(hide_password=False)


def auto_migrate_from_settings(general_settings: Mapping[str, Any] | None) -> bool:
    value = (general_settings or {}).get("auto_migrate", True)
    if not isinstance(value, bool):
        raise DatabaseConfigError("general_settings.auto_migrate: must be true or false")
    return value


def async_url(raw: str) -> str:
    """A database URL mapped to the async drivers: aiosqlite for SQLite, asyncpg for PostgreSQL."""
    try:
        url = make_url(raw)
    except ArgumentError:
        raise DatabaseConfigError("general_settings.database_url: not a database URL "
                                  "(expected postgresql://... or sqlite:///...)") from None
    backend = url.get_backend_name()
    if backend == "sqlite":
        url = url.set(drivername="sqlite+aiosqlite")
    elif backend in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+asyncpg")
        if "sslmode" in url.query:  # libpq's name; asyncpg calls it ssl
            query = dict(url.query)
            query["ssl"] = query.pop("sslmode")
            url = url.set(query=query)
    else:
        raise DatabaseConfigError(f"general_settings.database_url: unsupported database {backend!r} "
                                  "(PostgreSQL or SQLite)")
    return url.render_as_string(hide_password=False)


def safe_url(url: str | URL) -> str:
    """The URL with its password masked: the only form a URL is logged or shown in."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparsable database URL>"


@dataclass
class Database:
    """The async engine and its session factory; ``dialect`` is ``"sqlite"`` or ``"postgresql"``."""

    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def safe_url(self) -> str:
        return safe_url(self.engine.url)

    async def close(self) -> None:
        await self.engine.dispose()

    def __repr__(self) -> str:
        return f"Database({self.safe_url})"


def create_engine(url: str, *, pool_size: int | None = None, pool_timeout: float | None = None,
                  connect_timeout: float = 10.0) -> AsyncEngine:
    """The async engine for ``url`` (already async, see ``async_url``), with SQLite's pragmas set per connection."""
    parsed = make_url(async_url(url))
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:") or database.startswith("file::memory:"):
            kwargs.update(poolclass=StaticPool, connect_args={"check_same_thread": False})
        else:
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    else:
        kwargs["connect_args"] = {"timeout": connect_timeout}
        if pool_size is not None:
            kwargs["pool_size"] = pool_size
        if pool_timeout is not None:
            kwargs["pool_timeout"] = pool_timeout
    engine = create_async_engine(parsed, **kwargs)
    if parsed.get_backend_name() == "sqlite":
        _sqlite_events(engine)
    return engine


def _sqlite_events(engine: AsyncEngine) -> None:
    @sa.event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the driver emits no BEGIN of its own; _on_begin does
        cursor = dbapi_connection.cursor()
        for pragma in ("journal_mode=WAL", f"busy_timeout={SQLITE_BUSY_TIMEOUT_MS}", "foreign_keys=ON",
                       "synchronous=FULL"):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @sa.event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


async def open_database(url: str, auto_migrate: bool = True, *, pool_size: int | None = None,
                        pool_timeout: float | None = None) -> Database:
    """Engine + session factory for ``url``; the Alembic chain applied up to head unless ``auto_migrate`` is false."""
    engine = create_engine(url, pool_size=pool_size, pool_timeout=pool_timeout)
    db = Database(engine=engine, sessions=async_sessionmaker(engine, expire_on_commit=False))
    try:
        if auto_migrate:
            await migrate(db, "head")
    except BaseException:
        await engine.dispose()
        raise
    log.info("database %s open%s", db.safe_url, " (migrated to head)" if auto_migrate else "")
    return db


_MIGRATION_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


async def migrate(db: Database, revision: str = "head", *, downgrade: bool = False) -> None:
    """Apply the chain up to (or, with ``downgrade``, back down to) ``revision``, in one transaction.

    Across processes the database serialises this (PostgreSQL: an advisory lock; SQLite: ``BEGIN
    IMMEDIATE``); within one process a lock does, because Alembic keeps the running migration's context in
    module globals that two interleaved runs would share."""
    from alembic import command

    loop = asyncio.get_running_loop()
    lock = _MIGRATION_LOCKS.setdefault(loop, asyncio.Lock())

    def run(sync_conn: Connection) -> None:
        if sync_conn.dialect.name == "postgresql":
            sync_conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK_ID})
        cfg = alembic_config(sync_conn)
        if downgrade:
            command.downgrade(cfg, revision)
        else:
            command.upgrade(cfg, revision)

    async with lock, db.engine.begin() as conn:
        await conn.run_sync(run)


async def current_revision(db: Database) -> str | None:
    from alembic.runtime.migration import MigrationContext

    def read(sync_conn: Connection) -> str | None:
        return MigrationContext.configure(sync_conn).get_current_revision()

    async with db.engine.connect() as conn:
        return await conn.run_sync(read)


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(None)).get_current_head()


def alembic_config(connection: Connection | None) -> Any:
    """Alembic's configuration, built here instead of an ``alembic.ini``: the chain in ``migrations/``, run
    on ``connection`` (``migrations/env.py`` reads it from ``config.attributes``)."""
    from alembic.config import Config

    if not (MIGRATIONS_DIR / "env.py").is_file():
        raise RuntimeError(f"the Alembic chain is missing: no env.py in {MIGRATIONS_DIR}")
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = connection
    return cfg
