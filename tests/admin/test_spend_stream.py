"""GET /spend/logs' unpaged list is sent a chunk at a time (gateway/admin/spend.py ``_streamed_list``): the
same rows, order and fields as the pages of /spend/logs/v2, whatever the chunk size; and a database lost in
the middle of the list cuts the answer off (no closing chunk), never a shorter list that reads as complete.

A real gateway over TCP (uvicorn in a thread, ``start_gateway``): the list's chunks and a connection cut are
what a client sees on the wire, which an in-process transport would hide."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import time

import asyncpg
import httpx
import pytest

from gateway.db import queries
from gateway.db.engine import open_database
from gateway.db.spend import insert_spend_rows, normalise_row
from tests.conftest import start_gateway

MASTER = "sk-master-spend-stream-0123456789"
DAY = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
AUTH = {"Authorization": f"Bearer {MASTER}"}


def rows(n: int) -> list[dict]:
    return [normalise_row({"request_id": f"stream-{i:05}", "api_key": "b" * 64, "key_alias": "streamed",
                           "model_group": "jev", "model": "typesafe/jev-latest", "spend": 0.000123 * (i % 7),
                           "prompt_tokens": 10 + i, "completion_tokens": 1, "status": 200,
                           "startTime": DAY + dt.timedelta(seconds=i), "endTime": DAY + dt.timedelta(seconds=i, milliseconds=5),
                           "metadata": {"i": i}})
            for i in range(n)]


def seeded_gateway(url: str, n: int):
    async def seed() -> None:
        db = await open_database(url)
        try:
            assert await insert_spend_rows(db, rows(n)) == n
        finally:
            await db.close()

    asyncio.run(seed())
    return start_gateway({"model_list": [{"model_name": "jev", "litellm_params": {
        "model": "typesafe/jev-latest", "api_key": "ts-k", "api_base": "http://127.0.0.1:9/v1"}}],
        "general_settings": {"master_key": MASTER, "database_url": url}})


def test_the_list_in_chunks_equals_its_pages(tmp_path, monkeypatch):
    monkeypatch.setattr(queries, "STREAM_CHUNK", 3)  # 10 rows: chunks of 3, 3, 3 and 1
    gateway = seeded_gateway(f"sqlite:///{tmp_path / 'gateway.db'}", 10)
    try:
        listed = httpx.get(gateway.url + "/spend/logs", headers=AUTH, timeout=30)
        assert listed.status_code == 200 and listed.headers["transfer-encoding"] == "chunked"
        assert "content-length" not in listed.headers and "x-litellm-spend-logs-truncated" not in listed.headers
        paged = httpx.get(gateway.url + "/spend/logs/v2", params={"page_size": 100}, headers=AUTH, timeout=30)
        assert listed.json() == paged.json()["data"] and len(listed.json()) == 10
        assert [r["request_id"] for r in listed.json()] == [f"stream-{i:05}" for i in reversed(range(10))]
        alone = httpx.get(gateway.url + "/spend/logs", params={"request_id": "stream-00004"}, headers=AUTH, timeout=30)
        assert [r["request_id"] for r in alone.json()] == ["stream-00004"]
        none = httpx.get(gateway.url + "/spend/logs", params={"request_id": "absent"}, headers=AUTH, timeout=30)
        assert none.status_code == 200 and none.json() == []
    finally:
        gateway.stop()


def read_until(sock: socket.socket, done, deadline: float) -> bytes:
    """Bytes from ``sock`` until ``done(bytes so far)`` or the peer closes, within the deadline."""
    got = b""
    while not done(got):
        assert time.monotonic() < deadline, "the answer neither ended nor was cut off in time"
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        part = sock.recv(65536)
        if not part:
            break
        got += part
    return got


@pytest.mark.asyncio(loop_scope="session")
async def test_a_database_lost_mid_list_cuts_the_answer_off(admin_pg_databases):
    url = await admin_pg_databases.create()  # a database of this test's own: its connections are killed
    name = url.rsplit("/", 1)[1]
    gateway = await asyncio.to_thread(seeded_gateway, url, queries.MAX_LIST_ROWS)  # ~6 MB of JSON
    host, port = gateway.url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a slow reader: the server waits on it
    try:
        sock.connect((host, int(port)))
        sock.sendall(f"GET /spend/logs HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {MASTER}\r\n\r\n".encode())
        deadline = time.monotonic() + 60
        head = await asyncio.to_thread(read_until, sock, lambda got: b"\r\n\r\n" in got, deadline)
        assert head.startswith(b"HTTP/1.1 200") and b"transfer-encoding: chunked" in head.lower()
        admin = await asyncpg.connect(url, timeout=10)
        try:  # the database goes away while the list is being read
            killed = await admin.fetchval("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                          "WHERE datname = $1 AND pid <> pg_backend_pid()", name)
        finally:
            await admin.close()
        assert killed >= 1
        body = await asyncio.to_thread(read_until, sock, lambda got: False, deadline)
    finally:
        sock.close()
    assert not body.endswith(b"0\r\n\r\n")  # no closing chunk: the reader knows the list is broken
    assert body.count(b'"request_id"') < queries.MAX_LIST_ROWS
    again = await asyncio.to_thread(httpx.get, gateway.url + "/spend/logs", params={"request_id": "stream-00001"},
                                    headers=AUTH, timeout=30)
    assert again.status_code == 200 and [r["request_id"] for r in again.json()] == ["stream-00001"]
    await asyncio.to_thread(gateway.stop)
