"""One Alembic chain for SQLite and PostgreSQL: up, down to base, up again; the models agree with it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import pytest_asyncio
import sqlalchemy as sa

from gateway.db.cli import migrate_main
from gateway.db.engine import Database, current_revision, head_revision, migrate, open_database
from gateway.db.models import Base, daily_spend
from tests.db.conftest import TABLES, PgDatabases

INDEXES = {
    "spend_logs": {"ix_spend_logs_startTime", "ix_spend_logs_api_key_startTime", "ix_spend_logs_team_id",
                   "ix_spend_logs_model_group"},
    "verification_tokens": {"ix_verification_tokens_team_id", "ix_verification_tokens_budget_reset_at_expires"},
}


@pytest_asyncio.fixture(loop_scope="function", params=["sqlite", "postgresql"])
async def fresh_url(request: pytest.FixtureRequest, tmp_path: Path, pg_databases: PgDatabases) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fresh.db'}"
    return await pg_databases.create()


async def tables(db: Database) -> set[str]:
    async with db.engine.connect() as conn:
        return set(await conn.run_sync(lambda c: sa.inspect(c).get_table_names()))


async def model_differences(db: Database) -> list[object]:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    def compare(conn: sa.Connection) -> list[object]:
        return list(compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata))

    async with db.engine.connect() as conn:
        return await conn.run_sync(compare)


async def test_the_chain_goes_up_down_and_up_again(fresh_url: str) -> None:
    db = await open_database(fresh_url)
    try:
        head = head_revision()
        assert head is not None and await current_revision(db) == head
        assert set(TABLES) <= await tables(db)
        assert await model_differences(db) == []
        async with db.engine.connect() as conn:
            for table, expected in INDEXES.items():
                names = await conn.run_sync(lambda c, t=table: {i["name"] for i in sa.inspect(c).get_indexes(t)})
                assert expected <= names, table

        await migrate(db, "base", downgrade=True)
        assert await current_revision(db) is None
        assert await tables(db) <= {"alembic_version"}

        await migrate(db, "head")
        assert await current_revision(db) == head
        assert await model_differences(db) == []
    finally:
        await db.close()


async def test_0003_downgrade_merges_the_users_daily_rows_and_upgrade_keeps_the_sums(fresh_url: str) -> None:
    """daily_spend rows that differ only by user_id become one row on the way down to 0002, their sums
    added; back up at head, that row is the no-user ('') one, with the same sums."""
    db = await open_database(fresh_url)
    try:
        day = dt.date(2026, 11, 30)
        one = {"date": day, "api_key": "hash-a", "team_id": "team-a", "model_group": "jev", "model": "typesafe/jev"}
        other = {**one, "model": "typesafe/other"}
        rows = [{**one, "user_id": user, "spend": spend, "requests": requests, "failed_requests": 1,
                 "prompt_tokens": 10 * requests, "completion_tokens": requests, "cached_tokens": 2,
                 "cache_hits": 1, "cache_misses": 0}
                for user, spend, requests in (("u-1", 0.25, 1), ("u-2", 0.5, 2), ("", 1.25, 3))]
        rows.append({**other, "user_id": "u-1", "spend": 2.0, "requests": 4, "failed_requests": 0,
                     "prompt_tokens": 40, "completion_tokens": 4, "cached_tokens": 0, "cache_hits": 0,
                     "cache_misses": 4})
        async with db.engine.begin() as conn:
            await conn.execute(sa.insert(daily_spend), rows)
        merged = {"typesafe/jev": (2.0, 6, 3, 60, 6, 6, 3, 0), "typesafe/other": (2.0, 4, 0, 40, 4, 0, 0, 4)}
        sums = ("spend", "requests", "failed_requests", "prompt_tokens", "completion_tokens", "cached_tokens",
                "cache_hits", "cache_misses")

        async def read(with_user: bool) -> dict[tuple[str, ...], tuple[object, ...]]:
            names = ["model", *(["user_id"] if with_user else []), *sums]
            query = sa.text(f"SELECT {', '.join(names)} FROM daily_spend")
            async with db.engine.connect() as conn:
                return {tuple(row[:-len(sums)]): tuple(row[-len(sums):]) for row in (await conn.execute(query)).all()}

        await migrate(db, "0002_route_grants", downgrade=True)
        assert await current_revision(db) == "0002_route_grants"
        async with db.engine.connect() as conn:
            columns = await conn.run_sync(lambda c: {col["name"] for col in sa.inspect(c).get_columns("daily_spend")})
        assert "user_id" not in columns
        assert await read(False) == {(model,): sums_ for model, sums_ in merged.items()}

        await migrate(db, "head")
        assert await current_revision(db) == head_revision()
        assert await read(True) == {(model, ""): sums_ for model, sums_ in merged.items()}
        assert await model_differences(db) == []
    finally:
        await db.close()


async def test_opening_twice_applies_nothing_the_second_time(fresh_url: str) -> None:
    first = await open_database(fresh_url)
    await first.close()
    second = await open_database(fresh_url)
    try:
        assert await current_revision(second) == head_revision()
    finally:
        await second.close()


async def test_gateways_starting_together_apply_the_chain_once(fresh_url: str) -> None:
    import asyncio

    opened = await asyncio.gather(*(open_database(fresh_url) for _ in range(4)))
    try:
        assert {await current_revision(db) for db in opened} == {head_revision()}
    finally:
        for db in opened:
            await db.close()


OPEN_AND_CLOSE = """
import asyncio, sys
from gateway.db.engine import open_database

async def main() -> None:
    db = await open_database(sys.argv[1])
    await db.close()

asyncio.run(main())
"""


async def test_processes_starting_together_apply_the_chain_once(fresh_url: str) -> None:
    import asyncio
    import sys

    procs = [await asyncio.create_subprocess_exec(sys.executable, "-c", OPEN_AND_CLOSE, fresh_url,
                                                  stderr=asyncio.subprocess.PIPE) for _ in range(4)]
    results = [await asyncio.wait_for(p.communicate(), 60) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err.decode()[-500:] for _, err in results]
    db = await open_database(fresh_url, auto_migrate=False)
    try:
        assert await current_revision(db) == head_revision()
    finally:
        await db.close()


def write_config(path: Path, url: str) -> Path:
    path.write_text("model_list:\n  - {model_name: m, litellm_params: {model: local/smollm2}}\n"
                    f"general_settings:\n  database_url: {url}\n")
    return path


async def test_migrate_command_up_and_down(fresh_url: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    config = str(write_config(tmp_path / "config.yaml", fresh_url))
    head = head_revision()

    def run(*argv: str) -> int:
        return migrate_main(["--config", config, *argv])

    # migrate_main runs its own event loop: off this test's loop
    assert await asyncio.to_thread(run) == 0
    assert f"from base to {head} (head)" in capsys.readouterr().out
    assert await asyncio.to_thread(run, "--current") == 0
    assert f"at revision {head} (head)" in capsys.readouterr().out
    assert await asyncio.to_thread(run, "--downgrade", "base") == 0
    assert f"from {head} to base" in capsys.readouterr().out
    db = await open_database(fresh_url, auto_migrate=False)
    try:
        assert await current_revision(db) is None
    finally:
        await db.close()
    assert await asyncio.to_thread(run) == 0


def test_migrate_command_reports_a_bad_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path / "config.yaml", "mysql://u:secret@h/db")
    assert migrate_main(["--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "general_settings.database_url" in err and "secret" not in err


def test_migrate_command_hides_the_password_when_the_server_is_unreachable(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.db.conftest import free_port

    config = write_config(tmp_path / "config.yaml", f"postgresql://u:Hidden99@127.0.0.1:{free_port()}/db")
    assert migrate_main(["--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert "u:***@127.0.0.1" in err and "Hidden99" not in err
