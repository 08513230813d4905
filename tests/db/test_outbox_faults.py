"""The outbox under faults: a process killed with SIGKILL (while appending, while draining), and a database
that goes away mid-load and comes back. No row is lost and none is written or counted twice."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from gateway.db.engine import Database, open_database
from gateway.db.outbox import SpendOutbox
from tests.db.conftest import PgCluster
from tests.db.rows import rollup_totals, spend_count, spend_row
from tests.shared_state.conftest import wait_until

REPO = Path(__file__).resolve().parents[2]
LINE_TIMEOUT_S = 60.0


class Child:
    """``tests.db.outbox_child`` in its own process, read line by line."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, *args: str) -> Child:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "tests.db.outbox_child", *args, cwd=REPO,
                                                    stdout=asyncio.subprocess.PIPE)
        return cls(proc)

    async def wait_for(self, prefix: str) -> str:
        assert self.proc.stdout is not None
        while True:
            line = (await asyncio.wait_for(self.proc.stdout.readline(), LINE_TIMEOUT_S)).decode()
            if not line:
                pytest.fail(f"the child exited ({await self.proc.wait()}) before printing {prefix!r}")
            if line.startswith(prefix):
                return line.strip()

    async def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        assert await self.proc.wait() == -signal.SIGKILL


async def request_ids(db: Database) -> list[str]:
    async with db.engine.connect() as conn:
        return list((await conn.execute(sa.text("SELECT request_id FROM spend_logs"))).scalars())


async def test_rows_appended_by_a_killed_process_are_drained_once(db: Database, tmp_path: Path) -> None:
    outbox_dir = tmp_path / "outbox"
    child = await Child.start(str(outbox_dir), "append", "2000")
    await child.wait_for("done")
    await child.kill()

    survivor = SpendOutbox(outbox_dir)
    assert survivor.depth() == 2000
    assert await survivor.drain_once(db) == 2000
    await survivor.close(db)
    assert await spend_count(db) == 2000
    assert await rollup_totals(db) == (2000, 500.0, 4000)
    assert list(outbox_dir.iterdir()) == []


async def test_a_process_killed_in_the_middle_of_appending_loses_no_row_it_had_appended(
        db: Database, tmp_path: Path) -> None:
    outbox_dir = tmp_path / "outbox"
    child = await Child.start(str(outbox_dir), "append", "1000000")
    reported = int((await child.wait_for("appended 3000")).split()[1])
    await child.kill()

    survivor = SpendOutbox(outbox_dir)
    stored = survivor.depth()
    assert stored >= reported
    await survivor.drain_once(db)
    await survivor.close(db)
    ids = await request_ids(db)
    assert sorted(ids) == sorted(f"child-{i}" for i in range(stored))  # every row up to the kill, no gap


async def test_a_process_killed_while_draining_leaves_the_rest_to_the_next_once(
        db_url: str, db: Database, tmp_path: Path) -> None:
    outbox_dir = tmp_path / "outbox"
    child = await Child.start(str(outbox_dir), "drain", "3000", db_url)
    await child.wait_for("draining")
    await wait_until(lambda: _has_rows(db), LINE_TIMEOUT_S, "the child's first batches in the database")
    await child.kill()
    before = await spend_count(db)
    assert before < 3000, "the child drained everything before it was killed"

    survivor = SpendOutbox(outbox_dir, batch_size=500)
    assert await survivor.drain_once(db) == survivor.inserted_total + survivor.duplicates_total
    await survivor.close(db)
    assert await spend_count(db) == 3000
    assert await rollup_totals(db) == (3000, 750.0, 6000)  # the replayed batch counted once
    assert survivor.inserted_total == 3000 - before


async def _has_rows(db: Database) -> bool:
    return await spend_count(db) > 0


async def test_rows_wait_out_a_database_outage(pg_cluster: PgCluster, tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.db.outbox")
    db = await open_database(pg_cluster.url)
    outbox = SpendOutbox(tmp_path / "outbox", interval=0.02, max_backoff=0.3, attempts=2, batch_size=100)
    failed_drains: list[Exception] = []
    drain_once = outbox.drain_once

    async def counted_drain(db: Database) -> int:  # the drains that failed, to wait on instead of a sleep
        try:
            return await drain_once(db)
        except Exception as exc:
            failed_drains.append(exc)
            raise

    outbox.drain_once = counted_drain
    drainer = asyncio.create_task(outbox.drain_forever(db))

    async def load(start: int, stop: int) -> None:
        for i in range(start, stop):
            outbox.append(spend_row(i))
            if i % 20 == 0:
                await asyncio.sleep(0.001)

    try:
        await load(0, 500)
        stopping = asyncio.create_task(asyncio.to_thread(pg_cluster.stop, "immediate"))  # mid-load
        await load(500, 1000)
        await stopping
        down_since = len(failed_drains)
        await load(1000, 1500)  # while the server is down: these cannot drain
        assert outbox.depth() >= 500
        await wait_until(lambda: len(failed_drains) >= down_since + 2, LINE_TIMEOUT_S,
                         "two drains failed while the database was down (a retry after the first)")
        assert outbox.depth() >= 500 and not drainer.done()
        starting = asyncio.create_task(asyncio.to_thread(pg_cluster.start))
        await load(1500, 2000)
        await starting
        await load(2000, 2500)
        await wait_until(lambda: outbox.depth() == 0, 60, "the outbox drained after the database came back")
    finally:
        await outbox.close()
        await asyncio.wait_for(drainer, 10)
    try:
        assert await spend_count(db) == 2500
        assert await rollup_totals(db) == (2500, 1250.0, 25000)
    finally:
        await db.close()
    messages = [r.getMessage() for r in caplog.records]
    assert any("cannot write to the database" in m for m in messages)
    assert any("database writable again" in m for m in messages)
    assert not any("INSERT" in m or "req-" in m for m in messages)  # no statement, no row in the log
