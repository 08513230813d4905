"""A key keeps its promises on the pass-throughs (issue 19 item 1): ``/typesafe/...``, ``/laya`` and
``/bespoke`` need the key's ``allowed_passthrough_routes`` grant, the model the body names must be
among the key's and team's models, and rpm, parallel and budget apply as on ``/v1/systemone``.

A real gateway (master key, SQLite) in front of fake TypeSafe and Laya servers, over HTTP; the
keys are made through the admin API."""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest
from typesafe_sdk import TypeSafeClient

from gateway.admin.cli import keys_main
from gateway.auth.identity import Authenticator
from gateway.db.engine import open_database
from tests.admin_calls import admin_ok
from tests.conftest import start_gateway
from tests.fakes.selfhosted import FakeLaya
from tests.fakes.typesafe import FakeTypeSafe
from tests.minute_windows import Clock, admitted_within_an_rpm_limit
from tests.shared_state.conftest import wait_for

MASTER = "sk-master-passthrough-keys-0123"
UPSTREAM_KEY = "ts-passthrough-upstream-key"
LAYA_KEY = "laya-passthrough-upstream-key"
S1 = {"state": "I was charged twice.", "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}
GRANT = {"allowed_passthrough_routes": ["/typesafe"]}


@pytest.fixture(scope="module")
def upstream():
    with FakeTypeSafe(UPSTREAM_KEY) as fake:
        yield fake


@pytest.fixture(scope="module")
def laya():
    with FakeLaya(LAYA_KEY) as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(upstream, laya, tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TYPESAFE_API_KEY", UPSTREAM_KEY)
        patch.setenv("TYPESAFE_API_BASE", upstream.url)
        patch.setenv("LAYA_API_BASE", laya.url + "/v1")
        patch.setenv("LAYA_API_KEY", LAYA_KEY)
        db = tmp_path_factory.mktemp("passthrough-keys") / "gateway.db"
        entry = lambda name, model: {"model_name": name, "litellm_params": {  # noqa: E731
            "model": model, "api_key": UPSTREAM_KEY, "api_base": upstream.url}}
        running = start_gateway({"model_list": [entry("cheap", "typesafe/jev-latest"),
                                                entry("preview", "typesafe/jev-preview")],
                                 "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"},
                                 "router_settings": {"num_retries": 0}})
    yield running
    running.stop()


def admin(gateway, path: str, body: dict) -> dict:
    return admin_ok(gateway, MASTER, path, body)


def key(gateway, **fields) -> str:
    return admin(gateway, "/key/generate", fields)["key"]


def relay(gateway, key_: str, model: str | None = "jev-preview", path: str = "/typesafe/v1/systemone"):
    body = {**S1, "model": model} if model is not None else S1
    return httpx.post(gateway.url + path, json=body, headers={"Authorization": f"Bearer {key_}"}, timeout=20)


def test_the_issue_key_is_refused_on_the_pass_through_as_on_systemone(gateway, upstream):
    """models ["cheap"], max_budget 0, rpm_limit 1: three calls for jev-preview, none reaches TypeSafe."""
    restricted = key(gateway, models=["cheap"], max_budget=0, rpm_limit=1)
    before = len(upstream.requests)
    for _ in range(3):
        refused = relay(gateway, restricted)
        assert refused.status_code == 403, refused.text
        detail = refused.json()["detail"]
        assert detail["error_type"] == "route_not_allowed" and "allowed_passthrough_routes" in detail["message"]
    granted = key(gateway, models=["cheap"], max_budget=0, rpm_limit=1, **GRANT)
    for _ in range(3):
        refused = relay(gateway, granted)
        assert refused.status_code == 403 and refused.json()["detail"]["error_type"] == "model_not_allowed"
        assert "typesafe/jev-preview" in refused.json()["detail"]["message"]
    assert upstream.requests[before:] == []  # the gateway's TypeSafe key was never spent


def test_the_model_named_must_be_the_keys_by_its_own_name_or_a_group_it_serves(gateway, upstream):
    by_name = key(gateway, models=["typesafe/jev-preview"], **GRANT)
    ok = relay(gateway, by_name)
    assert ok.status_code == 200, ok.text
    assert upstream.last.header("authorization") == f"Bearer {UPSTREAM_KEY}"
    assert relay(gateway, by_name, "jev-latest").status_code == 403
    assert relay(gateway, by_name, None).status_code == 403  # no model: TypeSafe answers with jev-latest
    by_group = key(gateway, models=["cheap"], **GRANT)  # cheap is served by typesafe/jev-latest
    with TypeSafeClient(api_key=by_group, base_url=gateway.url + "/typesafe", compression=False) as client:
        answer = client.system_one(S1["state"], S1["questions"], model="jev-latest")
    assert set(answer.answers) == {"refund"}
    assert relay(gateway, by_group, "jev-preview").status_code == 403


def test_a_team_grant_and_the_team_models_bound_the_key(gateway, upstream):
    team = admin(gateway, "/team/new", {"team_alias": "pt-team", "models": ["preview"], **GRANT})["team_id"]
    member = key(gateway, team_id=team)
    assert relay(gateway, member).status_code == 200  # the team's grant; preview serves jev-preview
    outside = relay(gateway, member, "jev-latest")
    assert outside.status_code == 403  # the team's models leave it out, and the refusal says so
    assert outside.json()["detail"]["message"].startswith("This key's team 'pt-team' may not use model "
                                                          "'typesafe/jev-latest'; the team's models: preview.")
    laya_only = key(gateway, team_id=team, allowed_passthrough_routes=["/laya/v1/systemone"])
    assert relay(gateway, laya_only).status_code == 403  # the key's own list replaces the team's


def test_budget_rpm_and_parallel_limits_apply(gateway, upstream):
    before = len(upstream.requests)
    broke = key(gateway, max_budget=0, **GRANT)
    refused = relay(gateway, broke)
    assert refused.status_code == 400 and "budget" in refused.json()["detail"]["message"].lower()
    assert upstream.requests[before:] == []
    limited = key(gateway, rpm_limit=1, **GRANT)
    calls = []
    for _ in range(3):
        with Clock() as clock:
            response = relay(gateway, limited)
        assert response.status_code in (200, 429), response.text
        calls.append((clock.span, response.status_code == 200))
    assert admitted_within_an_rpm_limit(calls, 1) is None
    assert any(not admitted for _, admitted in calls)
    assert relay(gateway, limited).headers.get("retry-after")
    one_at_a_time = key(gateway, max_parallel_requests=1, **GRANT)
    upstream.hang_next(30.0)
    with httpx.Client(timeout=40) as client:
        first: list[httpx.Response] = []
        worker = threading.Thread(target=lambda: first.append(client.post(
            gateway.url + "/typesafe/v1/systemone", json={**S1, "model": "jev-preview"},
            headers={"Authorization": f"Bearer {one_at_a_time}"})))
        worker.start()
        try:
            wait_for(lambda: upstream.hanging, what="the first call held at the upstream")
            second = relay(gateway, one_at_a_time)
            assert second.status_code == 429 and "max_parallel_requests" in second.json()["detail"]["message"]
        finally:
            upstream.release()
            worker.join(timeout=30)
    assert first and first[0].status_code == 200


def test_other_pass_throughs_need_their_own_grant(gateway, laya):
    typesafe_only = key(gateway, **GRANT)
    refused = relay(gateway, typesafe_only, "english", path="/laya/v1/systemone")
    assert refused.status_code == 403 and refused.json()["detail"]["error_type"] == "route_not_allowed"
    assert relay(gateway, typesafe_only, path="/typesafe/v1/systemone").status_code == 200
    laya_key = key(gateway, allowed_passthrough_routes=["/laya/v1/systemone"], models=["laya/english"])
    ok = relay(gateway, laya_key, "english", path="/laya/v1/systemone")
    assert ok.status_code == 200 and laya.last.header("authorization") == f"Bearer {LAYA_KEY}"
    assert relay(gateway, laya_key, "spanish", path="/laya/v1/systemone").status_code == 403
    unnamed = relay(gateway, laya_key, None, path="/laya/v1/systemone")  # Laya would choose the model itself
    assert unnamed.status_code == 403 and unnamed.json()["detail"]["error_type"] == "model_not_allowed"
    assert relay(gateway, MASTER, "spanish", path="/laya/v1/systemone").status_code == 200  # the master key: all


def test_allowed_routes_limit_the_decision_routes_too(gateway):
    only_openai = key(gateway, allowed_routes=["/v1/decisions"])
    body = {**S1, "model": "cheap"}
    refused = httpx.post(gateway.url + "/v1/systemone", json=body, headers={"Authorization": f"Bearer {only_openai}"},
                         timeout=20)
    assert refused.status_code == 403 and refused.json()["detail"]["error_type"] == "route_not_allowed"
    assert relay(gateway, only_openai).status_code == 403  # nor a pass-through it was not granted



def test_a_restricted_keys_unknown_model_error_lists_only_its_own_models(gateway):
    """Issue 19 item 13: the 400 for an unknown model names the key's models, not every configured one."""
    cheap_only = key(gateway, models=["cheap"])
    for path, body in (("/v1/systemone", {**S1, "model": "nope"}), ("/v1/systemone", S1),
                       ("/v1/decisions", {"input": "x", "model": "nope", "questions": [
                           {"type": "predicate", "name": "refund", "instructions": "Refund?"}]})):
        refused = httpx.post(gateway.url + path, json=body, headers={"Authorization": f"Bearer {cheap_only}"},
                             timeout=20)
        assert refused.status_code in (400, 422), refused.text
        assert "cheap" in refused.text and "preview" not in refused.text
    master = httpx.post(gateway.url + "/v1/systemone", json={**S1, "model": "nope"},
                        headers={"Authorization": f"Bearer {MASTER}"}, timeout=20)
    assert master.status_code == 400 and "cheap" in master.text and "preview" in master.text


def test_the_shell_grants_a_pass_through(tmp_path, capsys):
    """``decisions-gateway keys create --passthrough-routes /typesafe --routes ...`` on the admin CLI."""
    master, db_url = "sk-cli-passthrough-master-0123", f"sqlite:///{tmp_path / 'cli.db'}"
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"model_list": [{"model_name": "cheap", "litellm_params": {
        "model": "typesafe/jev-latest", "api_key": UPSTREAM_KEY}}],
        "general_settings": {"master_key": master, "database_url": db_url}}))
    assert keys_main(["--config", str(config), "create", "--passthrough-routes", "/typesafe, /laya/v1/systemone",
                      "--routes", "/v1/systemone"]) == 0
    made = capsys.readouterr().out.strip()

    async def identity():
        db = await open_database(db_url)
        try:
            return await Authenticator.build({"master_key": master}, db, None).resolve(made)
        finally:
            await db.close()

    grants = asyncio.run(identity()).routes
    assert grants.passthrough == ("/typesafe", "/laya/v1/systemone") and grants.key_routes == ("/v1/systemone",)
    assert grants.allows("/typesafe/v1/systemone", passthrough=True)
    assert not grants.allows("/bespoke/v1/systemone", passthrough=True)
    assert not grants.allows("/v1/decisions", passthrough=False)
