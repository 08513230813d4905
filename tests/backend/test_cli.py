"""``decisions-gateway backend``: the standalone server as a real process answering real decisions."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from backend.cli import build_parser, main
from tests.backend.conftest import TICKET, yes_no_question

ROOT = Path(__file__).resolve().parents[2]


def test_arguments_and_defaults():
    args = build_parser().parse_args(["--model", "smollm2", "--port", "30001", "--dtype", "bfloat16"])
    assert (args.model, args.port, args.host, args.dtype, args.device) == ("smollm2", 30001, "127.0.0.1", "bfloat16", "auto")
    assert build_parser().parse_args([]).port == 30000


def test_an_unknown_model_exits_2_with_a_message(tmp_path, capsys):
    assert main(["--model", str(tmp_path / "nothing-here")]) == 2
    assert "is neither a folder, a .gguf file nor one of" in capsys.readouterr().err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_standalone_backend_serves_decisions():
    port = free_port()
    # The installed command, `decisions-gateway backend ...`, as the README runs it.
    command = [sys.executable, "-c", "import sys; from gateway.cli import main; sys.exit(main())"]
    proc = subprocess.Popen([*command, "backend", "--model", "default", "--port", str(port)],
                            cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # One client for the polls: httpx.get builds a client (and its TLS context) each call, ~60 ms of CPU
    with httpx.Client(timeout=2) as client:
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 180
            while True:
                assert proc.poll() is None, proc.stderr.read()
                try:
                    health = client.get(f"{url}/health")
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the backend did not start within 180 s"
                    time.sleep(0.1)
            assert health.json()["model"] == "SmolLM2-135M-Instruct" and health.json()["prompt_format_version"] == 1
            resp = client.post(f"{url}/v1/decisions", json={"input": TICKET, "questions": [yes_no_question()]},
                               timeout=120)
            assert resp.status_code == 200 and set(resp.json()["answers"]["refund"]["probabilities"]) == {"yes", "no"}
            assert client.get(f"{url}/v1/models").json()["data"][0]["id"] == "SmolLM2-135M-Instruct"
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            proc.stderr.close()
