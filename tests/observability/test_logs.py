"""Logs: one line per request, start-up, reload and error lines in the chosen format, and no key in
any line a gateway process writes, whatever the callers and upstreams send."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import time

import httpx
import pytest

from gateway.observability import logs
from tests import polls
from tests.fakes.typesafe import FakeTypeSafe
from tests.observability.helpers import ROOT, S1, GatewayProcess, bearer, decide, free_port, typesafe_entry

MASTER = "sk-master-logs-0123456789abcdef"
UPSTREAM_KEY = "ts-logs-upstream-key-0001"
SALT = "salt-logs-0123456789abcdefghijklmnop"
REQUESTS = 300  # ~500 bytes of log a request: more than twice what a pipe holds (64 KiB)
WRONG_KEYS = ("sk-wrong-0123456789abcdefghij", "not-even-a-key-0123456789")


@pytest.fixture(scope="module")
def upstream():
    with FakeTypeSafe(UPSTREAM_KEY) as fake:
        yield fake


def admin(url: str, path: str, body: dict) -> dict:
    r = httpx.post(url + path, json=body, headers=bearer(MASTER), timeout=20)
    assert r.status_code == 200, r.text
    return r.json()


def config(upstream, tmp_path) -> dict:
    return {"model_list": [typesafe_entry("jev", UPSTREAM_KEY, upstream.url),
                           typesafe_entry("luna", UPSTREAM_KEY, upstream.url),
                           typesafe_entry("down", UPSTREAM_KEY, "http://127.0.0.1:9")],
            "general_settings": {"master_key": MASTER, "salt_key": SALT,
                                 "database_url": f"sqlite:///{tmp_path / 'gateway.db'}"},
            "router_settings": {"num_retries": 0}}


def drive(url: str, upstream) -> tuple[list[str], dict[str, httpx.Response]]:
    """Ok and error paths with every kind of key; the keys made and each answer by request id."""
    team = admin(url, "/team/new", {"team_alias": "logs-team"})["team_id"]
    alice = admin(url, "/key/generate", {"key_alias": "logs-alice", "team_id": team, "models": ["jev", "down"]})["key"]
    limited = admin(url, "/key/generate", {"key_alias": "logs-limited", "rpm_limit": 1})["key"]
    answers = [
        decide(url, key=MASTER),
        decide(url, key=alice),
        decide(url, key=alice, path="/v1/decisions"),
        httpx.post(url + "/v1/systemone", json={**S1, "model": "jev"}, headers={"x-api-key": alice}, timeout=20),
        decide(url, model="luna", key=alice),  # 403: not this key's model
        decide(url, model="no-such-model", key=alice),  # 400
        decide(url, model="down", key=alice),  # 502: the upstream cannot be reached
        decide(url, key=limited), decide(url, key=limited),  # 200, then 429
        *(decide(url, key=wrong) for wrong in WRONG_KEYS),  # 401
        decide(url),  # 401: no key
    ]
    upstream.echo_key_next(401, json={"detail": {"message": "Invalid key {key}", "error_type": "auth"}})
    answers.append(decide(url, key=alice))  # the upstream repeats its own key in its error
    httpx.get(url + "/key/info", params={"key": alice}, headers=bearer(MASTER), timeout=20)
    httpx.get(url + "/metrics", headers=bearer(alice), timeout=20)
    assert httpx.post(url + "/config/reload", headers=bearer(MASTER), timeout=30).status_code == 200
    by_id = {r.headers["x-request-id"]: r for r in answers}
    assert sorted(r.status_code for r in answers) == [200, 200, 200, 200, 200, 400, 401, 401, 401, 401, 403, 429, 502]
    return [alice, limited], by_id


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_every_line_is_in_the_format_with_one_line_per_request_and_no_key_anywhere(fmt, upstream, tmp_path):
    gateway = GatewayProcess(tmp_path, config(upstream, tmp_path), "--log-format", fmt, "--log-level", "info",
                             env={"TYPESAFE_API_KEY": UPSTREAM_KEY})
    try:
        gateway.wait_ready()
        keys, answers = drive(gateway.url, upstream)
    finally:
        gateway.stop()
    lines = gateway.lines
    assert len(lines) > len(answers)
    for secret in (MASTER, UPSTREAM_KEY, SALT, *keys, *(k[3:] for k in keys), *WRONG_KEYS):
        leaked = [line for line in lines if secret in line]
        assert not leaked, f"{secret[:6]}... appears in {leaked}"
    if fmt == "json":
        assert gateway.stdout and not [line for line in gateway.stderr if line.strip()]
        records = [json.loads(line) for line in gateway.stdout]  # every line is one JSON object
        assert all({"time", "level", "logger", "message"} <= set(r) for r in records)
        requests = {r["request_id"]: r for r in records if r["logger"] == "gateway.request"}
        assert len([r for r in records if r["logger"] == "gateway.request"]) == len(requests)  # one line each
        for request_id, response in answers.items():
            line = requests[request_id]
            assert line["status"] == response.status_code and line["route"] == response.request.url.path
            assert line["latency_ms"] >= line["upstream_latency_ms"] >= 0
        first = requests[next(iter(answers))]
        assert first["key_alias"] == "master" and first["model_group"] == "jev" and first["cost"] is not None
        assert first["deployment"] == "typesafe/jev-latest" and first["retries"] == 0 and first["cache_hits"] == 0
        alice = [r for r in requests.values() if r.get("key_alias") == "logs-alice"]
        assert {r["status"] for r in alice} == {200, 400, 401, 403, 502} and {r["team"] for r in alice} == {"logs-team"}
        assert {r["error"] for r in alice if r["status"] != 200} >= {"model_not_allowed", "model_not_found"}
        messages = " ".join(r["message"] for r in records if r["logger"] == "gateway.start")
        assert "loaded 3 models" in messages and "listening on" in messages and "master key is set" in messages
        assert any(r["logger"].startswith("uvicorn") for r in records)
        assert any(r["logger"] == "gateway.reload" and "config reloaded" in r["message"] for r in records)
    else:
        request_lines = [line for line in gateway.stderr if " gateway.request: request " in line]
        for request_id in answers:
            assert len([line for line in request_lines if f"request_id={request_id} " in line]) == 1
        assert any("listening on" in line for line in gateway.stdout)


def test_a_log_output_nobody_reads_does_not_stall_the_requests(upstream, tmp_path):
    """A full pipe blocks the writer thread, never the event loop: the requests keep being answered
    (a writer on the loop would stop it at the first line that does not fit); the lines wait in the
    queue and are written once the pipe is read."""
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps({"model_list": [typesafe_entry("jev", UPSTREAM_KEY, upstream.url)],
                                "general_settings": {"disable_spend_logs": True}}))
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "--config", str(path), "--host", "127.0.0.1",
                             "--port", str(port), "--log-format", "json"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # stdout is never read
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                polls.get(url + "/health/liveliness", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        with httpx.Client(timeout=10) as client:
            statuses = [client.post(url + "/v1/systemone", json={**S1, "model": "jev"}).status_code
                        for _ in range(REQUESTS)]
        assert statuses == [200] * REQUESTS
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    lines = [json.loads(line) for line in out.decode().splitlines()]
    assert len([r for r in lines if r["logger"] == "gateway.request"]) == REQUESTS


def capture(fmt: str) -> io.StringIO:
    out = io.StringIO()
    logs.configure(fmt, "debug", stream=out)
    return out


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_keys_are_redacted_in_messages_and_tracebacks(fmt):
    virtual = "sk-" + "A1b2C3d4" * 5
    logs.protect(["provider-secret-0123456789", "short"])
    out = capture(fmt)
    log = logging.getLogger("tests.redaction")
    try:
        log.warning("key %s and Bearer abc.def-ghi and api_key=plain-0123456789 at postgresql://u:pw123456@db/x",
                    virtual)
        log.info("the provider said: provider-secret-0123456789")
        try:
            raise ValueError(f"Authorization: Bearer {virtual} (provider-secret-0123456789)")
        except ValueError:
            log.exception("an error path")
        log.info("ordinary words stay: the short key and the basic plan")
    finally:
        logs.unconfigure()
    text = out.getvalue()
    for secret in (virtual, virtual[3:], "abc.def-ghi", "plain-0123456789", "pw123456", "provider-secret-0123456789"):
        assert secret not in text
    assert "Traceback" in text and "ValueError" in text and "[redacted]" in text
    assert "ordinary words stay: the short key and the basic plan" in text
    if fmt == "json":
        records = [json.loads(line) for line in text.splitlines()]
        assert [r["level"] for r in records] == ["warning", "info", "error", "info"]
        assert "Traceback" in records[2]["exception"] and records[2]["message"] == "an error path"
