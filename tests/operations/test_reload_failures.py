"""A reload that fails, on real processes (issue 19, item 9): a config file that is not UTF-8 is a 400 on
``POST /config/reload`` naming the file and the error (one process or ``--workers 2``), a log line for SIGHUP;
the running config keeps serving; the supervisor's loop survives it, so the next reload and SIGTERM still
work; and ``POST /config/reload`` answers 200 only once every worker runs the new file."""

from __future__ import annotations

import os
import signal
import subprocess

import httpx

from tests.operations.conftest import GatewayProcess, SlowTypeSafe, auth, body, entry, wait_until, write_config
from tests.operations.test_workers import generations

NOT_UTF8 = b"model_list:\n  - model_name: jev  # caf\xe9\n"


def answers(url: str, model: str) -> int:
    return httpx.post(f"{url}/v1/systemone", json=body(model), headers=auth(), timeout=30).status_code


def reload(url: str) -> httpx.Response:
    return httpx.post(f"{url}/config/reload", headers=auth(), timeout=90)


def assert_refused_naming_the_file(response: httpx.Response, path) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_config" and "running config stays" in error["message"], error
    assert f"{path}: not UTF-8 text: byte {NOT_UTF8.index(0xe9)} is 0xe9" in error["message"], error


def test_one_process_answers_a_non_utf8_file_with_a_400_and_keeps_serving(tmp_path):
    with SlowTypeSafe() as upstream:
        path = write_config(tmp_path / "gateway.yaml", [entry("jev", upstream.url)])
        gateway = GatewayProcess.start(path, tmp_path)
        try:
            path.write_bytes(NOT_UTF8)
            assert_refused_naming_the_file(reload(gateway.url), path)
            assert answers(gateway.url, "jev") == 200
            ready = httpx.get(f"{gateway.url}/health/readiness", headers=auth(), timeout=10).json()
            assert ready["config"]["generation"] == 1 and "not UTF-8" in ready["config"]["last_reload_error"]
            gateway.signal(signal.SIGHUP)
            gateway.wait_for_log("not UTF-8 text")
            write_config(path, [entry("jev", upstream.url), entry("luna", upstream.url)])
            reloaded = reload(gateway.url)
            assert reloaded.status_code == 200 and reloaded.json()["added"] == ["luna"], reloaded.text
        finally:
            gateway.stop()


def test_workers_survive_a_non_utf8_file_reload_together_and_stop_on_sigterm(tmp_path):
    with SlowTypeSafe() as upstream:
        path = write_config(tmp_path / "gateway.yaml", [entry("jev", upstream.url)])
        gateway = GatewayProcess.start(path, tmp_path, "--workers", "2")
        try:
            start = generations(gateway.url)
            path.write_bytes(NOT_UTF8)
            gateway.signal(signal.SIGHUP)  # the parent validates it, logs, and keeps supervising
            log = gateway.wait_for_log("every worker keeps the running config")
            assert f"{path}: not UTF-8 text" in log and "Traceback" not in log, log
            assert_refused_naming_the_file(reload(gateway.url), path)  # whichever worker answers
            assert generations(gateway.url) == start and answers(gateway.url, "jev") == 200

            write_config(path, [entry("jev", upstream.url), entry("luna", upstream.url)])
            reloaded = reload(gateway.url)
            assert reloaded.status_code == 200, reloaded.text
            workers = reloaded.json()["workers"]
            assert sorted(int(pid) for pid in workers) == sorted(start), workers
            assert len(set(workers.values())) == 1 and all(g > 1 for g in workers.values()), workers
            # Once it answered, every worker serves the new group, on new connections.
            now = generations(gateway.url)
            assert now == {pid: workers[str(pid)] for pid in start}, (now, workers)
            assert all(answers(gateway.url, "luna") == 200 for _ in range(6))
        finally:
            gateway.signal(signal.SIGTERM)
            try:
                gateway.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                gateway.stop()
                raise AssertionError(f"SIGTERM did not stop the supervisor:\n{gateway.log()}") from None
    assert gateway.proc.returncode == 0, gateway.log()
    wait_until(gateway.refuses_connections, 10, "the workers to close the socket")


def gone(pid: int) -> bool:
    """Whether ``pid`` has exited (an exited process may linger as a zombie until something reaps it)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_reload_is_not_reported_done_when_the_supervisor_is_gone(tmp_path):
    """The parent killed: the workers still serve, but no worker can tell the others, so POST /config/reload
    is a 503 and none of them reloads (before, the one that answered reloaded and said 200)."""
    with SlowTypeSafe() as upstream:
        path = write_config(tmp_path / "gateway.yaml", [entry("jev", upstream.url)])
        gateway = GatewayProcess.start(path, tmp_path, "--workers", "2")
        workers = list(generations(gateway.url))
        try:
            gateway.proc.kill()
            gateway.proc.wait(timeout=30)
            write_config(path, [entry("jev", upstream.url), entry("luna", upstream.url)])
            refused = reload(gateway.url)
            assert refused.status_code == 503, refused.text
            error = refused.json()["error"]
            assert error["code"] == "reload_incomplete" and "supervisor process is gone" in error["message"], error
            assert generations(gateway.url) == dict.fromkeys(workers, 1)
            assert answers(gateway.url, "jev") == 200 and answers(gateway.url, "luna") == 400
        finally:
            for pid in workers:
                if not gone(pid):
                    os.kill(pid, signal.SIGTERM)
            for pid in workers:
                wait_until(lambda pid=pid: gone(pid), 30, f"worker {pid} to exit")
