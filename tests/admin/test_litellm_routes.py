"""LiteLLM's read routes over real HTTP (a gateway served by uvicorn): ``/model/info`` and
``/v1/model/info``, ``/model_group/info``, ``/v2/team/list`` in LiteLLM's shapes, each scoped to what
the caller's key may call or see; and the version LiteLLM's ``lite version`` reads from readiness."""

from __future__ import annotations

import httpx
import pytest

from gateway import __version__
from tests.admin.conftest import AdminEnv
from tests.admin.test_keys_api import error_of

MASTER = "sk-master-litellm-routes-0123456789"
UPSTREAM_KEY = "ts-litellm-routes-upstream-key"
BASE = "https://typesafe.example:8443/v1?token=abc"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    from tests.conftest import start_gateway

    db = tmp_path_factory.mktemp("litellm-routes") / "gateway.db"
    params = {"model": "typesafe/jev-latest", "api_key": UPSTREAM_KEY, "api_base": BASE}
    running = start_gateway({
        "model_list": [{"model_name": "jev", "litellm_params": {**params, "rpm": 10}},
                       {"model_name": "jev", "litellm_params": {**params, "rpm": 5}},
                       {"model_name": "other", "litellm_params": params,
                        "model_info": {"description": "The other one"}}],
        "router_settings": {"model_group_alias": {"jev-alias": "jev", "secret-alias": {"model": "other",
                                                                                      "hidden": True}}},
        "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"}})
    yield running
    running.stop()


def call(gateway, method: str, path: str, key: str | None = MASTER, **kwargs) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.request(method, gateway.url + path, headers=headers, timeout=30, **kwargs)


def new_key(gateway, **fields) -> str:
    made = call(gateway, "POST", "/key/generate", json=fields)
    assert made.status_code == 200, made.text
    return made.json()["key"]


def new_team(gateway, **fields) -> str:
    made = call(gateway, "POST", "/team/new", json=fields)
    assert made.status_code == 200, made.text
    return made.json()["team_id"]


@pytest.mark.parametrize("path", ["/model/info", "/v1/model/info"])
def test_model_info_lists_the_deployments_the_key_may_call(gateway, path):
    everything = call(gateway, "GET", path)
    assert everything.status_code == 200, everything.text
    assert UPSTREAM_KEY not in everything.text and "token=abc" not in everything.text
    data = everything.json()["data"]
    assert [(e["model_name"], e["litellm_params"]["rpm"]) for e in data] == [("jev", 10), ("jev", 5), ("other", None)]
    first = data[0]
    assert first["litellm_params"]["model"] == "typesafe/jev-latest"
    assert first["litellm_params"]["api_base"] == "https://typesafe.example:8443/v1"
    assert first["model_info"]["mode"] == "decisions" and first["model_info"]["litellm_provider"] == "typesafe"
    assert first["model_info"]["health"]["status"] == "healthy"
    assert len({e["model_info"]["id"] for e in data}) == 3

    key = new_key(gateway, models=["jev"])
    scoped = call(gateway, "GET", path, key=key)
    assert scoped.status_code == 200, scoped.text
    assert key not in scoped.text
    entries = scoped.json()["data"]
    assert [e["model_name"] for e in entries] == ["jev", "jev"]
    assert all("api_base" not in e["litellm_params"] and "health" not in e["model_info"] for e in entries)
    by_alias = call(gateway, "GET", path, key=new_key(gateway, models=["jev-alias"])).json()["data"]
    assert [e["model_name"] for e in by_alias] == ["jev", "jev"]

    one = call(gateway, "GET", path, params={"litellm_model_id": data[2]["model_info"]["id"]}).json()["data"]
    assert [e["model_name"] for e in one] == ["other"]
    hidden = call(gateway, "GET", path, key=key, params={"litellm_model_id": data[2]["model_info"]["id"]})
    assert error_of(hidden, 400)["param"] == "litellm_model_id"
    assert error_of(call(gateway, "GET", path, key=None), 401)
    assert error_of(call(gateway, "GET", path, key="sk-not-a-key-of-this-gateway"), 401)


def test_model_group_info_lists_the_groups_and_aliases_the_key_may_call(gateway):
    groups = call(gateway, "GET", "/model_group/info")
    assert groups.status_code == 200, groups.text
    data = {g["model_group"]: g for g in groups.json()["data"]}
    assert list(data) == ["jev", "other", "jev-alias"]  # a hidden alias is not listed
    jev = data["jev"]
    assert jev["providers"] == ["typesafe"] and jev["mode"] == "decisions" and jev["rpm"] == 15
    assert jev["tpm"] is None and jev["input_cost_per_token"] == pytest.approx(4.2e-8)
    assert jev["supports_function_calling"] is False and jev["supported_openai_params"] == []
    assert data["other"]["description"] == "The other one"
    assert data["jev-alias"]["description"].startswith("Alias of jev") and data["jev-alias"]["rpm"] == 15
    assert UPSTREAM_KEY not in groups.text and "typesafe.example" not in groups.text

    key = new_key(gateway, models=["other"])
    assert [g["model_group"] for g in call(gateway, "GET", "/model_group/info", key=key).json()["data"]] == ["other"]
    one = call(gateway, "GET", "/model_group/info", params={"model_group": "jev-alias"}).json()["data"]
    assert [g["model_group"] for g in one] == ["jev-alias"]
    assert call(gateway, "GET", "/model_group/info", key=key, params={"model_group": "jev"}).json() == {"data": []}
    assert error_of(call(gateway, "GET", "/model_group/info", key=None), 401)


def test_team_list_v2_pages_and_scopes_teams(gateway):
    alpha = new_team(gateway, team_alias="V2-Alpha", models=["jev"], max_budget=3)
    beta = new_team(gateway, team_alias="v2-beta")
    member = new_key(gateway, team_id=alpha)
    new_key(gateway, team_id=alpha)
    listed = call(gateway, "GET", "/v2/team/list", params={"team_alias": "v2-", "sort_by": "team_alias"})
    assert listed.status_code == 200, listed.text
    body = listed.json()
    assert (body["total"], body["page"], body["page_size"], body["total_pages"]) == (2, 1, 10, 1)
    assert [(t["team_id"], t["keys_count"], t["members_count"]) for t in body["teams"]] == [(alpha, 2, 0),
                                                                                            (beta, 0, 0)]
    assert body["teams"][0]["max_budget"] == 3 and body["teams"][0]["models"] == ["jev"]
    page_two = call(gateway, "GET", "/v2/team/list", params={"team_alias": "V2-", "page": 2, "page_size": 1,
                                                             "sort_by": "team_alias", "sort_order": "desc"}).json()
    assert [t["team_id"] for t in page_two["teams"]] == [alpha] and page_two["total_pages"] == 2

    own = call(gateway, "GET", "/v2/team/list", key=member).json()
    assert [t["team_id"] for t in own["teams"]] == [alpha] and own["total"] == 1
    assert call(gateway, "GET", "/v2/team/list", key=member, params={"team_id": beta}).json()["teams"] == []
    assert call(gateway, "GET", "/v2/team/list", key=new_key(gateway)).json()["total"] == 0

    for name, value in (("user_id", "u1"), ("organization_id", "o1"), ("status", "deleted")):
        error = error_of(call(gateway, "GET", "/v2/team/list", params={name: value}), 400)
        assert error["param"] == name and "not supported here" in error["message"]
    for name, value in (("page_size", 101), ("sort_by", "members"), ("sort_order", "up"), ("team_id", "a b")):
        assert error_of(call(gateway, "GET", "/v2/team/list", params={name: value}), 400)["param"] == name


def test_readiness_shows_the_version_to_the_master_key_as_litellm_does(gateway):
    detailed = call(gateway, "GET", "/health/readiness").json()
    assert detailed["litellm_version"] == __version__ == detailed["version"]
    assert "litellm_version" not in call(gateway, "GET", "/health/readiness", key=None).json()


async def test_team_list_v2_on_both_databases(env: AdminEnv):
    """The same query on SQLite and PostgreSQL: the alias matched ignoring case, with _ and % as text."""
    admin = env.client()
    made = [(await admin.post("/team/new", json={"team_alias": alias})).json()["team_id"]
            for alias in ("Ops_1", "ops%2", "opsx3", None)]
    await admin.post("/key/generate", json={"team_id": made[0]})
    found = (await admin.get("/v2/team/list", params={"team_alias": "OPS_", "sort_by": "team_alias"})).json()
    assert [(t["team_id"], t["keys_count"]) for t in found["teams"]] == [(made[0], 1)]
    assert (await admin.get("/v2/team/list", params={"team_alias": "s%"})).json()["total"] == 1
    ordered = (await admin.get("/v2/team/list", params={"sort_by": "team_alias", "sort_order": "desc"})).json()
    assert [t["team_alias"] for t in ordered["teams"]] == ["opsx3", "ops%2", "Ops_1", None]  # no alias last
