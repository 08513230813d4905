"""``kill -9`` of the gateway under load loses no spend row and writes none twice: every answered
request's row is in the database after a restart (the outbox drains), and no row appears twice."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.fakes.typesafe import FakeTypeSafe

KEY = "ts-durability-key"
BODY = {"model": "jev", "state": "Charged twice.", "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(config: Path, port: int, data: Path) -> subprocess.Popen:
    env = {**os.environ, "DECISIONS_GATEWAY_DATA_DIR": str(data)}
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "--config", str(config), "--host", "127.0.0.1",
                             "--port", str(port), "--log-level", "warning"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health/readiness", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the gateway did not become ready")


async def load(url: str, seconds: float) -> tuple[list[str], int]:
    answered: list[str] = []
    sent = 0

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal sent
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            sent += 1
            try:
                r = await client.post(url, json=BODY)
            except httpx.HTTPError:
                return  # the gateway was killed under us
            if r.status_code == 200:
                answered.append(r.headers["x-request-id"])

    async with httpx.AsyncClient(timeout=10) as client:
        await asyncio.gather(*(worker(client) for _ in range(8)))
    return answered, sent


def test_kill_9_under_load_loses_no_spend_row_and_writes_none_twice(tmp_path):
    data, db = tmp_path / "data", tmp_path / "spend.db"
    with FakeTypeSafe(KEY) as upstream:
        config = tmp_path / "gateway.yaml"
        config.write_text(json.dumps({
            "model_list": [{"model_name": "jev", "litellm_params": {
                "model": "typesafe/jev-latest", "api_key": KEY, "api_base": upstream.url}}],
            "general_settings": {"database_url": f"sqlite:///{db}"}}))
        port = free_port()
        gateway = start(config, port, data)
        url = f"http://127.0.0.1:{port}/v1/systemone"

        async def scenario() -> tuple[list[str], int]:
            running = asyncio.ensure_future(load(url, 3.0))
            await asyncio.sleep(1.5)
            gateway.send_signal(signal.SIGKILL)  # mid-load: rows still in the outbox, requests in flight
            return await running

        answered, sent = asyncio.run(scenario())
        gateway.wait(timeout=10)
        assert len(answered) > 20, "the load did not get going before the kill"

        restarted = start(config, free_port(), data)  # a new process adopts the dead one's outbox
        try:
            deadline = time.monotonic() + 20
            rows: list[tuple[str]] = []
            while time.monotonic() < deadline:
                with sqlite3.connect(db) as conn:
                    rows = conn.execute("SELECT request_id FROM spend_logs").fetchall()
                if {r[0] for r in rows} >= set(answered):
                    break
                time.sleep(0.2)
        finally:
            restarted.terminate()
            restarted.wait(timeout=20)
    ids = [r[0] for r in rows]
    assert set(answered) <= set(ids)  # every answered request has its row
    assert len(ids) == len(set(ids)) <= sent  # none twice, none made up
