"""The /user/* and /team/member_* routes over HTTP, on SQLite and PostgreSQL, in LiteLLM's shapes: a user
with its teams and (auto_create_key) its key, the caller's own /user/info, paging, members and their
roles in members_with_roles, deleting a user deletes its keys, and role changes reach every gateway
instance within the key cache's CHECK_S."""

from __future__ import annotations

from tests.admin.conftest import AdminEnv
from tests.admin.test_keys_api import accepted, error_of, generate, refused_as
from tests.key_changes import after_change


async def test_user_lifecycle_in_litellm_shapes(env: AdminEnv):
    admin = env.client()
    await admin.post("/team/new", json={"team_id": "ta"})
    await admin.post("/team/new", json={"team_id": "tb"})
    made = await admin.post("/user/new", json={"user_id": "ann", "user_email": "ann@example.com", "max_budget": 5,
                                               "teams": ["ta", {"team_id": "tb", "user_role": "admin"}],
                                               "key_alias": "ann-key"})
    assert made.status_code == 200, made.text
    user = made.json()
    assert (user["user_id"], user["user_role"], user["max_budget"]) == ("ann", "internal_user", 5)
    assert user["teams"] == ["ta", "tb"] and user["team_roles"] == {"ta": "user", "tb": "admin"}
    assert user["key"].startswith("sk-") and user["key_alias"] == "ann-key" and user["token"]
    info = (await admin.get("/user/info", params={"user_id": "ann"})).json()
    assert info["user_id"] == "ann" and info["user_info"]["user_email"] == "ann@example.com"
    assert [k["token"] for k in info["keys"]] == [user["token"]] and info["keys"][0]["user_id"] == "ann"
    assert sorted(t["team_id"] for t in info["teams"]) == ["ta", "tb"] and user["key"] not in str(info)
    plain = (await admin.post("/user/new", json={"user_email": "bo@example.com", "auto_create_key": False,
                                                 "user_role": "proxy_admin_viewer"})).json()
    assert plain["key"] is None and plain["user_id"] and plain["user_role"] == "proxy_admin_viewer"
    listed = (await admin.get("/user/list", params={"page_size": 1})).json()
    assert (listed["total"], listed["page_size"], listed["total_pages"], len(listed["users"])) == (2, 1, 2, 1)
    counts = {u["user_id"]: u["key_count"] for u in (await admin.get("/user/list")).json()["users"]}
    assert counts == {"ann": 1, plain["user_id"]: 0}
    assert [u["user_id"] for u in (await admin.get("/user/list", params={"team": "tb"})).json()["users"]] == ["ann"]
    by_role = (await admin.get("/user/list", params={"role": "proxy_admin_viewer"})).json()["users"]
    assert [u["user_id"] for u in by_role] == [plain["user_id"]]
    updated = (await admin.post("/user/update", json={"user_email": "bo@example.com", "user_alias": "Bo"})).json()
    assert updated["user_alias"] == "Bo" and updated["user_email"] == "bo@example.com"
    assert (await admin.post("/user/update", json={"user_id": "ann", "spend": 1.5})).json()["spend"] == 1.5


async def test_user_requests_refused_naming_the_field(env: AdminEnv):
    admin = env.client()
    await admin.post("/user/new", json={"user_id": "taken", "user_email": "t@example.com", "auto_create_key": False})
    for body, status, param in (({"user_id": "taken"}, 400, "user_id"), ({"user_email": "t@example.com"}, 400,
                                "user_email"), ({"teams": ["nope"]}, 404, "teams[0]"),
                                ({"user_role": "root"}, 400, "user_role"), ({"password": "x"}, 400, "password"),
                                ({"send_invite_email": True}, 400, "send_invite_email"),
                                ({"user_email": "not-an-email"}, 400, "user_email"),
                                ({"models": ["a"], "organizations": ["o"]}, 400, "organizations")):
        error = error_of(await admin.post("/user/new", json=body), status)
        assert error["param"] == param, (body, error)
    assert (await admin.post("/user/new", json={"send_invite_email": None, "password": None,
                                                "auto_create_key": False})).status_code == 200  # defaults
    assert error_of(await admin.post("/user/update", json={"user_id": "gone", "user_alias": "x"}), 404)
    assert error_of(await admin.post("/user/update", json={"user_id": "taken", "key_alias": "k"}), 400)[
        "param"] == "key_alias"
    assert error_of(await admin.get("/user/info", params={"user_id": "gone"}), 404)["param"] == "user_id"


async def test_members_and_members_with_roles(env: AdminEnv):
    admin = env.client()
    await admin.post("/team/new", json={"team_id": "ta"})
    for uid in ("u1", "u2"):
        await admin.post("/user/new", json={"user_id": uid, "user_email": f"{uid}@example.com",
                                            "auto_create_key": False})
    added = await admin.post("/team/member_add", json={"team_id": "ta", "member": [
        {"user_id": "u1", "role": "admin"}, {"user_email": "u2@example.com", "role": "user"}]})
    assert added.status_code == 200, added.text
    body = added.json()
    assert {(m["user_id"], m["role"]) for m in body["members_with_roles"]} == {("u1", "admin"), ("u2", "user")}
    assert {u["user_id"] for u in body["updated_users"]} == {"u1", "u2"}
    assert {(m["user_id"], m["role"]) for m in body["updated_team_memberships"]} == {("u1", "admin"), ("u2", "user")}
    updated = (await admin.post("/team/member_update", json={"team_id": "ta", "user_id": "u2", "role": "admin"}))
    assert updated.json() == {"team_id": "ta", "user_id": "u2", "user_email": "u2@example.com", "role": "admin"}
    info = (await admin.get("/team/info", params={"team_id": "ta"})).json()
    assert {m["role"] for m in info["team_info"]["members_with_roles"]} == {"admin"}
    listed = (await admin.get("/v2/team/list")).json()["teams"][0]
    assert listed["members_count"] == 2 and len(listed["members_with_roles"]) == 2
    assert len((await admin.get("/team/list")).json()[0]["members_with_roles"]) == 2
    left = (await admin.post("/team/member_delete", json={"team_id": "ta", "user_email": "u1@example.com"})).json()
    assert [m["user_id"] for m in left["members_with_roles"]] == ["u2"]
    assert error_of(await admin.post("/team/member_delete", json={"team_id": "ta", "user_id": "u1"}), 404)
    assert error_of(await admin.post("/team/member_add", json={"team_id": "ta", "member": {"user_id": "nobody",
                                                                                            "role": "user"}}), 404)
    assert error_of(await admin.post("/team/member_add", json={"team_id": "ta", "member": {"user_id": "u1",
                                                                                            "role": "owner"}}), 400)
    assert error_of(await admin.post("/team/member_add", json={"team_id": "ta", "max_budget_in_team": 3, "member": {
        "user_id": "u1", "role": "user"}}), 400)["param"] == "max_budget_in_team"


async def test_deleting_a_user_deletes_its_keys_in_every_instance(env: AdminEnv):
    admin = env.client(env.app())
    made = (await admin.post("/user/new", json={"user_id": "doomed"})).json()
    other = await generate(admin, user_id="doomed", key_alias="second")
    caller = env.client(env.app(), key=made["key"])
    assert (await caller.get("/key/info")).status_code == 200
    deleted, response = await after_change(lambda: admin.post("/user/delete", json={"user_ids": ["doomed", "x"]}),
                                           lambda: caller.get("/key/info"), lambda r: r.status_code == 401,
                                           "the user's deletion")
    assert deleted.json() == {"deleted_users": ["doomed"], "deleted_keys": 2}
    assert error_of(response, 401)["type"] == "authentication_error"
    assert error_of(await env.client(key=other["key"]).get("/key/info"), 401)
    assert error_of(await admin.post("/key/generate", json={"user_id": "doomed"}), 404)["param"] == "user_id"


async def test_the_self_call_says_who_is_asking(env: AdminEnv):
    admin = env.client()
    await admin.post("/team/new", json={"team_id": "ta"})
    me = (await admin.get("/user/info")).json()
    assert me["caller"] == {"role": "proxy_admin", "admin_teams": [], "team_id": None, "user_id": None, "key": None}
    assert me["user_info"] is None
    made = (await admin.post("/user/new", json={"user_id": "lead", "teams": [{"team_id": "ta", "user_role": "admin"}],
                                                "team_id": "ta"})).json()
    lead = (await env.client(key=made["key"]).get("/user/info")).json()
    assert lead["caller"]["role"] == "internal_user" and lead["caller"]["admin_teams"] == ["ta"]
    assert lead["caller"]["team_id"] == "ta" and lead["caller"]["user_id"] == "lead" and lead["user_id"] == "lead"
    orphan = await generate(admin, team_id="ta")
    alone = (await env.client(key=orphan["key"]).get("/user/info")).json()
    assert alone["caller"]["role"] is None and alone["user_info"] is None
    assert [k["token"] for k in alone["keys"]] == [orphan["token"]] and [t["team_id"] for t in alone["teams"]] == ["ta"]
    assert error_of(await env.client(key=orphan["key"]).get("/user/info", params={"user_id": "lead"}), 403)


async def test_a_role_change_reaches_every_instance(env: AdminEnv):
    admin = env.client(env.app())
    made = (await admin.post("/user/new", json={"user_id": "worker"})).json()
    caller = env.client(env.app(), key=made["key"])
    assert accepted(await caller.post("/key/generate", json={}))
    await after_change(lambda: admin.post("/user/update", json={"user_id": "worker", "user_role":
                                                               "internal_user_viewer"}),
                       lambda: caller.post("/key/generate", json={}), refused_as("read_only"), "the demotion")
    await after_change(lambda: admin.post("/user/update", json={"user_id": "worker", "user_role": "proxy_admin"}),
                       lambda: caller.get("/user/list"), accepted, "the promotion")
