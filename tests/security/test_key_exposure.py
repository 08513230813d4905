"""Keys in no response, log line, metric, spend row, data file or upstream request, through a gateway
process with JSON logs: the master key, a virtual key (and the one it is regenerated into), both
provider keys and the salt. The traffic covers success, refusals, wrong keys, upstreams that echo
their key back, the pass-through, the admin API and the spend log; what is then searched is every
answer, every line the gateway wrote, ``/metrics``, every column of every spend row, every file of
the data directory but the salt file, and every request the upstreams received. (tests/admin/
test_security.py checks the admin API's own answers, logs and files; tests/security/
test_upstream_keys.py the redaction of echoed keys.)"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx

from gateway.auth.keys import SALT_FILE
from tests.fakes.openai import FakeOpenAI
from tests.fakes.typesafe import FakeTypeSafe
from tests.reliability.processes import GatewayProcess
from tests.shared_state.conftest import wait_for

MASTER = "sk-master-exposure-7f3a9c1e5b2d4068"
TS_KEY, OA_KEY = "zq7ts-exposure-0123456789abcdef", "zq8sk-exposure-0123456789abcdef"
S1 = {"state": "I was charged twice.", "questions": {"q": {"type": "noul", "instructions": "Billing?"}}}
OAI = {"input": "I was charged twice.", "questions": [{"type": "predicate", "name": "q", "instructions": "Billing?"}]}


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def traffic(gw: GatewayProcess, typesafe: FakeTypeSafe, openai_fake: FakeOpenAI) -> tuple[list[httpx.Response], dict]:
    answers: list[httpx.Response] = []
    with httpx.Client(base_url=gw.url, timeout=20) as client:
        def go(method: str, path: str, **kwargs) -> httpx.Response:
            answers.append(client.request(method, path, **kwargs))
            return answers[-1]

        made = go("POST", "/key/generate", json={"key_alias": "exposed", "models": ["jev", "luna"], "rpm_limit": 100,
                                                  "max_budget": 10.0}, headers=auth(MASTER))
        assert made.status_code == 200, made.text
        key = made.json()["key"]
        for route, body in (("/v1/systemone", S1), ("/v1/decisions", OAI)):
            for model in ("jev", "luna", "nope"):
                go("POST", route, json={**body, "model": model}, headers=auth(key))
            go("POST", route, json={**body, "model": "jev"}, headers=auth(key + "x"))  # a wrong key
            go("POST", route, json={**body, "model": "jev"}, headers={"x-api-key": MASTER[:-1]})
        typesafe.echo_key_next(401, json={"detail": {"message": "bad key {key}", "error_type": "{key}"}},
                               headers={"x-typesafe-request-id": "{key}"})
        go("POST", "/v1/systemone", json={**S1, "model": "jev"}, headers=auth(key))
        openai_fake.echo_key_next(429, json={"error": {"message": "{key} is rate limited", "type": "{key}",
                                                       "code": "{key}"}}, headers={"Retry-After": "{key}"})
        go("POST", "/v1/decisions", json={**OAI, "model": "luna"}, headers=auth(key))
        go("POST", "/typesafe/v1/systemone", json={**S1, "model": "jev-latest"}, headers=auth(MASTER))
        typesafe.echo_key_next(403, json={"detail": "{key} may not"}, headers={"x-request-id": "req-{key}"})
        go("POST", "/typesafe/v1/systemone", json={**S1, "model": "jev-latest"}, headers=auth(MASTER))
        go("GET", "/key/info", headers=auth(key))
        go("GET", "/key/info", params={"key": key}, headers=auth(MASTER))
        go("GET", "/key/list", params={"return_full_object": "true"}, headers=auth(MASTER))
        go("GET", "/spend/logs", params={"api_key": key}, headers=auth(MASTER))
        go("GET", "/global/spend/report", headers=auth(MASTER))
        go("GET", "/health/readiness", headers=auth(MASTER))
        go("GET", "/health/providers", headers=auth(MASTER))
        regenerated = client.post("/key/regenerate", json={"key": key}, headers=auth(MASTER))  # shows the new key
        assert regenerated.status_code == 200, regenerated.text
        new_key = regenerated.json()["key"]
        go("POST", "/v1/systemone", json={**S1, "model": "jev"}, headers=auth(new_key))
        go("POST", "/v1/systemone", json={**S1, "model": "jev"}, headers=auth(key))  # the old one: 401
        go("POST", "/key/block", json={"key": new_key}, headers=auth(MASTER))
        go("POST", "/v1/systemone", json={**S1, "model": "jev"}, headers=auth(new_key))  # blocked: 403
        metrics = go("GET", "/metrics", headers=auth(MASTER))
        assert metrics.status_code == 200 and "decisions_gateway_" in metrics.text
    answers.remove(made)  # the one answer that shows the key it made
    return answers, {"virtual key": key, "regenerated key": new_key}


def spend_rows(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT * FROM spend_logs").fetchall()


def test_no_key_in_any_answer_log_line_metric_spend_row_file_or_upstream_request(tmp_path: Path) -> None:
    db = tmp_path / "gateway.db"
    with FakeTypeSafe(TS_KEY) as typesafe, FakeOpenAI(OA_KEY) as openai_fake:
        config = {"model_list": [
            {"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": TS_KEY,
                                                      "api_base": typesafe.url}},
            {"model_name": "luna", "litellm_params": {"model": "openai/gpt-6-luna", "api_key": OA_KEY,
                                                       "api_base": f"{openai_fake.url}/v1"}}],
            "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"},
            "router_settings": {"num_retries": 0}}
        gw = GatewayProcess(config, tmp_path / "gateway", log_format="json", log_level="debug",
                            env={"TYPESAFE_API_KEY": TS_KEY, "TYPESAFE_API_BASE": typesafe.url})
        gw.start()
        try:
            answers, made = traffic(gw, typesafe, openai_fake)
            wait_for(lambda: len(spend_rows(db)) >= 9, what=lambda: f"the calls' spend rows ({len(spend_rows(db))} of 9)")
        finally:
            gw.stop()
        upstream = typesafe.requests + openai_fake.requests
    rows = spend_rows(db)
    assert len(rows) >= 9, rows  # the calls that reached a model group (and the pass-through) were logged
    log = gw.log_text()
    assert log.count("\n") > 20 and '"request_id"' in log  # the gateway did write its lines
    salt = (gw.data / SALT_FILE).read_text().strip()
    secrets = {"master key": MASTER, "typesafe key": TS_KEY, "openai key": OA_KEY, "salt": salt, **made}
    places = {f"answer {r.request.method} {r.request.url.path} {r.status_code}": r.text + str(r.headers)
              for r in answers}
    places["the gateway's log"] = log
    places["spend rows"] = repr(rows)
    for path in gw.data.rglob("*"):
        if path.is_file() and path.name != SALT_FILE:
            places[f"file {path.name}"] = path.read_bytes().decode("latin-1")
    places["the database"] = db.read_bytes().decode("latin-1")
    for what, secret in secrets.items():
        core = secret.removeprefix("sk-")
        for where, text in places.items():
            assert core not in text, f"the {what} in {where}"
    for rec in upstream:  # upstream requests carry only their own provider's key, in its auth header
        sent = rec.body.decode("latin-1") + repr({k: v for k, v in rec.headers.items() if k != "authorization"})
        own = TS_KEY if rec in typesafe.requests else OA_KEY
        assert rec.header("authorization") == f"Bearer {own}"
        for what, secret in secrets.items():
            assert secret.removeprefix("sk-") not in sent, f"the {what} sent upstream"
