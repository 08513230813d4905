"""LiteLLM's own Python ``Client`` and its ``lite`` CLI against a running gateway (real HTTP): models list
and info, model groups info, keys list / generate / info / update / delete, teams list and list_v2, and
``lite version``. LiteLLM is not a dependency of this project: it runs as a subprocess in a venv of its own that `make test`
installs (``.venv/litellm``, or ``DECISIONS_GATEWAY_TEST_LITELLM_VENV``); without it the tests skip, saying so.
``HOME`` points nowhere so that the client uses no key stored by an earlier ``lite login``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

MASTER = "sk-master-litellm-client-0123456789"
ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("DECISIONS_GATEWAY_TEST_LITELLM_VENV", ROOT / ".venv" / "litellm"))
PYTHON = VENV / "bin" / "python"
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_PROXY": "127.0.0.1", "HOME": "/nonexistent"}

# Runs in LiteLLM's venv: argv[1] the gateway's URL, argv[2] the master key, argv[3] a team id; prints JSON.
SCRIPT = r'''
import json, sys
from litellm.proxy.client import Client

url, master, team_id = sys.argv[1:4]
client = Client(base_url=url, api_key=master)
out = {}
out["models"] = [m["id"] for m in client.models.list()]
out["model_info"] = client.models.info()
out["model_get"] = client.models.get(model_name="jev")["model_name"]
out["groups"] = client.model_groups.info()
made = client.keys.generate(models=["jev"], key_alias="from-litellm", duration="1h", spend=0.5, team_id=team_id)
out["generated"] = {k: made.get(k) for k in ("key_alias", "models", "spend", "team_id", "expires", "token")}
key = made["key"]
out["key_is_sk"] = key.startswith("sk-")
out["listed"] = client.keys.list(return_full_object=True, size=100)
out["info"] = client.keys.info(key)
out["updated"] = client.keys.update(key=key, key_alias="renamed-by-litellm", spend=0)
out["teams"] = client.teams.list()
out["teams_v2"] = client.teams.list_v2(page=1, page_size=10)
scoped = Client(base_url=url, api_key=key)
out["scoped_groups"] = [g["model_group"] for g in scoped.model_groups.info()]
out["scoped_teams"] = [t["team_id"] for t in scoped.teams.list_v2()["teams"]]
out["deleted"] = client.keys.delete(key_aliases=["renamed-by-litellm"])
out["user_id"] = None
try:
    client.keys.generate(user_id="someone")
except Exception as exc:
    out["user_id"] = [exc.response.status_code, exc.response.json()]
print(json.dumps(out, default=str))
'''


def litellm_available() -> str | None:
    """Why LiteLLM's client cannot run here, or None."""
    if not PYTHON.exists():
        return f"LiteLLM's venv is absent ({VENV}); make it with: python3 -m venv {VENV} && {VENV}/bin/pip install " \
               "litellm==1.110.2"
    probe = subprocess.run([str(PYTHON), "-c", "from litellm.proxy.client import Client"], env=ENV,
                           capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        return f"LiteLLM's client does not import in {VENV}: {probe.stderr.strip().splitlines()[-1:]}"
    return None


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    why = litellm_available()
    if why:
        pytest.skip(why)
    from tests.conftest import start_gateway

    db = tmp_path_factory.mktemp("litellm-client") / "gateway.db"
    params = {"model": "typesafe/jev-latest", "api_key": "ts-k", "api_base": "http://127.0.0.1:9/v1"}
    running = start_gateway({
        "model_list": [{"model_name": "jev", "litellm_params": params},
                       {"model_name": "other", "litellm_params": params}],
        "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"}})
    yield running
    running.stop()


def test_litellm_client_drives_the_admin_api(gateway):
    import httpx

    team = httpx.post(gateway.url + "/team/new", json={"team_alias": "litellm-team", "models": ["jev"]},
                      headers={"Authorization": f"Bearer {MASTER}"}, timeout=30).json()["team_id"]
    run = subprocess.run([str(PYTHON), "-c", SCRIPT, gateway.url, MASTER, team], env=ENV, capture_output=True,
                         text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-4000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert MASTER not in run.stdout + run.stderr
    assert out["models"] == ["jev", "other"]
    assert [m["model_name"] for m in out["model_info"]] == ["jev", "other"] and out["model_get"] == "jev"
    assert [g["model_group"] for g in out["groups"]] == ["jev", "other"]
    generated = out["generated"]
    assert out["key_is_sk"] and generated["key_alias"] == "from-litellm" and generated["spend"] == 0.5
    assert generated["models"] == ["jev"] and generated["team_id"] == team and generated["expires"]
    assert [k["key_alias"] for k in out["listed"]["keys"]] == ["from-litellm"]
    assert out["info"]["info"]["key_alias"] == "from-litellm" and out["info"]["key"] == generated["token"]
    assert out["updated"]["key_alias"] == "renamed-by-litellm" and out["updated"]["spend"] == 0
    assert [t["team_id"] for t in out["teams"]] == [team]
    assert out["teams_v2"]["total"] == 1 and out["teams_v2"]["teams"][0]["keys_count"] == 1
    assert out["scoped_groups"] == ["jev"] and out["scoped_teams"] == [team]
    assert out["deleted"] == {"deleted_keys": [generated["token"]]}
    status, body = out["user_id"]
    assert status == 404 and body["error"]["param"] == "user_id" and "names no user" in body["error"]["message"]


def test_lite_version_shows_the_server_version(gateway):
    from gateway import __version__

    lite = VENV / "bin" / "lite"
    if not lite.exists():
        pytest.skip(f"LiteLLM's lite CLI is absent from {VENV}")
    probe = subprocess.run([str(lite), "--help"], env=ENV, capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        pytest.skip(f"LiteLLM's lite CLI does not start (install litellm[cli]==1.110.2 in {VENV}): "
                    f"{probe.stderr.strip().splitlines()[-1:]}")
    run = subprocess.run([str(lite), "--base-url", gateway.url, "--api-key", MASTER, "version"], env=ENV,
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-4000:]
    assert f"Server Version: {__version__}" in run.stdout and "(unavailable)" not in run.stdout, run.stdout
    assert MASTER not in run.stdout + run.stderr


def lite(gateway, key: str, *args: str) -> subprocess.CompletedProcess:
    """LiteLLM's ``lite`` CLI against the gateway with ``key``; skips when the CLI is absent."""
    binary = VENV / "bin" / "lite"
    if not binary.exists():
        pytest.skip(f"LiteLLM's lite CLI is absent from {VENV}")
    return subprocess.run([str(binary), "--base-url", gateway.url, "--api-key", key, *args],
                          env={**ENV, "COLUMNS": "250"}, capture_output=True, text=True, timeout=180)  # rich: no …


def test_lite_cli_manages_users_keys_and_teams(gateway):
    import httpx

    team = httpx.post(gateway.url + "/team/new", json={"team_alias": "cli-team"},
                      headers={"Authorization": f"Bearer {MASTER}"}, timeout=30).json()["team_id"]
    made = lite(gateway, MASTER, "users", "create", "--email", "cli@example.com", "--role", "internal_user",
                "--alias", "Cli", "--team", team, "--max-budget", "3")
    assert made.returncode == 0, made.stderr[-4000:]
    user = json.loads(made.stdout)
    assert user["user_email"] == "cli@example.com" and user["user_role"] == "internal_user"
    assert user["teams"] == [team] and user["max_budget"] == 3 and user["key"].startswith("sk-")
    listed = lite(gateway, MASTER, "users", "list")
    assert listed.returncode == 0, listed.stderr[-4000:]
    assert user["user_id"] in listed.stdout and "cli@example.com" in listed.stdout and team in listed.stdout
    got = lite(gateway, MASTER, "users", "get", "--id", user["user_id"])
    assert got.returncode == 0 and json.loads(got.stdout)["user_info"]["user_alias"] == "Cli"
    own = lite(gateway, user["key"], "users", "get")  # the user's own key, no id: itself
    assert own.returncode == 0 and json.loads(own.stdout)["user_id"] == user["user_id"]
    generated = lite(gateway, MASTER, "keys", "generate", "--key-alias", "cli-made", "--models", "jev")
    assert generated.returncode == 0, generated.stderr[-4000:]
    keys = lite(gateway, MASTER, "keys", "list")
    assert keys.returncode == 0 and "cli-made" in keys.stdout
    assert lite(gateway, MASTER, "keys", "delete", "--key-aliases", "cli-made").returncode == 0
    teams = lite(gateway, MASTER, "teams", "list")  # an internal user's key is refused /team/list, as in LiteLLM
    assert teams.returncode == 0 and "cli-team" in teams.stdout, teams.stderr[-4000:]
    deleted = lite(gateway, MASTER, "users", "delete", user["user_id"])
    assert deleted.returncode == 0, deleted.stderr[-4000:]
    gone = httpx.get(gateway.url + "/user/info", params={"user_id": user["user_id"]},
                     headers={"Authorization": f"Bearer {MASTER}"}, timeout=30)
    assert gone.status_code == 404
    for run in (made, listed, got, own, generated, keys, teams, deleted):
        assert MASTER not in run.stdout + run.stderr
