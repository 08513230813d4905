"""``decisions-gateway keys|teams|spend`` (``keys_main``, ``teams_main``, ``spend_main``) on a SQLite file: the
key printed once, blocks seen by the gateway's resolver, usage errors as exit status 2."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from gateway.admin.cli import keys_main, spend_main, teams_main
from gateway.auth.errors import PermissionDenied
from gateway.auth.identity import Authenticator
from gateway.db.engine import open_database


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps({
        "model_list": [{"model_name": name, "litellm_params": {"model": "local/smollm2"}} for name in ("a", "b")],
        "general_settings": {"master_key": "sk-cli-master-key-0123456789", "database_url":
                             f"sqlite:///{tmp_path / 'cli.db'}"},
    }))
    return str(path)


def run(main, *argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def resolve(config_dir: Path, key: str) -> object:
    async def go() -> object:
        db = await open_database(f"sqlite:///{config_dir / 'cli.db'}")
        try:
            auth = Authenticator.build({"master_key": "sk-cli-master-key-0123456789"}, db, None)
            return await auth.resolve(key)
        finally:
            await db.close()

    return asyncio.run(go())


def test_keys_and_teams_from_the_shell(config: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    status, out, err = run(teams_main, "create", "--alias", "search", "--budget", "5", "--rpm", "10", "--config",
                           config, capsys=capsys)
    assert status == 0 and "search" in out and "made a new server secret" in err
    status, out, _ = run(keys_main, "--config", config, "create", "--team", "search", "--budget", "1", "--rpm", "5",
                         "--alias", "ci", "--models", "a,b", "--duration", "30d", capsys=capsys)
    assert status == 0
    key = out.strip()
    assert key.startswith("sk-") and len(key) == 46
    identity = resolve(tmp_path, key)
    assert identity.key_alias == "ci" and identity.team_alias == "search" and identity.models == {"a", "b"}
    status, out, err = run(keys_main, "list", "--config", config, capsys=capsys)
    assert status == 0 and "ci" in out and key[:7] in out and key[7:] not in out + err
    status, out, _ = run(keys_main, "list", "--json", "--config", config, capsys=capsys)
    assert json.loads(out)[0]["key_alias"] == "ci"
    status, out, err = run(keys_main, "block", "ci", "--config", config, capsys=capsys)
    assert status == 0 and "blocked" in out and key not in out + err
    with pytest.raises(PermissionDenied):
        resolve(tmp_path, key)
    assert run(keys_main, "unblock", key, "--config", config, capsys=capsys)[0] == 0
    assert resolve(tmp_path, key).key_alias == "ci"
    status, out, _ = run(teams_main, "list", "--config", config, capsys=capsys)
    assert status == 0 and "search" in out
    status, out, err = run(spend_main, "report", "--group-by", "team", "--config", config, capsys=capsys)
    assert status == 0 and "team_id" in out and "spend" in err
    assert run(keys_main, "delete", "ci", "--config", config, capsys=capsys)[0] == 0


@pytest.mark.parametrize(("main", "argv", "status", "message"), [
    (keys_main, ["block", "nobody"], 1, "No such key"),
    (keys_main, ["create", "--duration", "forever"], 2, "duration"),
    (keys_main, ["create", "--rpm", "-1"], 2, "rpm_limit"),
    (keys_main, ["create", "--team", "missing"], 2, "no team is called"),
    (keys_main, ["list", "--size", "1000"], 2, "--size"),
    (spend_main, ["report", "--start", "2026-12-02", "--end", "2026-12-01"], 2, "after"),
    (spend_main, ["report", "--key", "neither"], 2, "--key"),
])
def test_mistakes_are_one_line_and_an_exit_status(config: str, capsys: pytest.CaptureFixture[str], main,
                                                  argv: list[str], status: int, message: str):
    got, _, err = run(main, *argv, "--config", config, capsys=capsys)
    assert got == status and message in err


def test_a_config_error_is_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    bad = tmp_path / "bad.yaml"
    bad.write_text("general_settings: {database_url: 'mysql://x'}\nmodel_list: [{model_name: a, litellm_params: "
                   "{model: local/smollm2}}]\n")
    status, _, err = run(keys_main, "list", "--config", str(bad), capsys=capsys)
    assert status == 2 and "config error" in err
