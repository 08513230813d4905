"""The admin CLI never writes to a database the gateway does not read (issue 20 item 4).

A gateway process is started from the repository's folder on a config elsewhere whose
``database_url`` is ``sqlite:///gateway.db``: the file beside the config. The CLI, as a subprocess
from a third folder, makes keys through the gateway's admin API (``--url``) and straight on the
config's database (``--config``); each key then authenticates a decision call on that gateway.
Without either, the CLI refuses to guess."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from gateway.db.engine import sqlite_beside
from tests.fakes.typesafe import FakeTypeSafe
from tests.gateway.test_cli import ROOT, Running
from tests.gateway.test_cli_imports import NEVER, imported, loaded

MASTER = "sk-master-cli-remote-0123456789"
UPSTREAM_KEY = "ts-cli-remote-upstream-key"
S1 = {"model": "jev", "state": "I was charged twice.",
      "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}
CLIENT_ENV = ("DECISIONS_GATEWAY_URL", "DECISIONS_GATEWAY_API_KEY", "LITELLM_PROXY_URL", "LITELLM_PROXY_API_KEY")


class Setup:
    def __init__(self, folder: Path, url: str, fake: FakeTypeSafe):
        self.folder, self.url, self.fake = folder, url, fake
        self.elsewhere = folder / "elsewhere"  # the CLI's working directory: neither the config's nor the gateway's
        self.elsewhere.mkdir(exist_ok=True)

    def cli(self, *argv: str, **env: str) -> subprocess.CompletedProcess:
        clean = {k: v for k, v in os.environ.items() if k not in CLIENT_ENV}
        clean["DECISIONS_GATEWAY_DATA_DIR"] = str(self.folder / "cli-data")  # not the gateway's: no shared default
        return subprocess.run([sys.executable, "-m", "gateway.cli", *argv], cwd=self.elsewhere, text=True,
                              capture_output=True, timeout=120, env={**clean, **env}, check=False)

    def decide(self, key: str) -> httpx.Response:
        return httpx.post(self.url + "/v1/systemone", json=S1, headers={"Authorization": f"Bearer {key}"},
                          timeout=30)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("cli-remote")
    (folder / "conf").mkdir()
    (folder / "conf" / "config.yaml").write_text(f"""
model_list:
  - model_name: jev
    litellm_params: {{model: typesafe/jev-latest, api_key: {UPSTREAM_KEY}, api_base: "FAKE"}}
general_settings:
  master_key: {MASTER}
  salt_key: a-salt-for-the-cli-remote-tests-0123456789
  database_url: sqlite:///gateway.db
router_settings: {{num_retries: 0}}
""")
    with FakeTypeSafe(UPSTREAM_KEY) as fake:
        config = folder / "conf" / "config.yaml"
        config.write_text(config.read_text().replace("FAKE", fake.url))
        running = Running("--config", str(config), "--host", "127.0.0.1", "--port", "0", "--log-level", "warning",
                          env={**os.environ, "DECISIONS_GATEWAY_DATA_DIR": str(folder / "gateway-data")})
        try:
            port = int(running.wait_for(r"listening on http://127\.0\.0\.1:(\d+)$").group(1))
            yield Setup(folder, f"http://127.0.0.1:{port}", fake)
        finally:
            running.stop()


def made_key(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    key = result.stdout.strip()
    assert key.startswith("sk-") and "shown this once" in result.stderr
    return key


def test_keys_made_over_the_admin_api_and_on_the_configs_database_both_authenticate(setup: Setup):
    team = setup.cli("teams", "create", "--alias", "support", "--url", setup.url, "--api-key", MASTER)
    assert team.returncode == 0 and "(support)" in team.stdout, team.stderr
    remote = made_key(setup.cli("keys", "create", "--alias", "over-http", "--team", "support", "--models", "jev",
                                "--url", setup.url, DECISIONS_GATEWAY_API_KEY=MASTER))
    # --config relative to the CLI's folder; the config's sqlite:///gateway.db is the file beside it
    direct = made_key(setup.cli("keys", "create", "--alias", "on-the-db", "--config", "../conf/config.yaml"))
    assert (setup.folder / "conf" / "gateway.db").is_file()
    assert not (ROOT / "gateway.db").exists() and not (setup.elsewhere / "gateway.db").exists()
    listed = [setup.cli("keys", "list", "--url", setup.url, LITELLM_PROXY_API_KEY=MASTER),
              setup.cli("keys", "list", "--config", str(setup.folder / "conf" / "config.yaml"))]
    assert listed[0].returncode == listed[1].returncode == 0
    assert listed[0].stdout == listed[1].stdout and listed[0].stderr == listed[1].stderr
    assert "over-http" in listed[0].stdout and "on-the-db" in listed[0].stdout
    updated = [setup.cli("keys", "update", "over-http", "--rpm", "70", "--url", setup.url, "--api-key", MASTER),
               setup.cli("keys", "update", "on-the-db", "--tpm", "9000", "--config", "../conf/config.yaml")]
    assert [u.returncode for u in updated] == [0, 0] and "updated" in updated[0].stdout, updated[0].stderr
    for alias, field, value in (("over-http", "rpm_limit", 70), ("on-the-db", "tpm_limit", 9000)):
        info = [setup.cli("keys", "info", alias, "--url", setup.url, "--api-key", MASTER),
                setup.cli("keys", "info", alias, "--config", "../conf/config.yaml")]
        assert info[0].returncode == info[1].returncode == 0 and info[0].stdout == info[1].stdout
        assert json.loads(info[0].stdout)[field] == value
    for key in (remote, direct):
        answer = setup.decide(key)
        assert answer.status_code == 200, answer.text
        assert key not in listed[0].stdout + listed[0].stderr
    blocked = setup.cli("keys", "block", "over-http", "--url", setup.url, "--api-key", MASTER)
    assert blocked.returncode == 0 and "blocked" in blocked.stdout and MASTER not in blocked.stdout + blocked.stderr
    assert setup.decide(remote).status_code == 403
    teams = [setup.cli("teams", "list", "--url", setup.url, "--api-key", MASTER),
             setup.cli("teams", "list", "--config", str(setup.folder / "conf" / "config.yaml"))]
    assert teams[0].stdout == teams[1].stdout and "support" in teams[0].stdout
    report = setup.cli("spend", "report", "--group-by", "key", "--url", setup.url, "--api-key", MASTER)
    assert report.returncode == 0 and "api_key" in report.stdout, report.stderr
    deleted = setup.cli("keys", "delete", "on-the-db", "--url", setup.url, "--api-key", MASTER)
    assert deleted.returncode == 0 and "deleted key" in deleted.stdout
    assert setup.decide(direct).status_code == 401


@pytest.mark.parametrize(("argv", "words"), [
    (["keys", "block", "0" * 64], "No such key"),
    (["keys", "unblock", "nobody"], "No such key"),
    (["keys", "update", "0" * 64, "--rpm", "1"], "No such key"),
    (["keys", "create", "--models", "nowhere"], "models[0]: 'nowhere' is not a model of this gateway"),
    (["keys", "create", "--alias", "over-http-dup"], None),
])
def test_the_gateways_refusals_are_its_message_and_status_1(setup: Setup, argv: list[str], words: str | None):
    result = setup.cli(*argv, "--url", setup.url, "--api-key", MASTER)
    if words is None:  # made: the same alias again is refused by the gateway
        assert result.returncode == 0
        result = setup.cli(*argv, "--url", setup.url, "--api-key", MASTER)
        words = "key_alias is in use"
    assert result.returncode == 1 and words in result.stderr, result.stderr
    assert "the gateway answered 4" in result.stderr or "nobody" in argv  # an alias is looked up in /key/list
    assert "Traceback" not in result.stderr and MASTER not in result.stdout + result.stderr


def test_a_wrong_key_or_an_unreachable_gateway_is_one_line_without_the_key(setup: Setup):
    wrong = "sk-not-the-master-key-0123456789"
    result = setup.cli("keys", "list", "--url", setup.url, "--api-key", wrong)
    assert result.returncode == 1 and "the gateway answered 401" in result.stderr
    assert wrong not in result.stdout + result.stderr and "Traceback" not in result.stderr
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    result = setup.cli("keys", "list", "--url", closed, "--api-key", MASTER)
    assert result.returncode == 1 and f"cannot reach the gateway at {closed}" in result.stderr
    assert MASTER not in result.stderr and "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("argv", [["keys", "create", "--alias", "x"], ["keys", "list"], ["teams", "list"],
                                  ["spend", "report"]])
def test_without_url_or_config_nothing_is_guessed(setup: Setup, argv: list[str]):
    result = setup.cli(*argv)
    assert result.returncode == 2 and "give --config PATH" in result.stderr and "--url URL" in result.stderr
    assert not (setup.folder / "cli-data" / "decisions-gateway.db").exists()


def test_url_needs_a_key_and_not_a_config_too(setup: Setup):
    result = setup.cli("keys", "list", "--url", setup.url)
    assert result.returncode == 2 and "--url needs --api-key" in result.stderr
    result = setup.cli("keys", "list", "--url", setup.url, "--api-key", MASTER, "--config", "x.yaml")
    assert result.returncode == 2 and "not both" in result.stderr
    result = setup.cli("keys", "list", LITELLM_PROXY_URL=setup.url, LITELLM_PROXY_API_KEY=MASTER)
    assert result.returncode == 0, result.stderr  # LiteLLM's CLI's variables


@pytest.mark.parametrize("argv", [["keys", "list"], ["keys", "create", "--alias", "x"], ["spend", "report"]])
def test_the_remote_mode_opens_no_database(tmp_path: Path, argv: list[str]):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    status, modules = imported(tmp_path, *argv, "--url", closed, "--api-key", MASTER)
    assert status == 1 and "gateway.admin.remote" in modules
    assert loaded(modules, (*NEVER, "sqlalchemy", "alembic", "gateway.db", "gateway.admin.service")) == []


@pytest.mark.parametrize(("url", "expected"), [
    ("sqlite:///x.db", "sqlite:////cfg/x.db"),
    ("sqlite:///data/x.db?mode=rwc", "sqlite:////cfg/data/x.db?mode=rwc"),
    ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite:////cfg/x.db"),
    ("sqlite:////var/lib/x.db", "sqlite:////var/lib/x.db"),
    ("sqlite:///~/x.db", "sqlite:///~/x.db"),
    ("sqlite://", "sqlite://"),
    ("sqlite:///:memory:", "sqlite:///:memory:"),
    ("postgresql://u:p%40ss@h/db", "postgresql://u:p%40ss@h/db"),
])
def test_a_relative_sqlite_path_is_beside_the_config(url: str, expected: str):
    assert sqlite_beside(url, Path("/cfg")) == expected


def test_an_update_that_changes_nothing_is_a_usage_error(setup: Setup):
    result = setup.cli("keys", "update", "0" * 64, "--url", setup.url, "--api-key", MASTER)
    assert result.returncode == 2 and "give what to change" in result.stderr
