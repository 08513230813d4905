"""The spend outbox: spend rows made durable on local disk before the response, drained to the database.

    outbox = SpendOutbox(data_dir() / "outbox")      # at start; claims the files of dead processes
    task = asyncio.create_task(outbox.drain_forever(db))
    outbox.append(row)                               # in the settle step: durable when it returns
    ...
    await outbox.close()                             # at shutdown: drains what it can, keeps the rest

**Files.** One SQLite file per process, ``outbox-<pid>-<random>.sqlite3`` in the outbox directory
(the random part keeps two containers with the same pid on one volume apart), with its lock file
``outbox-<pid>-<random>.lock``. The owner holds ``fcntl.flock(LOCK_EX)`` on the lock file for its whole
life; the kernel drops that lock when the process dies, ``kill -9`` included. At start (and every
``scan_every`` seconds) an outbox tries the lock of every other file without blocking: a lock it gets
belongs to a dead process, and that file is drained like its own, then deleted. Two live processes
therefore never drain one file, and a lock file is checked to still be the one on disk after it is
locked (a finished drainer unlinks it). flock and SQLite's own fcntl locks are separate on Linux, and
the lock lives in its own file, so neither disturbs the other.

**Durability.** WAL mode, ``synchronous=NORMAL`` by default: ``append`` is one autocommit INSERT,
whose commit is a write into the WAL in the OS page cache, so a row survives the process being
killed (``kill -9``, an OOM kill, a crash) the moment ``append`` returns, at a few microseconds a row;
only a power cut or kernel crash can lose the last rows. ``synchronous="FULL"`` fsyncs every append
and survives those too, at the disk's fsync latency a row (measured in ``python -m bench.outbox``).

**Draining.** Batches of ``batch_size`` rows, oldest first, go to the database through
``gateway.db.spend.insert_spend_rows`` (``ON CONFLICT (request_id) DO NOTHING``, roll-ups only for rows
actually inserted), with ``tenacity`` retries; a batch leaves the outbox only after the database has
committed it. A crash between the two means the batch is sent again and the database skips it:
nothing is lost and nothing counted twice. While the database is down, ``drain_forever`` logs one
warning, keeps the rows and retries with a capped back-off; it logs once more when they drain. A row
the database refuses for its content (a data or integrity error, SQLSTATE class 22 or 23, sent
alone after its batch was refused) is moved to the file's ``dead_rows`` table with the error, never
retried and never dropped silently; a file left with dead rows is renamed ``deadletter-...sqlite3`` for an operator.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import fcntl
import logging
import os
import random
import secrets
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, StatementError
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential, wait_random

from gateway.db.engine import Database, data_dir
from gateway.db.spend import TIME_COLUMNS, as_utc, insert_spend_rows, normalise_row

log = logging.getLogger("gateway.db.outbox")

PERMANENT_SQLSTATE_CLASSES = ("22", "23")  # data exception, integrity constraint violation


class RowRefused(Exception):
    """The database refused a batch for what is in it (not for being away): retrying the same rows cannot help."""


def is_permanent(exc: BaseException) -> bool:
    """Whether ``exc`` is the rows' fault: a data or integrity error (SQLSTATE class 22 or 23, which asyncpg
    reports as a plain DBAPIError), or a value that could not even be bound. Anything else (connection
    refused or lost, server shutting down, timeouts, a missing table) is the database's state, and retried."""
    if isinstance(exc, DataError | IntegrityError):
        return True
    if isinstance(exc, DBAPIError):
        state = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
        return isinstance(state, str) and state[:2] in PERMANENT_SQLSTATE_CLASSES
    return isinstance(exc, StatementError | TypeError)


def brief(exc: BaseException) -> str:
    """The error in one short line: the driver's message without SQLAlchemy's statement and parameters (which
    hold the rows, content included)."""
    orig = exc.orig if isinstance(exc, StatementError) and exc.orig is not None else exc
    text = str(orig).strip().splitlines()
    return f"{type(orig).__name__}: {text[0][:300] if text else ''}"


SYNCHRONOUS = ("NORMAL", "FULL")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rows (seq INTEGER PRIMARY KEY, request_id TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dead_rows (seq INTEGER PRIMARY KEY, request_id TEXT, body TEXT NOT NULL,
                                      error TEXT NOT NULL, at TEXT NOT NULL);
"""


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return str(value)


def encode_row(row: Mapping[str, Any]) -> tuple[str, str]:
    """``(request_id, body)`` for the outbox: the row normalised, as compact JSON (times in ISO 8601)."""
    clean = normalise_row(row)
    return clean["request_id"], orjson.dumps(clean, default=_json_default).decode()


def decode_row(body: str) -> dict[str, Any]:
    row: dict[str, Any] = orjson.loads(body)
    for name in TIME_COLUMNS:
        row[name] = as_utc(row[name])
    return row


def try_lock(path: Path) -> int | None:
    """An exclusive flock on ``path`` (created when missing) without waiting; the fd, or None when held."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    try:
        same = os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        same = False
    if not same:  # unlinked by the drainer that finished with it between our open and our lock
        os.close(fd)
        return None
    return fd


@dataclass
class Batch:
    first: int
    last: int
    rows: list[tuple[int, str, str]]  # (seq, request_id, body)


class OutboxFile:
    """One outbox file, locked by this process: appends through ``writer``, drains through ``reader``."""

    def __init__(self, path: Path, lock_fd: int, synchronous: str) -> None:
        self.path, self.lock_fd = path, lock_fd
        self._lock = threading.Lock()
        self.writer = self._connect(synchronous)
        self.writer.execute("PRAGMA wal_autocheckpoint=0")  # the drainer checkpoints, off the request path
        self.writer.executescript(_SCHEMA)
        os.chmod(path, 0o600)
        self.reader = self._connect(synchronous)
        self.pending: int = self.writer.execute("SELECT count(*) FROM rows").fetchone()[0]

    def _connect(self, synchronous: str) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous}")
        return conn

    @property
    def lock_path(self) -> Path:
        return self.path.with_suffix(".lock")

    def append(self, request_id: str, body: str) -> None:
        with self._lock:
            self.writer.execute("INSERT INTO rows (request_id, body) VALUES (?, ?)", (request_id, body))
            self.pending += 1

    def last_seq(self) -> int:
        return int(self.reader.execute("SELECT coalesce(max(seq), 0) FROM rows").fetchone()[0])

    def read_batch(self, limit: int, upto: int) -> Batch | None:
        rows = self.reader.execute("SELECT seq, request_id, body FROM rows WHERE seq <= ? ORDER BY seq LIMIT ?",
                                   (upto, limit)).fetchall()
        return Batch(rows[0][0], rows[-1][0], rows) if rows else None

    def delete(self, batch: Batch, dead: Mapping[int, str] | None = None) -> None:
        """Take the batch out (its dead rows into ``dead_rows``), in one transaction."""
        now = dt.datetime.now(dt.UTC).isoformat()
        dead = dead or {}
        conn = self.reader
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT INTO dead_rows (request_id, body, error, at) VALUES (?, ?, ?, ?)",
                             [(rid, body, dead[seq], now) for seq, rid, body in batch.rows if seq in dead])
            gone = conn.execute("DELETE FROM rows WHERE seq BETWEEN ? AND ?", (batch.first, batch.last)).rowcount
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        with self._lock:
            self.pending -= gone

    def dead_count(self) -> int:
        return int(self.reader.execute("SELECT count(*) FROM dead_rows").fetchone()[0])

    def close(self, *, remove_if_empty: bool) -> None:
        """Close; an empty file is removed, one with dead rows renamed ``deadletter-*``, otherwise kept for the
        next process. The lock is released last."""
        empty = self.pending == 0 and self.writer.execute("SELECT count(*) FROM rows").fetchone()[0] == 0
        dead = self.dead_count()
        self.reader.close()
        self.writer.close()
        if remove_if_empty and empty:
            if dead:
                target = self.path.with_name("deadletter-" + self.path.name)
                self.path.rename(target)
                log.error("spend outbox: %d rows the database refused are kept in %s", dead, target)
            else:
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(f"{self.path}{suffix}")
            with contextlib.suppress(FileNotFoundError):
                self.lock_path.unlink()
        os.close(self.lock_fd)


class SpendOutbox:
    """The process's outbox file plus the files of dead processes it claimed; see the module docstring."""

    def __init__(self, directory: Path | str | None = None, *, synchronous: str = "NORMAL", batch_size: int = 500,
                 attempts: int = 3, interval: float = 0.25, max_backoff: float = 5.0, scan_every: float = 60.0,
                 batch_timeout: float = 30.0) -> None:
        if synchronous.upper() not in SYNCHRONOUS:
            raise ValueError(f"outbox synchronous: one of {', '.join(SYNCHRONOUS)}")
        self.directory = Path(directory) if directory is not None else data_dir() / "outbox"
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.synchronous = synchronous.upper()
        self.batch_size, self.attempts, self.interval = batch_size, attempts, interval
        self.max_backoff, self.scan_every, self.batch_timeout = max_backoff, scan_every, batch_timeout
        self.inserted_total = 0  # rows the database took as new
        self.duplicates_total = 0  # rows the database already had (a replay)
        self.dead_total = 0
        self._drain_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._closing = False
        self._db: Database | None = None
        self._orphans: list[OutboxFile] = []
        self.own = self._create_own()
        self.claim_orphans()

    # -- the request path ------------------------------------------------------------------------------

    def append(self, row: Mapping[str, Any]) -> None:
        """Store one spend row (the spend_logs columns); durable against a process kill when it returns.
        ``ValueError`` for a row that could never be stored (unknown column, no request_id)."""
        request_id, body = encode_row(row)
        self.own.append(request_id, body)

    def depth(self) -> int:
        """Rows waiting for the database, in this process's file and the claimed files of dead processes."""
        return self.own.pending + sum(f.pending for f in self._orphans)

    # -- draining --------------------------------------------------------------------------------------

    async def drain_once(self, db: Database) -> int:
        """Send what is waiting now (not rows appended meanwhile) to ``db``; returns the rows taken out of the
        outbox. Raises the database's error when a batch still fails after the retries (it stays queued)."""
        async with self._drain_lock:
            moved = 0
            for file in [self.own, *self._orphans]:
                moved += await self._drain_file(db, file)
            for file in [f for f in self._orphans if f.pending == 0]:
                self._orphans.remove(file)
                file.close(remove_if_empty=True)
                log.info("spend outbox: drained and removed %s", file.path.name)
            return moved

    async def drain_forever(self, db: Database) -> None:
        """Drain every ``interval`` seconds until ``close``; a database outage backs off (capped at
        ``max_backoff``) and is logged once when it starts and once when it ends."""
        self._db = db
        failing_since: float | None = None
        delay = self.interval
        last_scan = time.monotonic()
        while not self._closing:
            if self.depth():
                try:
                    await self.drain_once(db)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # the loop must outlive any database error; the rows stay queued
                    if failing_since is None:
                        failing_since = time.monotonic()
                        log.warning("spend outbox: cannot write to the database (%s); %d rows kept in %s, "
                                    "retrying", brief(exc), self.depth(), self.directory)
                    delay = min(self.max_backoff, delay * 2) * random.uniform(0.8, 1.0)
                else:
                    if failing_since is not None:
                        log.warning("spend outbox: database writable again after %.0f s; queue drained",
                                    time.monotonic() - failing_since)
                        failing_since = None
                    delay = self.interval
            if time.monotonic() - last_scan >= self.scan_every:
                last_scan = time.monotonic()
                async with self._drain_lock:
                    await asyncio.to_thread(self.claim_orphans)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    async def close(self, db: Database | None = None, timeout: float = 5.0) -> None:
        """Stop ``drain_forever``, drain what can be drained within ``timeout`` seconds, close the files. Rows
        left (database down) stay on disk for the next process to drain."""
        self._closing = True
        self._wake.set()
        db = db or self._db
        if db is not None and self.depth():
            try:
                async with asyncio.timeout(timeout):
                    await self.drain_once(db)
            except Exception as exc:
                log.warning("spend outbox: %d rows left in %s for the next start (%s)", self.depth(),
                            self.directory, brief(exc))
        async with self._drain_lock:
            for file in [*self._orphans, self.own]:
                file.close(remove_if_empty=True)
            self._orphans.clear()

    def claim_orphans(self) -> int:
        """Lock and adopt the outbox files of processes that are gone; returns how many were claimed."""
        mine = {self.own.path, *(f.path for f in self._orphans)}
        claimed = 0
        for path in sorted(self.directory.glob("outbox-*.sqlite3")):
            if path in mine:
                continue
            fd = try_lock(path.with_suffix(".lock"))
            if fd is None:
                continue
            if not path.exists():  # drained and removed meanwhile; take our lock file away again
                with contextlib.suppress(FileNotFoundError):
                    path.with_suffix(".lock").unlink()
                os.close(fd)
                continue
            try:
                file = OutboxFile(path, fd, self.synchronous)
            except sqlite3.Error as exc:
                os.close(fd)
                log.error("spend outbox: cannot open %s left by a stopped process: %s", path, exc)
                continue
            self._orphans.append(file)
            claimed += 1
            log.info("spend outbox: claimed %s (%d rows) from a stopped process", path.name, file.pending)
        return claimed

    # -- internals -------------------------------------------------------------------------------------

    def _create_own(self) -> OutboxFile:
        while True:
            path = self.directory / f"outbox-{os.getpid()}-{secrets.token_hex(4)}.sqlite3"
            fd = try_lock(path.with_suffix(".lock"))  # locked before the database file exists
            if fd is not None and not path.exists():
                return OutboxFile(path, fd, self.synchronous)
            if fd is not None:
                os.close(fd)

    async def _drain_file(self, db: Database, file: OutboxFile) -> int:
        upto = await asyncio.to_thread(file.last_seq)
        moved = 0
        while True:
            batch = await asyncio.to_thread(file.read_batch, self.batch_size, upto)
            if batch is None:
                return moved
            dead = await self._send(db, batch)
            await asyncio.to_thread(file.delete, batch, dead)
            moved += len(batch.rows)

    async def _send(self, db: Database, batch: Batch) -> dict[int, str]:
        """Insert the batch (retried); when the database refuses it for its content, row by row. Returns the
        rows refused for good: seq -> error."""
        decoded: list[tuple[int, dict[str, Any]]] = []
        dead: dict[int, str] = {}
        for seq, _rid, body in batch.rows:
            try:
                decoded.append((seq, decode_row(body)))
            except (ValueError, TypeError, KeyError) as exc:
                dead[seq] = f"unreadable row: {exc}"
        try:
            await self._insert(db, [row for _, row in decoded], len(decoded))
        except RowRefused:
            for seq, row in decoded:
                try:
                    await self._insert(db, [row], 1)
                except RowRefused as exc:
                    dead[seq] = brief(exc.__cause__ or exc)
        if dead:
            self.dead_total += len(dead)
            log.error("spend outbox: the database refused %d rows for their content; kept in dead_rows", len(dead))
        return dead

    async def _insert(self, db: Database, rows: list[dict[str, Any]], count: int) -> None:
        async for attempt in AsyncRetrying(stop=stop_after_attempt(self.attempts),
                                           wait=wait_exponential(multiplier=0.05, max=2.0) + wait_random(0, 0.05),
                                           retry=retry_if_exception(lambda exc: not isinstance(exc, RowRefused)),
                                           reraise=True):
            with attempt:
                try:
                    async with asyncio.timeout(self.batch_timeout):
                        inserted = await insert_spend_rows(db, rows)
                except Exception as exc:
                    if is_permanent(exc):
                        raise RowRefused(str(exc)) from exc
                    raise
        self.inserted_total += inserted
        self.duplicates_total += count - inserted
