"""Fixtures for the database tests: SQLite files in tmp_path and PostgreSQL databases of this run's own.

PostgreSQL is the server at ``DECISIONS_GATEWAY_TEST_PG`` (default ``postgresql://postgres@127.0.0.1:5432``,
trust auth); CI starts it, so an unreachable server fails these tests instead of skipping them. Each
run creates its databases (``dg_test_<random>...``) through an admin connection to the ``test``
database and drops them at the end. The outage tests start a throwaway cluster of their own
(``PgCluster``: initdb in a temporary folder, a free port) and never touch the server on 5432.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
import pytest_asyncio
import sqlalchemy as sa

from gateway.db.engine import Database, open_database
from tests.shared_state.conftest import free_port

PG_SERVER = os.environ.get("DECISIONS_GATEWAY_TEST_PG", "postgresql://postgres@127.0.0.1:5432")
PG_ADMIN_DB = "test"
RUN_ID = uuid.uuid4().hex[:10]
_NEXT_DB = itertools.count()  # one numbering for every PgDatabases of the run (the admin tests have their own)
TABLES = ("decisions", "decision_inputs", "calibrators", "daily_spend", "spend_logs", "verification_tokens", "team_memberships", "users", "teams")


class PgDatabases:
    """Creates and drops this run's databases on the test server, through its ``test`` database."""

    def __init__(self, server: str) -> None:
        self.server = server.rstrip("/")
        self.created: list[str] = []

    async def create(self) -> str:
        name = f"dg_test_{RUN_ID}_{next(_NEXT_DB)}"
        conn = await asyncpg.connect(f"{self.server}/{PG_ADMIN_DB}", timeout=10)
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()
        self.created.append(name)
        return f"{self.server}/{name}"

    async def drop_all(self) -> None:
        conn = await asyncpg.connect(f"{self.server}/{PG_ADMIN_DB}", timeout=10)
        try:
            for name in self.created:
                await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


@pytest_asyncio.fixture(scope="session")
async def pg_databases() -> AsyncIterator[PgDatabases]:
    databases = PgDatabases(PG_SERVER)
    yield databases
    await databases.drop_all()


@pytest_asyncio.fixture(scope="session")
async def pg_url(pg_databases: PgDatabases) -> str:
    """This run's shared PostgreSQL database (tests empty its tables after themselves)."""
    return await pg_databases.create()


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own data directory: nothing is written under the home directory."""
    path = tmp_path / "data"
    monkeypatch.setenv("DECISIONS_GATEWAY_DATA_DIR", str(path))
    return path


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'gateway.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest_asyncio.fixture(loop_scope="function")
async def db(db_url: str) -> AsyncIterator[Database]:
    """The database migrated to head, its tables emptied afterwards (the PostgreSQL one is shared by the run)."""
    database = await open_database(db_url)
    try:
        yield database
    finally:
        async with database.engine.begin() as conn:
            for table in TABLES:
                await conn.execute(sa.text(f"DELETE FROM {table}"))
        await database.close()


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: [
        int(part) if part.isdigit() else 0 for part in p.split("/")])
    return candidates[-1] if candidates else None


class PgCluster:
    """A PostgreSQL cluster of the test's own: initdb in a temporary folder, listening on a free port of
    127.0.0.1 with its socket in that folder. As root the server runs as the ``postgres`` user."""

    def __init__(self) -> None:
        initdb, self.pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
        if initdb is None or self.pg_ctl is None:
            pytest.fail("initdb / pg_ctl not found (PATH or /usr/lib/postgresql/*/bin)")
        self.dir = Path(tempfile.mkdtemp(prefix="dg-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.user = "postgres" if os.geteuid() == 0 else None
        if self.user:
            entry = pwd.getpwnam(self.user)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self._run([initdb, "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"])
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, argv: list[str], timeout: float = 60) -> None:
        if self.user:
            argv = ["runuser", "-u", self.user, "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{argv}: {done.stdout}\n{done.stderr}")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run([self.pg_ctl, "-D", str(self.data), "-o", options, "-l", str(self.dir / "log"), "-w", "-t", "60",
                   "start"])

    def stop(self, mode: str = "immediate") -> None:
        self._run([self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"])

    def destroy(self) -> None:
        try:
            self.stop("immediate")
        except RuntimeError:
            pass  # not running
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def pg_cluster() -> Iterator[PgCluster]:
    cluster = PgCluster()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.destroy()
