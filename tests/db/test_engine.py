"""Opening the database: URLs from general_settings, the data directory, SQLite's pragmas, no password shown."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import sqlalchemy as sa

from gateway.db.engine import (
    DatabaseConfigError,
    async_url,
    auto_migrate_from_settings,
    current_revision,
    data_dir,
    database_url_from_settings,
    open_database,
    safe_url,
)


@pytest.mark.parametrize(("given", "expected"), [
    ("sqlite:///rel/gw.db", "sqlite+aiosqlite:///rel/gw.db"),
    ("sqlite:////abs/gw.db", "sqlite+aiosqlite:////abs/gw.db"),
    ("sqlite+aiosqlite:///gw.db", "sqlite+aiosqlite:///gw.db"),
    ("postgresql://u:p@h:5433/db", "postgresql+asyncpg://u:p@h:5433/db"),
    ("postgres://u@h/db", "postgresql+asyncpg://u@h/db"),
    ("postgresql+psycopg2://u@h/db", "postgresql+asyncpg://u@h/db"),
    ("postgresql+asyncpg://u@h/db", "postgresql+asyncpg://u@h/db"),
    ("postgresql://u@h/db?sslmode=require", "postgresql+asyncpg://u@h/db?ssl=require"),
])
def test_urls_map_to_the_async_drivers(given: str, expected: str) -> None:
    assert async_url(given) == expected
    assert database_url_from_settings({"database_url": given}) == expected


@pytest.mark.parametrize("bad", ["mysql://u@h/db", "not a url", 42])
def test_an_unusable_url_names_the_setting(bad: object) -> None:
    with pytest.raises(DatabaseConfigError, match="general_settings.database_url"):
        database_url_from_settings({"database_url": bad})


def test_default_is_a_sqlite_file_in_the_data_directory(data_dir: Path) -> None:
    assert not data_dir.exists()
    url = database_url_from_settings({})
    assert url == f"sqlite+aiosqlite:///{data_dir / 'decisions-gateway.db'}"
    assert data_dir.is_dir() and (data_dir.stat().st_mode & 0o777) == 0o700
    assert database_url_from_settings(None) == url


def test_data_directory_falls_back_to_xdg_and_home(tmp_path: Path) -> None:
    assert data_dir({"XDG_DATA_HOME": str(tmp_path / "xdg")}) == tmp_path / "xdg" / "decisions-gateway"
    assert data_dir({"DECISIONS_GATEWAY_DATA_DIR": str(tmp_path / "own"), "XDG_DATA_HOME": "/nowhere"}) \
        == tmp_path / "own"


def test_auto_migrate_setting() -> None:
    assert auto_migrate_from_settings({}) is True
    assert auto_migrate_from_settings({"auto_migrate": False}) is False
    with pytest.raises(DatabaseConfigError, match="auto_migrate"):
        auto_migrate_from_settings({"auto_migrate": "no"})


def test_safe_url_masks_the_password() -> None:
    assert safe_url("postgresql+asyncpg://u:s3cret@h/db") == "postgresql+asyncpg://u:***@h/db"
    assert "s3cret" not in safe_url("postgresql://u:s3cret@h/db")


async def test_sqlite_runs_in_wal_with_a_busy_timeout_and_foreign_keys(tmp_path: Path) -> None:
    db = await open_database(f"sqlite:///{tmp_path / 'deep' / 'er' / 'gw.db'}")
    try:
        async with db.engine.connect() as conn:
            assert (await conn.exec_driver_sql("PRAGMA journal_mode")).scalar() == "wal"
            assert (await conn.exec_driver_sql("PRAGMA busy_timeout")).scalar() >= 5000
            assert (await conn.exec_driver_sql("PRAGMA foreign_keys")).scalar() == 1
        with pytest.raises(sa.exc.IntegrityError):  # a key of a team that does not exist
            async with db.engine.begin() as conn:
                await conn.execute(sa.text("INSERT INTO verification_tokens (token, team_id) VALUES ('t', 'nope')"))
    finally:
        await db.close()


async def test_auto_migrate_false_leaves_the_schema_alone(tmp_path: Path) -> None:
    db = await open_database(f"sqlite:///{tmp_path / 'gw.db'}", auto_migrate=False)
    try:
        assert await current_revision(db) is None
        async with db.engine.connect() as conn:
            names = await conn.run_sync(lambda c: sa.inspect(c).get_table_names())
        assert names == []
    finally:
        await db.close()


async def test_the_password_is_never_logged(pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    with_password = pg_url.replace("postgres@", "postgres:Pa55-never-shown@", 1)  # trust auth ignores it
    caplog.set_level(logging.DEBUG)
    db = await open_database(with_password)
    try:
        assert "Pa55-never-shown" not in repr(db) and "Pa55-never-shown" not in db.safe_url
        async with db.engine.connect() as conn:
            assert (await conn.execute(sa.text("SELECT 1"))).scalar() == 1
    finally:
        await db.close()
    assert "database postgresql+asyncpg://postgres:***@" in caplog.text
    assert "Pa55-never-shown" not in caplog.text
