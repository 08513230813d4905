"""A key or team is refused a model the gateway does not have (issue 20 item 6): 400 naming
``models[i]`` and the configured models, on ``/key/generate``, ``/key/update``, ``/key/regenerate``,
``/team/new`` and ``/team/update``, and from the CLI; a group, a ``model_group_alias`` (hidden or not),
a pass-through's ``provider/model`` and the wildcards for every model (``*``, ``all-proxy-models``,
``all-team-models``) are accepted.

A real gateway (master key, SQLite) over HTTP in front of a fake TypeSafe."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from gateway.admin.cli import keys_main
from tests.admin_calls import admin_ok
from tests.conftest import start_gateway
from tests.fakes.typesafe import FakeTypeSafe

MASTER = "sk-master-models-exist-0123456"
TS_KEY = "ts-models-exist-key"
ONE = {"refund": {"type": "noul", "instructions": "Refund?"}}


def _config(fake_url: str, db: Path) -> dict:
    return {
        "model_list": [{"model_name": name, "litellm_params": {"model": "typesafe/jev-latest", "api_key": TS_KEY,
                                                              "api_base": fake_url, "timeout": 10}}
                       for name in ("jev", "luna")],
        "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"},
        "router_settings": {"num_retries": 0,
                            "model_group_alias": {"fast": "jev", "quiet": {"model": "jev", "hidden": True}}},
    }


@pytest.fixture(scope="module")
def fake():
    with FakeTypeSafe(TS_KEY) as running:
        yield running


@pytest.fixture(scope="module")
def gateway(fake, tmp_path_factory):
    running = start_gateway(_config(fake.url, tmp_path_factory.mktemp("models-exist") / "gateway.db"))
    yield running
    running.stop()


def post(gateway, path: str, body: dict) -> httpx.Response:
    return httpx.post(gateway.url + path, json=body, headers={"Authorization": f"Bearer {MASTER}"}, timeout=20)


def refused(response: httpx.Response, index: int, name: str) -> str:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "model_not_found" and error["param"] == f"models[{index}]", error
    assert error["message"].startswith(f"models[{index}]: '{name}' ")
    return error["message"]


def test_a_key_for_a_model_the_gateway_does_not_have_is_refused(gateway):
    message = refused(post(gateway, "/key/generate", {"models": ["jev", "gpt-5"]}), 1, "gpt-5")
    assert "jev, luna, fast" in message and "quiet" not in message  # the listed models; a hidden alias is not
    made = admin_ok(gateway, MASTER, "/key/generate", {"models": ["jev"]})
    refused(post(gateway, "/key/update", {"key": made["token"], "models": ["nowhere"]}), 0, "nowhere")
    refused(post(gateway, "/key/regenerate", {"key": made["token"], "models": ["nowhere"]}), 0, "nowhere")
    renamed = admin_ok(gateway, MASTER, "/key/update", {"key": made["token"], "key_alias": "still-jev"})
    assert renamed["models"] == ["jev"]  # an update that names no models is not checked


def test_a_team_for_a_model_the_gateway_does_not_have_is_refused(gateway):
    refused(post(gateway, "/team/new", {"models": ["nowhere"]}), 0, "nowhere")
    team = admin_ok(gateway, MASTER, "/team/new", {"models": ["luna"]})["team_id"]
    refused(post(gateway, "/team/update", {"team_id": team, "models": ["luna", "nowhere"]}), 1, "nowhere")


def test_a_pattern_is_refused_saying_only_the_whole_wildcard_is_matched(gateway):
    message = refused(post(gateway, "/key/generate", {"models": ["typesafe/*"]}), 0, "typesafe/*")
    assert "wildcard pattern" in message and "* (or all-proxy-models)" in message


@pytest.mark.parametrize("models", [["jev", "luna"], ["fast"], ["quiet"], ["typesafe/jev-preview"], ["*"],
                                    ["all-proxy-models"], ["all-team-models"]])
def test_groups_aliases_pass_through_models_and_wildcards_are_accepted(gateway, models):
    assert admin_ok(gateway, MASTER, "/key/generate", {"models": models})["models"] == models
    assert admin_ok(gateway, MASTER, "/team/new", {"models": models})["models"] == models


def test_all_team_models_is_the_teams_models(gateway):
    team = admin_ok(gateway, MASTER, "/team/new", {"models": ["luna"]})["team_id"]
    key = admin_ok(gateway, MASTER, "/key/generate", {"team_id": team, "models": ["all-team-models"]})["key"]

    def ask(model: str) -> int:
        return httpx.post(gateway.url + "/v1/systemone", json={"model": model, "state": "Charged twice.",
                                                                "questions": ONE},
                          headers={"Authorization": f"Bearer {key}"}, timeout=30).status_code

    assert ask("luna") == 200 and ask("jev") == 403


def test_the_cli_refuses_a_model_its_config_does_not_have(fake, tmp_path, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps(_config(fake.url, tmp_path / "cli.db")))
    assert keys_main(["--config", str(config), "create", "--models", "jev,nowhere"]) != 0
    err = capsys.readouterr().err
    assert "models[1]: 'nowhere' is not a model of this gateway" in err
    assert keys_main(["--config", str(config), "create", "--models", "jev,fast"]) == 0
    assert capsys.readouterr().out.startswith("sk-")
