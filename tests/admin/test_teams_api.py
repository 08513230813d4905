"""The /team/* routes over HTTP, on SQLite and PostgreSQL: a team bounds its keys' models, a blocked team
blocks its keys, deleting a team deletes its keys."""

from __future__ import annotations

from tests.admin.conftest import AdminEnv
from tests.admin.test_keys_api import error_of, generate, refused_as
from tests.key_changes import after_change


async def test_team_lifecycle(env: AdminEnv):
    admin = env.client()
    made = await admin.post("/team/new", json={"team_alias": "search", "models": ["a", "b"], "max_budget": 10,
                                               "budget_duration": "1mo", "rpm_limit": 100})
    assert made.status_code == 200, made.text
    team = made.json()
    team_id = team["team_id"]
    assert team["team_alias"] == "search" and team["spend"] == 0 and team["budget_reset_at"] is not None
    key = await generate(admin, team_id=team_id, key_alias="in-team", models=["a"])
    info = (await admin.get("/team/info", params={"team_id": team_id})).json()
    assert info["team_info"]["rpm_limit"] == 100 and [k["token"] for k in info["keys"]] == [key["token"]]
    assert key["key"] not in str(info)
    updated = (await admin.post("/team/update", json={"team_id": team_id, "tpm_limit": 5,
                                                      "team_alias": "renamed"})).json()
    assert (updated["tpm_limit"], updated["rpm_limit"], updated["team_alias"]) == (5, 100, "renamed")
    listed = (await admin.get("/team/list")).json()
    assert [t["team_id"] for t in listed] == [team_id]
    deleted = (await admin.post("/team/delete", json={"team_ids": [team_id, "nobody"]})).json()
    assert deleted == {"deleted_teams": [team_id], "deleted_keys": 1}
    assert error_of(await env.client(key=key["key"]).get("/key/info"), 401)
    assert error_of(await admin.get("/team/info", params={"team_id": team_id}), 404)["param"] == "team_id"


async def test_a_chosen_team_id_is_kept_and_not_reused(env: AdminEnv):
    admin = env.client()
    assert (await admin.post("/team/new", json={"team_id": "team-1"})).json()["team_id"] == "team-1"
    assert error_of(await admin.post("/team/new", json={"team_id": "team-1"}), 400)["param"] == "team_id"
    for bad in ({"team_id": "has space"}, {"team_id": "x" * 65}, {"max_budget": -1}, {"models": "a"},
                {"members": []}):
        assert error_of(await admin.post("/team/new", json=bad), 400)["param"] == next(iter(bad))


async def test_key_models_must_lie_within_the_team_models(env: AdminEnv):
    admin = env.client()
    team_id = (await admin.post("/team/new", json={"models": ["a"]})).json()["team_id"]
    error = error_of(await admin.post("/key/generate", json={"team_id": team_id, "models": ["a", "z"]}), 400)
    assert error["param"] == "models" and "z" in error["message"]
    assert (await admin.post("/key/generate", json={"team_id": team_id})).status_code == 200  # all: the team's


async def test_blocking_a_team_blocks_its_keys_in_every_instance(env: AdminEnv):
    admin = env.client(env.app())
    team_id = (await admin.post("/team/new", json={"team_alias": "t"})).json()["team_id"]
    key = await generate(admin, team_id=team_id)
    caller = env.client(env.app(), key=key["key"])
    assert (await caller.get("/key/info")).status_code == 200
    blocked, response = await after_change(lambda: admin.post("/team/block", json={"team_id": team_id}),
                                           lambda: caller.get("/key/info"), refused_as("team_blocked"),
                                           "the team's block")
    assert blocked.json()["blocked"] is True
    assert error_of(response, 403)["code"] == "team_blocked"
    assert (await admin.post("/team/unblock", json={"team_id": team_id})).json()["blocked"] is False


async def test_team_list_pages(env: AdminEnv):
    admin = env.client()
    for i in range(7):
        await admin.post("/team/new", json={"team_id": f"t{i}"})
    pages = [(await admin.get("/team/list", params={"page": p, "size": 3})).json() for p in (1, 2, 3)]
    assert [len(p) for p in pages] == [3, 3, 1]
    assert sorted(t["team_id"] for p in pages for t in p) == [f"t{i}" for i in range(7)]
