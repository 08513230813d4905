"""Shared fixtures: the gateway served by uvicorn on a free port in a background thread (real HTTP).

``gateway_factory(config)`` starts one gateway per distinct config (a dict in LiteLLM's shape or a
``GatewayConfig``) and stops them all at the end of the session. Fake upstreams come from
tests/fakes/.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass

import pytest
import uvicorn

from gateway.config.loader import GatewayConfig, build_config
from gateway.edge.app import create_app
from gateway.state import GatewayState

START_TIMEOUT_S = 30.0
# The suite runs in several processes (pytest-xdist: gw0, gw1, ...), which inherit the controller's
# environment. Gateways under test keep their data (SQLite database, spend outbox, salt) in a folder
# of their worker's own; each worker has its own Redis database on the machine's Redis, so that no
# worker sees another's router state, counters or cache entries; PostgreSQL databases are already per
# process (tests/db/conftest.py names them by a random run id).
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER or "DECISIONS_GATEWAY_DATA_DIR" not in os.environ:
    os.environ["DECISIONS_GATEWAY_DATA_DIR"] = tempfile.mkdtemp(prefix=f"decisions-gateway-tests-{_WORKER}")
if _WORKER.startswith("gw") and _WORKER[2:].isdigit():
    os.environ.setdefault("DECISIONS_GATEWAY_TEST_REDIS_URL", f"redis://127.0.0.1:6379/{1 + int(_WORKER[2:]) % 15}")
    # One torch thread per worker (and per gateway or backend process a test starts): the workers
    # outnumber the cores, and torch's threads spin-wait on cores another worker holds.
    os.environ.setdefault("OMP_NUM_THREADS", "1")


@dataclass
class RunningGateway:
    url: str
    app: object
    server: uvicorn.Server
    thread: threading.Thread

    @property
    def state(self) -> GatewayState:
        return self.app.state.gateway

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_gateway(config: GatewayConfig | dict, environ: dict | None = None) -> RunningGateway:
    if isinstance(config, dict):
        config = build_config(config, environ or {}, source="<test config>")
    app = create_app(config)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                           lifespan="on", access_log=False))
    thread = threading.Thread(target=server.run, name="gateway-under-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the gateway did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    return RunningGateway(f"http://127.0.0.1:{port}", app, server, thread)


@pytest.fixture(scope="session")
def gateway_factory():
    running: dict[str, RunningGateway] = {}

    def start(config: GatewayConfig | dict, environ: dict | None = None) -> RunningGateway:
        key = json.dumps(config, sort_keys=True, default=str) if isinstance(config, dict) else str(id(config))
        if key not in running:
            running[key] = start_gateway(config, environ)
        return running[key]

    yield start
    for gateway in running.values():
        gateway.stop()
