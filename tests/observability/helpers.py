"""Helpers for the observability tests: request bodies, a /metrics scrape parsed with
prometheus-client's own parser, and a ``decisions-gateway`` process whose stdout and stderr lines
are all kept (the log tests grep every one of them)."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests import polls

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0
S1 = {"state": "I was charged twice.", "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}
OPENAI = {"input": "I was charged twice.", "questions": [{"type": "predicate", "name": "refund",
                                                          "instructions": "Refund?"}]}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def decide(url: str, model: str = "jev", key: str | None = None, path: str = "/v1/systemone",
           headers: dict[str, str] | None = None, body: dict | None = None) -> httpx.Response:
    payload = {**(body or (S1 if "systemone" in path else OPENAI)), "model": model}
    return httpx.post(url + path, json=payload, headers={**(bearer(key) if key else {}), **(headers or {})},
                      timeout=30)


class Scrape:
    """One ``/metrics`` answer: its text and every sample as (name, labels, value)."""

    def __init__(self, text: str):
        self.text = text
        self.samples: list[tuple[str, dict[str, str], float]] = [
            (s.name, dict(s.labels), s.value) for family in text_string_to_metric_families(text) for s in family.samples]

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples named ``name`` whose labels include ``labels``."""
        return sum(v for n, got, v in self.samples if n == name and all(got.get(k) == w for k, w in labels.items()))

    def labels(self, name: str, label: str) -> set[str]:
        return {got[label] for n, got, _ in self.samples if n == name and label in got}


def scrape(url: str, key: str | None = None) -> Scrape:
    resp = httpx.get(url + "/metrics", headers=bearer(key) if key else None, timeout=10)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain")
    return Scrape(resp.text)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class GatewayProcess:
    """``python -m gateway.cli`` with a config written to ``folder``; every line it writes is kept."""

    def __init__(self, folder: Path, config: dict, *args: str, env: dict[str, str] | None = None):
        path = folder / "config.yaml"
        path.write_text(yaml.safe_dump(config))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", "--config", str(path), "--host", "127.0.0.1",
             "--port", str(self.port), *args], cwd=ROOT, text=True, env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue()
        self._pumps = [threading.Thread(target=self._pump, args=(stream, kept), daemon=True)
                       for stream, kept in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr))]
        for pump in self._pumps:
            pump.start()

    def _pump(self, stream: Any, kept: list[str]) -> None:
        for line in stream:
            kept.append(line.rstrip("\n"))
            self._lines.put(line)

    @property
    def lines(self) -> list[str]:
        return self.stdout + self.stderr

    def wait_ready(self) -> GatewayProcess:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"the gateway exited: {self.lines}"
            try:
                if polls.get(self.url + "/health/liveliness", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"the gateway never answered: {self.lines}")

    def wait_line(self, pattern: str, timeout: float = 20.0) -> re.Match:
        deadline = time.monotonic() + timeout
        while True:
            for line in self.lines:
                found = re.search(pattern, line)
                if found:
                    return found
            if time.monotonic() > deadline:
                raise AssertionError(f"no line matching {pattern!r}: {self.lines}")
            try:
                self._lines.get(timeout=0.2)
            except queue.Empty:
                pass

    def stop(self) -> int:
        """SIGTERM, as an orchestrator stops it; every line it wrote is in ``lines`` after."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        for pump in self._pumps:
            pump.join(timeout=5)
        return self.proc.returncode


def typesafe_entry(name: str, api_key: str, api_base: str, **params: Any) -> dict:
    return {"model_name": name, "litellm_params": {"model": "typesafe/jev-latest", "api_key": api_key,
                                                   "api_base": api_base, "timeout": 10, **params}}
