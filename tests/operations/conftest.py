"""Helpers for the operations tests: real gateway processes (``python -m gateway.cli``), config files
that change under them, a slow fake upstream, a load of concurrent requests, the spend rows in the
database.

Throwaway dependencies come from the suites that own them: ``RedisServer`` (tests/shared_state),
``PgCluster`` and ``PgDatabases`` (tests/db). The machine's Redis and PostgreSQL are never stopped.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests import polls
from tests.db.conftest import PG_SERVER, PgDatabases
from tests.db.conftest import pg_cluster as pg_cluster  # noqa: F401 - a throwaway PostgreSQL of the test's own
from tests.fakes.harness import Recorded, Scripted
from tests.fakes.typesafe import FakeTypeSafe
from tests.shared_state.conftest import free_port, wait_for
from tests.shared_state.conftest import redis_server as redis_server  # noqa: F401 - a throwaway redis-server

REPO = Path(__file__).resolve().parents[2]
KEY = "ts-operations-key-0123456789"
MASTER = "sk-operations-master-" + "m" * 20
START_TIMEOUT_S = 60.0


def body(model: str = "jev", state: str = "Charged twice.") -> dict[str, Any]:
    return {"model": model, "state": state, "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}


def auth(key: str | None = MASTER) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


class SlowTypeSafe(FakeTypeSafe):
    """FakeTypeSafe answering each request after ``delay`` seconds (set at any time)."""

    def __init__(self, api_key: str | None = KEY, delay: float = 0.0) -> None:
        super().__init__(api_key)
        self.delay = delay

    def handle(self, rec: Recorded) -> Scripted:
        if self.delay:
            time.sleep(self.delay)
        return super().handle(rec)


def entry(name: str, upstream_url: str, **params: Any) -> dict[str, Any]:
    return {"model_name": name, "litellm_params": {"model": "typesafe/jev-latest", "api_key": KEY,
                                                   "api_base": upstream_url, **params}}


def write_config(path: Path, entries: list[dict[str, Any]], router: dict[str, Any] | None = None,
                 **general: Any) -> Path:
    """A config file (JSON is YAML) with ``entries``, ``router_settings`` and ``general_settings``
    (the master key unless told otherwise), replaced atomically."""
    config: dict[str, Any] = {"model_list": entries, "router_settings": router or {},
                              "general_settings": {"master_key": MASTER, **general}}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(config))
    tmp.replace(path)
    return path


@dataclass
class GatewayProcess:
    proc: subprocess.Popen
    port: int
    log_path: Path
    data: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def start(cls, config: Path, tmp_path: Path, *extra: str, name: str = "gateway") -> GatewayProcess:
        port = free_port()
        data = tmp_path / f"{name}-data"
        log_path = tmp_path / f"{name}.log"
        env = {**os.environ, "DECISIONS_GATEWAY_DATA_DIR": str(data)}
        with open(log_path, "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "--config", str(config), "--host",
                                     "127.0.0.1", "--port", str(port), "--log-level", "warning", *extra],
                                    env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        gateway = cls(proc, port, log_path, data)
        gateway.wait_ready()
        return gateway

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the gateway exited ({self.proc.returncode}):\n{self.log()}")
            try:
                if polls.get(f"{self.url}/health/readiness", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the gateway did not become ready:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, text: str, timeout_s: float = 20.0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if text in (log := self.log()):
                return log
            time.sleep(0.05)
        pytest.fail(f"{text!r} not in the gateway's output within {timeout_s} s:\n{self.log()}")

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def refuses_connections(self) -> bool:
        """Whether a new connection is refused. A reset during the handshake is a refusal too: a probe that
        reaches the listening socket as it closes is reset by the kernel, never accepted (seen once in a
        loaded loop of the suite: ConnectionResetError from connect)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return False
        except (ConnectionRefusedError, ConnectionResetError):
            return True


def fresh_client(**kwargs: Any) -> httpx.Client:
    """A client opening a new connection for every request (so that every worker gets some)."""
    return httpx.Client(limits=httpx.Limits(max_keepalive_connections=0), timeout=30, **kwargs)


@dataclass
class Load:
    """Requests to ``model`` from ``workers`` concurrent clients until ``stop``: every status kept."""

    url: str
    model: str = "jev"
    workers: int = 6
    statuses: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    request_ids: list[str] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        async with httpx.AsyncClient(timeout=30, headers=auth()) as client:
            await asyncio.gather(*(self._worker(client) for _ in range(self.workers)))

    async def _worker(self, client: httpx.AsyncClient) -> None:
        while not self._stop.is_set():
            try:
                r = await client.post(f"{self.url}/v1/systemone", json=body(self.model))
            except httpx.HTTPError as exc:
                self.failures.append(f"{type(exc).__name__}: {exc}")
                continue
            self.statuses.append(r.status_code)
            if r.status_code == 200:
                self.request_ids.append(r.headers["x-request-id"])
            else:
                self.failures.append(r.text[:300])

    def stop(self) -> None:
        self._stop.set()


async def spend_rows(url: str) -> list[tuple[str, str, int]]:
    """(request_id, call_type, status) of every spend row in the PostgreSQL database at ``url``."""
    conn = await asyncpg.connect(url, timeout=10)
    try:
        rows = await conn.fetch("SELECT request_id, call_type, status FROM spend_logs")
    finally:
        await conn.close()
    return [(r["request_id"], r["call_type"], r["status"]) for r in rows]


def wait_until(condition, timeout_s: float, what: str, every_s: float = 0.1):
    return wait_for(condition, timeout_s, what, every_s)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A database of this test's own on the test PostgreSQL server, dropped afterwards."""
    databases = PgDatabases(PG_SERVER)
    url = asyncio.run(databases.create())
    yield url
    asyncio.run(databases.drop_all())


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """In-thread gateways keep their outbox in this test's folder (no file is claimed across tests)."""
    path = tmp_path / "data"
    monkeypatch.setenv("DECISIONS_GATEWAY_DATA_DIR", str(path))
    return path
