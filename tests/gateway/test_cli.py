"""The CLI in a subprocess: --version, --help, a real start, a bad config, several workers."""

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

import httpx
import pytest

from gateway import __version__
from tests import polls
from tests.shared_state.conftest import wait_for

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0


def cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gateway.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, **kw)


def _sigint_as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Running:
    """A gateway process whose stdout lines are collected in the background."""

    def __init__(self, *args: str, env: dict | None = None):
        # SIGINT as a terminal's foreground command has it: a suite run as a background job (CI's runner, a
        # shell's `&`) hands its children SIGINT ignored, and a process that ignores Ctrl-C while it starts
        # never stops. The product is not asked to override that choice; the test makes the user's case.
        self.proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", *args], cwd=ROOT, text=True, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=_sigint_as_in_a_terminal)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.pump = threading.Thread(target=self._pump, daemon=True)  # ends when the process's output does
        self.pump.start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, pattern: str) -> re.Match:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            match = re.search(pattern, line)
            if match:
                return match
        raise AssertionError(f"no line matching {pattern!r}; output so far: {self.seen}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def write_config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text("""
model_list:
  - model_name: jev
    litellm_params: {model: typesafe/jev-latest, api_key: os.environ/CLI_TEST_TS_KEY, api_base: "http://127.0.0.1:9"}
  - model_name: luna
    litellm_params: {model: openai/gpt-6-luna, api_key: sk-x}
  - model_name: luna
    litellm_params: {model: openai/gpt-6-luna, api_key: sk-y}
""")
    return path


def test_version():
    result = cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"decisions-gateway {__version__}"


def test_help_names_the_options_and_the_backend_subcommand():
    result = cli("--help")
    assert result.returncode == 0
    for word in ("--config", "--host", "--port", "--workers", "--version", "backend", "4000"):
        assert word in result.stdout


def test_a_real_start_prints_where_it_listens_and_the_model_count(tmp_path):
    config = write_config(tmp_path)
    # a data directory of its own: the workers' one is shared by every gateway of the run (one SQLite file)
    running = Running("--config", str(config), "--host", "127.0.0.1", "--port", "0",
                      env={**os.environ, "CLI_TEST_TS_KEY": "k", "DECISIONS_GATEWAY_DATA_DIR": str(tmp_path / "data")})
    try:
        loaded = running.wait_for(r"loaded (\d+) models \((\d+) deployments\)")
        assert loaded.groups() == ("2", "3")
        running.wait_for(r"no master key .*: every route is open")
        port = int(running.wait_for(r"listening on http://127\.0\.0\.1:(\d+)$").group(1))
        # It listens: it answers at once. Ready is what its checks say, each within 0.5 s (a SELECT 1 on
        # the database, ...), which a loaded machine can miss: probe it as a load balancer would.
        try:
            ready = wait_for(lambda: (r := httpx.get(f"http://127.0.0.1:{port}/health/readiness", timeout=30))
                             .status_code == 200 and r, START_TIMEOUT_S, "ready after it said where it listens")
            assert ready.json()["models"] == 2
            models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=30).json()["data"]
        except httpx.TransportError as err:  # say what the process did
            running.stop()
            rest = [running.lines.get() for _ in range(running.lines.qsize())]
            raise AssertionError(f"{err!r} after 'listening on' (exit {running.proc.returncode}); "
                                 f"output: {running.seen + rest}") from err
        assert [m["id"] for m in models] == ["jev", "luna"]
    finally:
        running.stop()


@pytest.mark.parametrize("yaml_text, words", [
    ("model_list:\n  - model_name: x\n    litellm_params: {model: nowhere/m}\n", "unknown provider 'nowhere'"),
    ("model_list:\n  - model_name: x\n    litellm_params: {model: typesafe/j, api_key: os.environ/CLI_UNSET_VAR}\n",
     "environment variable CLI_UNSET_VAR is not set"),
    ("model_list: []\nrouter_setting: {}\n", "router_setting: unknown top-level key; did you mean 'router_settings'"),
])
def test_a_bad_config_fails_at_start_with_a_message(tmp_path, yaml_text, words):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml_text)
    result = cli("--config", str(path))
    assert result.returncode == 2
    assert "config error" in result.stderr and words in result.stderr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_several_workers_serve_through_the_app_factory(tmp_path):
    config = write_config(tmp_path)
    port = free_port()
    running = Running("--config", str(config), "--host", "127.0.0.1", "--port", str(port), "--workers", "2",
                      "--log-level", "warning", env={**os.environ, "CLI_TEST_TS_KEY": "k"})
    try:
        running.wait_for(rf"listening on http://127\.0\.0\.1:{port} with 2 workers")
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                resp = polls.get(f"http://127.0.0.1:{port}/v1/models", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, f"workers never answered: {running.seen}"
                time.sleep(0.2)
        assert resp.status_code == 200 and [m["id"] for m in resp.json()["data"]] == ["jev", "luna"]
    finally:
        running.stop()


def test_the_backend_subcommand_delegates_to_the_backend_cli():
    result = cli("backend", "--help")
    assert result.returncode == 0
    assert "decisions-gateway backend" in result.stdout and "--model" in result.stdout


def _interrupted(running: Running) -> list[str]:
    """SIGINT (a terminal's Ctrl-C, to the whole group); every line the process printed, stderr included."""
    os.killpg(running.proc.pid, signal.SIGINT)
    try:
        status = running.proc.wait(timeout=START_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        running.stop()
        raise AssertionError(f"still running {START_TIMEOUT_S:g} s after Ctrl-C; output: {running.seen}") from None
    running.pump.join(timeout=START_TIMEOUT_S)
    lines = running.seen + [running.lines.get() for _ in range(running.lines.qsize())]
    assert status == 130, f"exit status {status}; output: {lines}"
    return lines


@pytest.mark.parametrize("when", ["listening", "starting"])
def test_ctrl_c_ends_it_with_130_and_json_lines_only(tmp_path, when):
    """Ctrl-C once it listens (uvicorn's graceful shutdown, then its re-raised KeyboardInterrupt) and while
    it starts (the signal lands in imports, config or the app's startup): no traceback, only JSON lines."""
    import json

    running = Running("--config", str(write_config(tmp_path)), "--host", "127.0.0.1", "--port", "0",
                      "--log-format", "json",
                      env={**os.environ, "CLI_TEST_TS_KEY": "k", "DECISIONS_GATEWAY_DATA_DIR": str(tmp_path / "data")})
    try:
        running.wait_for("listening on" if when == "listening" else "loaded 2 models")
        lines = _interrupted(running)
    finally:
        running.stop()
    assert not any("Traceback" in line or "KeyboardInterrupt" in line for line in lines), lines
    for line in lines:
        assert isinstance(json.loads(line), dict), line
