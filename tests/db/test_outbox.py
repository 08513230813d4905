"""The spend outbox: durable appends, idempotent drains, one drainer per file, rows the database refuses."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from pathlib import Path

import pytest

from gateway.db.engine import Database, open_database
from gateway.db.outbox import OutboxFile, SpendOutbox, is_permanent
from tests.db.rows import rollup_totals, spend_count, spend_row
from tests.shared_state.conftest import wait_until


def files(directory: Path, pattern: str = "outbox-*.sqlite3") -> list[Path]:
    return sorted(directory.glob(pattern))


def rows_on_disk(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM rows").fetchone()[0])


def simulate_death(outbox: SpendOutbox) -> None:
    """What the kernel does when the process dies: its connections and its lock go, its files stay."""
    for file in [outbox.own, *outbox._orphans]:
        file.reader.close()
        file.writer.close()
        os.close(file.lock_fd)


async def test_append_is_on_disk_when_it_returns(tmp_path: Path) -> None:
    outbox = SpendOutbox(tmp_path / "outbox")
    outbox.append(spend_row(1))
    outbox.append(spend_row(2))
    assert outbox.depth() == 2
    assert rows_on_disk(outbox.own.path) == 2  # another connection sees both: committed
    assert outbox.own.path.name.startswith(f"outbox-{os.getpid()}-")
    assert (outbox.own.path.stat().st_mode & 0o777) == 0o600
    await outbox.close()  # no database: the rows stay for the next process
    assert rows_on_disk(files(tmp_path / "outbox")[0]) == 2


def test_append_refuses_a_row_that_could_never_be_stored(tmp_path: Path) -> None:
    outbox = SpendOutbox(tmp_path)
    with pytest.raises(ValueError, match="unknown columns"):
        outbox.append({"request_id": "r", "api_key_plain": "sk-..."})
    assert outbox.depth() == 0


def test_appends_are_fast(tmp_path: Path) -> None:
    outbox = SpendOutbox(tmp_path)
    start = time.perf_counter()
    for i in range(2000):
        outbox.append(spend_row(i))
    assert time.perf_counter() - start < 4.0  # a deadline only (2 ms a row); python -m bench.outbox measures


async def test_drain_is_idempotent(db: Database, tmp_path: Path) -> None:
    tmp_path = tmp_path / "outbox"
    outbox = SpendOutbox(tmp_path, batch_size=64)
    for i in range(300):
        outbox.append(spend_row(i))
    assert await outbox.drain_once(db) == 300
    assert outbox.depth() == 0 and await outbox.drain_once(db) == 0
    for i in range(150, 310):  # 150 replayed rows and 10 new ones
        outbox.append(spend_row(i))
    assert await outbox.drain_once(db) == 160
    assert (outbox.inserted_total, outbox.duplicates_total) == (310, 150)
    assert await spend_count(db) == 310
    assert await rollup_totals(db) == (310, 155.0, 3100)
    await outbox.close(db)
    assert files(tmp_path) == [] and list(tmp_path.iterdir()) == []


async def test_a_crash_between_the_commit_and_the_delete_sends_the_batch_again_and_counts_it_once(
        db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = SpendOutbox(tmp_path, batch_size=50)
    for i in range(120):
        first.append(spend_row(i))

    def die(self: OutboxFile, *_: object) -> None:
        raise SystemExit("killed after the database committed")

    with monkeypatch.context() as patch:
        patch.setattr(OutboxFile, "delete", die)
        with pytest.raises(SystemExit):
            await first.drain_once(db)
    assert await spend_count(db) == 50  # the first batch is in the database, and still in the outbox
    simulate_death(first)

    second = SpendOutbox(tmp_path, batch_size=50)
    assert second.depth() == 120
    assert await second.drain_once(db) == 120
    assert (second.inserted_total, second.duplicates_total) == (70, 50)
    assert await spend_count(db) == 120 and (await rollup_totals(db))[0] == 120
    await second.close(db)
    assert files(tmp_path) == []


async def test_two_live_outboxes_never_drain_each_others_file(db: Database, tmp_path: Path) -> None:
    a, b = SpendOutbox(tmp_path), SpendOutbox(tmp_path)
    a.append(spend_row(1))
    b.append(spend_row(2))
    assert a.claim_orphans() == 0 and b.claim_orphans() == 0  # both files are locked by a live owner
    assert await a.drain_once(db) == 1 and b.depth() == 1
    await b.close()  # no database given: b's row stays in its file, now unlocked
    assert a.claim_orphans() == 1 and a.depth() == 1
    assert await a.drain_once(db) == 1
    assert await spend_count(db) == 2
    assert files(tmp_path) == [a.own.path]  # b's file was removed once drained
    await a.close(db)


async def test_leftover_files_are_claimed_at_start(db: Database, tmp_path: Path) -> None:
    tmp_path = tmp_path / "outbox"
    dead = SpendOutbox(tmp_path)
    for i in range(10):
        dead.append(spend_row(i))
    simulate_death(dead)
    fresh = SpendOutbox(tmp_path)
    assert fresh.depth() == 10
    assert await fresh.drain_once(db) == 10
    await fresh.close(db)
    assert await spend_count(db) == 10 and list(tmp_path.iterdir()) == []


async def test_drain_forever_and_close(db: Database, tmp_path: Path) -> None:
    outbox = SpendOutbox(tmp_path, interval=0.02)
    task = asyncio.create_task(outbox.drain_forever(db))
    for i in range(50):
        outbox.append(spend_row(i))
        await asyncio.sleep(0)
    await wait_until(lambda: outbox.depth() == 0, 10, "the rows drained")
    for i in range(50, 60):
        outbox.append(spend_row(i))
    await outbox.close()  # drains the last rows with the database drain_forever was given
    await asyncio.wait_for(task, 5)
    assert await spend_count(db) == 60


async def test_a_row_the_database_refuses_is_kept_aside_and_the_others_drain(pg_url: str, tmp_path: Path) -> None:
    db = await open_database(pg_url)
    try:
        outbox = SpendOutbox(tmp_path, batch_size=10)
        for i in range(25):
            # PostgreSQL's jsonb takes no \u0000: the database refuses this row for what it holds
            outbox.append(spend_row(i, metadata={"bad": "a\x00b"} if i == 13 else {}))
        assert await outbox.drain_once(db) == 25
        assert outbox.dead_total == 1 and outbox.depth() == 0
        assert await spend_count(db) == 24 and (await rollup_totals(db))[0] == 24
        own = outbox.own.path
        await outbox.close(db)
        kept = own.with_name("deadletter-" + own.name)
        with sqlite3.connect(kept) as conn:
            request_id, error = conn.execute("SELECT request_id, error FROM dead_rows").fetchone()
        assert request_id == "req-13" and "Unicode" in error
        assert files(tmp_path) == []  # not drained again by the next process
    finally:
        from tests.db.conftest import TABLES

        async with db.engine.begin() as conn:
            import sqlalchemy as sa

            for table in TABLES:
                await conn.execute(sa.text(f"DELETE FROM {table}"))
        await db.close()


def test_connection_errors_are_retried_and_data_errors_are_not() -> None:
    import sqlalchemy.exc as sx

    class Orig(Exception):
        def __init__(self, sqlstate: str) -> None:
            self.sqlstate = sqlstate

    assert is_permanent(sx.DBAPIError("INSERT", {}, Orig("22P05")))
    assert is_permanent(sx.IntegrityError("INSERT", {}, Orig("23505")))
    assert not is_permanent(sx.DBAPIError("INSERT", {}, Orig("57P01")))  # admin shutdown
    assert not is_permanent(sx.OperationalError("INSERT", {}, Orig("08006")))
    assert not is_permanent(ConnectionRefusedError())
    assert not is_permanent(TimeoutError())
