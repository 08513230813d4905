"""LiteLLM's own Python ``Client`` and its ``lite`` CLI against a running gateway (real HTTP): models list
and info, model groups info, keys list / generate / info / update / delete, teams list and list_v2, and
users create / list / get / delete, and ``lite version``. LiteLLM is not a dependency of this project: it
runs in a venv of its own that `make test` installs (``.venv/litellm``, or
``DECISIONS_GATEWAY_TEST_LITELLM_VENV``), in one long-lived process (``RUNNER``) for the client and the CLI's
commands, and the ``lite`` console script once in a process of its own; without the venv the tests skip.
``HOME`` points nowhere so that the client uses no key stored by an earlier ``lite login``."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

MASTER = "sk-master-litellm-client-0123456789"
ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("DECISIONS_GATEWAY_TEST_LITELLM_VENV", ROOT / ".venv" / "litellm"))
PYTHON = VENV / "bin" / "python"
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_PROXY": "127.0.0.1", "HOME": "/nonexistent"}

# Runs in LiteLLM's venv (in RUNNER): ``argv`` the gateway's URL, the master key and a team id; sets ``out``.
SCRIPT = r'''
from litellm.proxy.client import Client

url, master, team_id = argv
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
'''

# One process in LiteLLM's venv for the whole module: each line on its stdin is a request, answered by one
# JSON line. ``{"cli": [args]}`` runs LiteLLM's ``lite`` command group (the click group its console script calls)
# through click's CliRunner; ``{"python": code, "argv": [...]}`` runs code and answers its ``out``. Each
# ``lite`` process spends ~2 s of CPU importing LiteLLM before it reads its arguments; here that is paid once.
RUNNER = r'''
import json, sys
from click.testing import CliRunner
from litellm.proxy.client.cli.main import cli  # the click group that the ``lite`` console script runs
import litellm.proxy.client

print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    ask = json.loads(line)
    if "cli" in ask:
        ran = CliRunner().invoke(cli, ask["cli"])
        raised = ran.exception if ran.exception is not None and not isinstance(ran.exception, SystemExit) else None
        answer = {"returncode": ran.exit_code, "stdout": ran.stdout, "stderr": ran.stderr + (repr(raised) if raised else "")}
    else:
        namespace = {"argv": ask["argv"]}
        exec(ask["python"], namespace)
        answer = namespace["out"]
    print(json.dumps(answer, default=str), flush=True)
'''


class LiteLLM:
    """The RUNNER process: ``ask`` sends one request and waits for its answer, with a deadline."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([str(PYTHON), "-c", RUNNER], env={**ENV, "COLUMNS": "250"},  # rich: no …
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")  # the process is gone

    def answer(self, timeout_s: float = 180.0) -> dict:
        try:
            line = self.lines.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError(f"LiteLLM's runner gave no answer within {timeout_s} s") from None
        if not line:
            raise RuntimeError(f"LiteLLM's runner exited: {self.stderr()[-2000:]}")
        return json.loads(line)

    def ask(self, request: dict) -> Any:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self.answer()

    def stderr(self) -> str:
        self.proc.kill()
        assert self.proc.stderr is not None
        return self.proc.stderr.read()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            self.proc.kill()


@pytest.fixture(scope="module")
def litellm():
    """LiteLLM's runner, or a skip saying why it cannot run here."""
    if not PYTHON.exists():
        pytest.skip(f"LiteLLM's venv is absent ({VENV}): `make install` makes it")
    runner = LiteLLM()
    try:
        runner.answer()
    except RuntimeError as exc:
        pytest.skip(f"LiteLLM's CLI and client do not import in {VENV}: {exc}")
    yield runner
    runner.close()


@pytest.fixture(scope="module")
def gateway(litellm, tmp_path_factory):
    from tests.conftest import start_gateway

    db = tmp_path_factory.mktemp("litellm-client") / "gateway.db"
    params = {"model": "typesafe/jev-latest", "api_key": "ts-k", "api_base": "http://127.0.0.1:9/v1"}
    running = start_gateway({
        "model_list": [{"model_name": "jev", "litellm_params": params},
                       {"model_name": "other", "litellm_params": params}],
        "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"}})
    yield running
    running.stop()


def test_litellm_client_drives_the_admin_api(gateway, litellm):
    import httpx

    team = httpx.post(gateway.url + "/team/new", json={"team_alias": "litellm-team", "models": ["jev"]},
                      headers={"Authorization": f"Bearer {MASTER}"}, timeout=30).json()["team_id"]
    out = litellm.ask({"python": SCRIPT, "argv": [gateway.url, MASTER, team]})
    assert MASTER not in json.dumps(out)
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
    """The ``lite`` console script itself, in a process of its own (the other commands run in the runner)."""
    from gateway import __version__

    lite = VENV / "bin" / "lite"
    if not lite.exists():
        pytest.skip(f"LiteLLM's lite CLI is absent from {VENV}")
    run = subprocess.run([str(lite), "--base-url", gateway.url, "--api-key", MASTER, "version"], env=ENV,
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-4000:]
    assert f"Server Version: {__version__}" in run.stdout and "(unavailable)" not in run.stdout, run.stdout
    assert MASTER not in run.stdout + run.stderr


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def lite(gateway, litellm):
    """LiteLLM's ``lite`` command group against the gateway with ``key``."""
    def run(key: str, *args: str) -> Ran:
        return Ran(**litellm.ask({"cli": ["--base-url", gateway.url, "--api-key", key, *args]}))
    return run


def test_lite_cli_manages_users_keys_and_teams(gateway, lite):
    import httpx

    team = httpx.post(gateway.url + "/team/new", json={"team_alias": "cli-team"},
                      headers={"Authorization": f"Bearer {MASTER}"}, timeout=30).json()["team_id"]
    made = lite(MASTER, "users", "create", "--email", "cli@example.com", "--role", "internal_user",
                "--alias", "Cli", "--team", team, "--max-budget", "3")
    assert made.returncode == 0, made.stderr[-4000:]
    user = json.loads(made.stdout)
    assert user["user_email"] == "cli@example.com" and user["user_role"] == "internal_user"
    assert user["teams"] == [team] and user["max_budget"] == 3 and user["key"].startswith("sk-")
    listed = lite(MASTER, "users", "list")
    assert listed.returncode == 0, listed.stderr[-4000:]
    assert user["user_id"] in listed.stdout and "cli@example.com" in listed.stdout and team in listed.stdout
    got = lite(MASTER, "users", "get", "--id", user["user_id"])
    assert got.returncode == 0 and json.loads(got.stdout)["user_info"]["user_alias"] == "Cli"
    own = lite(user["key"], "users", "get")  # the user's own key, no id: itself
    assert own.returncode == 0 and json.loads(own.stdout)["user_id"] == user["user_id"]
    generated = lite(MASTER, "keys", "generate", "--key-alias", "cli-made", "--models", "jev")
    assert generated.returncode == 0, generated.stderr[-4000:]
    keys = lite(MASTER, "keys", "list")
    assert keys.returncode == 0 and "cli-made" in keys.stdout
    assert lite(MASTER, "keys", "delete", "--key-aliases", "cli-made").returncode == 0
    teams = lite(MASTER, "teams", "list")  # an internal user's key is refused /team/list, as in LiteLLM
    assert teams.returncode == 0 and "cli-team" in teams.stdout, teams.stderr[-4000:]
    deleted = lite(MASTER, "users", "delete", user["user_id"])
    assert deleted.returncode == 0, deleted.stderr[-4000:]
    gone = httpx.get(gateway.url + "/user/info", params={"user_id": user["user_id"]},
                     headers={"Authorization": f"Bearer {MASTER}"}, timeout=30)
    assert gone.status_code == 404
    for run in (made, listed, got, own, generated, keys, teams, deleted):
        assert MASTER not in run.stdout + run.stderr
