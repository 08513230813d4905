"""``router_settings.model_group_alias`` (issue 20 item 3): an alias answers as its target group on
both routes, is listed by ``/v1/models`` unless hidden, and counts in a key's models; as in LiteLLM,
a key may call an alias when it may use the alias or its target.

A real gateway (master key, SQLite) over HTTP in front of a fake TypeSafe and a fake OpenAI; keys made
through the admin API; the System One wire with httpx, the OpenAI wire with the openai client."""

from __future__ import annotations

import httpx
import pytest

from gateway.config.errors import ConfigError
from gateway.config.loader import build_config
from tests.admin_calls import admin_ok
from tests.conftest import start_gateway
from tests.fakes.openai import FakeOpenAI
from tests.fakes.typesafe import FakeTypeSafe

MASTER = "sk-master-alias-0123456789"
TS_KEY = "ts-alias-key"
OPENAI_KEY = "sk-openai-alias"
ONE = {"refund": {"type": "noul", "instructions": "Refund?"}}
OPENAI_ONE = [{"type": "predicate", "name": "refund", "instructions": "Refund?"}]
ALIASES = {"gpt-4": "luna", "decider": {"model": "jev", "hidden": True}, "fast": {"model": "jev"}}


@pytest.fixture(scope="module")
def fakes():
    with FakeTypeSafe(TS_KEY) as jev, FakeOpenAI(OPENAI_KEY) as luna:
        yield {"jev": jev, "luna": luna}


@pytest.fixture(autouse=True)
def _fresh(fakes):
    yield
    for fake in fakes.values():
        fake.reset()


def _config(fakes, db) -> dict:
    return {
        "model_list": [
            {"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": TS_KEY,
                                                     "api_base": fakes["jev"].url, "timeout": 10}},
            {"model_name": "luna", "litellm_params": {"model": "openai/gpt-6-luna", "api_key": OPENAI_KEY,
                                                      "api_base": f"{fakes['luna'].url}/v1", "timeout": 10}},
        ],
        "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"},
        "router_settings": {"num_retries": 0, "model_group_alias": ALIASES},
    }


@pytest.fixture(scope="module")
def gateway(fakes, tmp_path_factory):
    running = start_gateway(_config(fakes, tmp_path_factory.mktemp("alias") / "gateway.db"))
    yield running
    running.stop()


def key(gateway, models: list[str], team_models: list[str] | None = None) -> str:
    body: dict = {"models": models}
    if team_models is not None:
        body["team_id"] = admin_ok(gateway, MASTER, "/team/new", {"models": team_models})["team_id"]
    return admin_ok(gateway, MASTER, "/key/generate", body)["key"]


def ask(gateway, key_: str, model: str) -> httpx.Response:
    return httpx.post(gateway.url + "/v1/systemone", json={"model": model, "state": "Charged twice.",
                                                            "questions": ONE},
                      headers={"Authorization": f"Bearer {key_}"}, timeout=30)


def listed(gateway, key_: str) -> list[str]:
    response = httpx.get(gateway.url + "/v1/models", headers={"Authorization": f"Bearer {key_}"}, timeout=10)
    assert response.status_code == 200, response.text
    body = response.json()
    assert [m["id"] for m in body["data"]] == [m["name"] for m in body["models"]]
    return [m["id"] for m in body["data"]]


@pytest.mark.parametrize("alias", ["fast", "decider"])  # shown and hidden: both answer
def test_an_alias_answers_as_its_group_on_system_one(gateway, fakes, alias):
    answered = ask(gateway, MASTER, alias)
    assert answered.status_code == 200, answered.text
    assert answered.headers["x-decisions-model-group"] == "jev"
    assert answered.headers["x-litellm-model-group"] == "jev"
    assert answered.headers["x-decisions-model"] == "typesafe/jev-latest"
    assert len(fakes["jev"].requests) == 1 and fakes["luna"].requests == []


def test_an_alias_answers_as_its_group_on_the_openai_wire(gateway, fakes):
    import openai

    client = openai.OpenAI(api_key=MASTER, base_url=f"{gateway.url}/v1", max_retries=0)
    raw = client.decisions.with_raw_response.create(model="gpt-4", input="Charged twice.", questions=OPENAI_ONE)
    assert raw.headers["x-decisions-model-group"] == "luna"
    assert raw.parse().answers[0].name == "refund"
    assert len(fakes["luna"].requests) == 1 and fakes["jev"].requests == []
    across = ask(gateway, MASTER, "gpt-4")  # a System One request to the alias of an OpenAI group
    assert across.status_code == 200 and across.headers["x-decisions-model"] == "openai/gpt-6-luna"


def test_models_lists_the_aliases_not_hidden_as_their_groups(gateway):
    response = httpx.get(gateway.url + "/v1/models", headers={"Authorization": f"Bearer {MASTER}"}, timeout=10)
    body = response.json()
    rows = {row["id"]: row for row in body["data"]}
    assert list(rows) == ["jev", "luna", "gpt-4", "fast"]  # the groups, then the aliases; decider is hidden
    assert rows["gpt-4"]["deployments"] == ["openai/gpt-6-luna"] and rows["gpt-4"]["owned_by"] == "openai"
    assert rows["fast"]["limits"] == rows["jev"]["limits"]
    described = {m["name"]: m["description"] for m in body["models"]}
    assert described["gpt-4"].startswith("Alias of luna: ")


def test_a_key_for_an_alias_calls_the_alias_and_not_the_group(gateway):
    alias_only = key(gateway, ["gpt-4"])
    assert ask(gateway, alias_only, "gpt-4").status_code == 200
    refused = ask(gateway, alias_only, "luna")
    assert refused.status_code == 403
    detail = refused.json()["detail"]
    assert detail["error_type"] == "model_not_allowed" and "'luna'" in detail["message"]
    assert "gpt-4" in detail["message"]  # its models, named
    assert ask(gateway, alias_only, "jev").status_code == 403
    assert listed(gateway, alias_only) == ["gpt-4"]


def test_a_key_for_a_group_may_call_its_aliases_as_litellm_does(gateway):
    jev_only = key(gateway, ["jev"])
    for name in ("jev", "fast", "decider"):
        assert ask(gateway, jev_only, name).status_code == 200, name
    refused = ask(gateway, jev_only, "gpt-4")
    assert refused.status_code == 403 and "'gpt-4'" in refused.json()["detail"]["message"]
    assert listed(gateway, jev_only) == ["jev", "fast"]  # the hidden alias answers and is not listed


def test_a_team_for_an_alias_lets_its_keys_call_it(gateway):
    in_team = key(gateway, [], team_models=["gpt-4"])
    assert ask(gateway, in_team, "gpt-4").status_code == 200
    assert listed(gateway, in_team) == ["gpt-4"]
    refused = ask(gateway, in_team, "fast")
    assert refused.status_code == 403
    assert refused.json()["detail"]["message"].startswith("This key's team '")  # the team's models, not the key's


def test_an_unknown_model_lists_the_aliases_too(gateway):
    unknown = ask(gateway, MASTER, "gpt-5")
    assert unknown.status_code == 400, unknown.text
    message = unknown.json()["detail"]["message"]
    assert "gpt-4" in message and "fast" in message and "decider" not in message


@pytest.mark.parametrize(("aliases", "named", "rule"), [
    ({"gpt-4": "nowhere"}, "model_group_alias.gpt-4", "'nowhere' is not a model_name"),
    ({"gpt-4": {"model": "nowhere", "hidden": True}}, "model_group_alias.gpt-4.model", "not a model_name"),
    ({"jev": "luna"}, "model_group_alias", "'jev' is already a model_name"),
    ({"a": "b", "b": "jev"}, "model_group_alias.a", "aliases do not chain"),
    ({"gpt-4": {"model": "luna", "hiden": True}}, "model_group_alias.gpt-4", "unknown key 'hiden'"),
    ({"gpt-4": {"model": "luna", "hidden": "yes"}}, "model_group_alias.gpt-4.hidden", "true or false"),
    ({"gpt-4": 3}, "model_group_alias.gpt-4", "must name a model group"),
    (["gpt-4"], "model_group_alias", "must be a mapping"),
])
def test_an_unusable_alias_fails_the_start_naming_it(aliases, named, rule):
    config = {"model_list": [{"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest",
                                                                      "api_key": TS_KEY}},
                             {"model_name": "luna", "litellm_params": {"model": "openai/gpt-6-luna",
                                                                       "api_key": OPENAI_KEY}}],
              "router_settings": {"model_group_alias": aliases}}
    with pytest.raises(ConfigError) as failed:
        build_config(config, {}, source="<test>")
    assert f"router_settings.{named}" in str(failed.value) and rule in str(failed.value)


def test_a_spend_row_names_the_alias_it_was_asked_by(gateway):
    from tests.shared_state.conftest import wait_for

    answered = ask(gateway, MASTER, "fast")
    assert answered.status_code == 200, answered.text
    request_id = answered.headers["x-request-id"]
    headers = {"Authorization": f"Bearer {MASTER}"}

    def row() -> dict | None:
        found = httpx.get(gateway.url + "/spend/logs", params={"request_id": request_id}, headers=headers,
                          timeout=10).json()
        return found[0] if found else None

    wait_for(lambda: row() is not None, 20, lambda: f"no spend row for {request_id}")
    logged = row()
    assert logged is not None and logged["model_group"] == "jev"  # rolled up as the group it answered as
    assert logged["metadata"]["model_group_alias"] == "fast"
    by_group = ask(gateway, MASTER, "jev")
    group_id = by_group.headers["x-request-id"]
    wait_for(lambda: httpx.get(gateway.url + "/spend/logs", params={"request_id": group_id}, headers=headers,
                               timeout=10).json() != [], 20, lambda: f"no spend row for {group_id}")
    plain = httpx.get(gateway.url + "/spend/logs", params={"request_id": group_id}, headers=headers,
                      timeout=10).json()[0]
    assert "model_group_alias" not in plain["metadata"]


def test_health_narrowed_by_an_alias_reports_its_group(gateway):
    headers = {"Authorization": f"Bearer {MASTER}"}
    for alias, group in (("fast", "jev"), ("decider", "jev"), ("gpt-4", "luna")):
        report = httpx.get(gateway.url + "/health", params={"model": alias}, headers=headers, timeout=10)
        assert report.status_code == 200, report.text
        assert [entry["model_group"] for entry in report.json()["deployments"]] == [group], alias
    unknown = httpx.get(gateway.url + "/health", params={"model": "gpt-5"}, headers=headers, timeout=10)
    assert unknown.status_code == 400 and unknown.json()["error"]["param"] == "model"


def _two_groups(router_settings: dict) -> dict:
    return {"model_list": [{"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": TS_KEY}},
                           {"model_name": "luna", "litellm_params": {"model": "openai/gpt-6-luna",
                                                                     "api_key": OPENAI_KEY}}],
            "router_settings": router_settings}


def test_fallbacks_may_name_an_alias_and_mean_its_group():
    from gateway.router.settings import router_settings_of

    config = build_config(_two_groups({"model_group_alias": {"gpt-4": "luna", "fast": "jev"},
                                       "fallbacks": [{"fast": ["gpt-4"]}], "default_fallbacks": ["gpt-4"]}),
                          {}, source="<test>")
    settings = router_settings_of(config)
    assert settings.policy("jev").fallbacks == ("luna",)  # "fast" is jev, "gpt-4" is luna
    assert settings.policy("luna").fallbacks == ()  # the default fallback is luna itself: left out


def test_every_unknown_fallback_name_is_reported_at_once():
    with pytest.raises(ConfigError) as failed:
        build_config(_two_groups({"fallbacks": [{"jev": ["lunna", "nowhere"]}], "default_fallbacks": ["jevv"]}),
                     {}, source="<test>")
    problems = failed.value.problems
    assert "router_settings.fallbacks: 'lunna' is not a model_name in model_list; did you mean 'luna'?" in problems
    assert any("'nowhere' is not a model_name" in p for p in problems)
    assert any(p.startswith("router_settings.default_fallbacks: 'jevv'") and "'jev'" in p for p in problems)
