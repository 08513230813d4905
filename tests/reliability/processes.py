"""A gateway in a process of its own (``python -m gateway.cli``), as an operator runs it: its own config
file, data directory (outbox, salt, SQLite file) and port, so it can be ``kill -9``-ed, restarted on the
same data, and its resident memory read from ``/proc``. Its log goes to a file in that folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests import polls
from tests.shared_state.conftest import free_port

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 60.0


class GatewayProcess:
    def __init__(self, config: dict, folder: Path, *, log_format: str = "text", log_level: str = "warning",
                 env: dict[str, str] | None = None) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.data = folder / "data"
        self.config_path = folder / "gateway.yaml"
        self.config_path.write_text(json.dumps(config))  # JSON is YAML
        self.log_path = folder / "gateway.log"
        self.log_format, self.log_level = log_format, log_level
        self.env = env or {}  # more environment (pass-through settings are read from it at start)
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, *, ready_status: int | None = 200) -> GatewayProcess:
        """Start on a new free port and wait until readiness answers ``ready_status`` (any answer: None)."""
        self.port = free_port()
        env = {**os.environ, **self.env, "DECISIONS_GATEWAY_DATA_DIR": str(self.data)}
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", "--config", str(self.config_path), "--host", "127.0.0.1",
             "--port", str(self.port), "--log-level", self.log_level, "--log-format", self.log_format],
            env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the gateway exited ({self.proc.returncode}):\n{self.log_tail()}")
            try:
                status = polls.get(self.url + "/health/readiness", timeout=2).status_code
                if ready_status is None or status == ready_status:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"the gateway did not become ready:\n{self.log_tail()}")

    def kill(self) -> None:
        """``kill -9``: no shutdown, no drain."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM (graceful), then SIGKILL after ``timeout``; the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def rss_bytes(self) -> int:
        """VmRSS of the gateway process, from /proc/<pid>/status."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS line")

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_text()[-chars:]

    def __enter__(self) -> GatewayProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop(timeout=10)
