"""Who manages which keys, over HTTP on SQLite and PostgreSQL (gateway/auth/roles.py applied by the
/key/* routes): a team admin makes, changes and deletes its team's keys and no other team's, never
mints a key for a proxy admin or viewer, and changes no members; an internal user manages only its
own keys and may not set their spend or give them away; a viewer changes nothing."""

from __future__ import annotations

import httpx

from tests.admin.conftest import AdminEnv
from tests.admin.test_keys_api import error_of, generate


async def _world(env: AdminEnv) -> dict[str, httpx.AsyncClient | str]:
    admin = env.client()
    for team in ("ta", "tb"):
        await admin.post("/team/new", json={"team_id": team})
    clients: dict[str, httpx.AsyncClient | str] = {"admin": admin}
    for uid, role, teams in (("lead", "internal_user", [{"team_id": "ta", "user_role": "admin"}]),
                             ("dev", "internal_user", ["ta"]), ("peer", "internal_user", []),
                             ("boss", "proxy_admin", ["ta"]), ("watcher", "proxy_admin_viewer", ["ta"])):
        made = (await admin.post("/user/new", json={"user_id": uid, "user_role": role, "teams": teams})).json()
        clients[uid] = env.client(key=made["key"])
        clients[f"{uid}-token"] = made["token"]
    return clients


async def test_a_team_admin_manages_its_teams_keys_only(env: AdminEnv):
    w = await _world(env)
    admin, lead = w["admin"], w["lead"]
    assert isinstance(admin, httpx.AsyncClient) and isinstance(lead, httpx.AsyncClient)
    mine = await generate(lead, team_id="ta", key_alias="team-key")
    assert mine["team_id"] == "ta" and mine["user_id"] is None
    for_dev = await generate(lead, team_id="ta", user_id="dev")
    assert for_dev["user_id"] == "dev"
    updated = await lead.post("/key/update", json={"key": mine["token"], "rpm_limit": 3, "spend": 0})
    assert updated.status_code == 200 and updated.json()["rpm_limit"] == 3
    assert (await lead.post("/key/block", json={"key": mine["token"]})).json()["blocked"] is True
    assert (await lead.post("/key/regenerate", json={"key": for_dev["token"]})).status_code == 200
    listed = (await lead.get("/key/list", params={"team_id": "ta"})).json()
    assert listed["total_count"] == len(listed["keys"]) >= 2
    other = await generate(admin, team_id="tb", key_alias="b-key")
    for method, path, body in (("POST", "/key/update", {"key": other["token"], "rpm_limit": 1}),
                               ("POST", "/key/delete", {"keys": [other["token"]]}),
                               ("POST", "/key/block", {"key": other["token"]}),
                               ("POST", "/key/generate", {"team_id": "tb"}),
                               ("POST", "/key/update", {"key": mine["token"], "team_id": "tb"}),
                               ("POST", "/key/generate", {"team_id": "ta", "user_id": "boss"}),
                               ("POST", "/key/generate", {"team_id": "ta", "user_id": "watcher"}),
                               ("POST", "/key/generate", {"team_id": "ta", "user_id": "peer"}),
                               ("POST", "/team/member_add", {"team_id": "ta", "member": {"user_id": "peer",
                                                                                         "role": "user"}}),
                               ("POST", "/team/member_update", {"team_id": "ta", "user_id": "dev", "role": "admin"}),
                               ("POST", "/team/update", {"team_id": "ta", "rpm_limit": 1}),
                               ("GET", "/team/info?team_id=tb", None), ("GET", "/key/list?team_id=tb", None),
                               ("GET", "/user/list", None)):
        response = await lead.request(method, path, json=body)
        assert error_of(response, 403)["type"] == "permission_error", (path, body)
    boss_key = await generate(admin, team_id="ta", user_id="boss")
    assert error_of(await lead.post("/key/regenerate", json={"key": boss_key["token"]}), 403)  # no way up
    info = (await lead.get("/team/info", params={"team_id": "ta"})).json()
    assert {m["user_id"] for m in info["team_info"]["members_with_roles"]} == {"lead", "dev", "boss", "watcher"}
    assert (await lead.post("/key/delete", json={"keys": [mine["token"]]})).json()["deleted_keys"] == [mine["token"]]
    assert (await admin.get("/key/info", params={"key": other["token"]})).json()["info"]["rpm_limit"] is None


async def test_an_internal_user_manages_only_its_own_keys(env: AdminEnv):
    w = await _world(env)
    admin, dev = w["admin"], w["dev"]
    assert isinstance(admin, httpx.AsyncClient) and isinstance(dev, httpx.AsyncClient)
    own = await generate(dev, key_alias="dev-own")
    assert own["user_id"] == "dev" and own["team_id"] is None
    in_team = await generate(dev, team_id="ta")
    assert in_team["user_id"] == "dev"
    assert (await dev.post("/key/update", json={"key": own["token"], "tpm_limit": 9})).json()["tpm_limit"] == 9
    assert (await dev.post("/key/block", json={"key": own["token"]})).status_code == 200
    assert (await dev.post("/key/unblock", json={"key": own["token"]})).status_code == 200
    listed = (await dev.get("/key/list", params={"return_full_object": "true"})).json()
    assert {k["user_id"] for k in listed["keys"]} == {"dev"} and listed["total_count"] == 3
    assert (await dev.get("/key/info", params={"key": own["token"]})).status_code == 200
    someone = await generate(admin, key_alias="someone-else", user_id="peer")
    for method, path, body in (("POST", "/key/update", {"key": someone["token"], "rpm_limit": 1}),
                               ("POST", "/key/delete", {"keys": [someone["token"]]}),
                               ("POST", "/key/delete", {"key_aliases": ["someone-else"]}),
                               ("POST", "/key/regenerate", {"key": someone["token"]}),
                               ("POST", "/key/generate", {"user_id": "peer"}),
                               ("POST", "/key/generate", {"team_id": "tb"}),
                               ("POST", "/key/generate", {"spend": 5}),
                               ("POST", "/key/update", {"key": own["token"], "spend": 0}),
                               ("POST", "/key/update", {"key": own["token"], "user_id": "peer"}),
                               ("GET", f"/key/info?key={someone['token']}", None),
                               ("GET", "/key/list?user_id=peer", None), ("GET", "/key/list?team_id=tb", None),
                               ("GET", "/user/info?user_id=peer", None), ("POST", "/user/new", {}),
                               ("POST", "/team/new", {})):
        response = await dev.request(method, path, json=body)
        assert error_of(response, 403)["type"] == "permission_error", (path, body)
    assert (await dev.post("/key/delete", json={"keys": [own["token"]]})).json()["deleted_keys"] == [own["token"]]


async def test_a_viewer_reads_and_changes_nothing(env: AdminEnv):
    w = await _world(env)
    admin, watcher = w["admin"], w["watcher"]
    assert isinstance(admin, httpx.AsyncClient) and isinstance(watcher, httpx.AsyncClient)
    key = await generate(admin, team_id="ta", key_alias="seen")
    assert (await watcher.get("/key/info", params={"key": key["token"]})).status_code == 200
    assert (await watcher.get("/key/list")).json()["total_count"] == 6
    assert (await watcher.get("/team/info", params={"team_id": "tb"})).status_code == 200
    assert (await watcher.get("/user/list")).json()["total"] == 5
    assert (await watcher.get("/user/info", params={"user_id": "dev"})).status_code == 200
    for method, path, body in (("POST", "/key/generate", {}), ("POST", "/key/update", {"key": key["token"]}),
                               ("POST", "/key/delete", {"keys": [key["token"]]}),
                               ("POST", "/key/block", {"key": key["token"]}),
                               ("POST", "/team/new", {}), ("POST", "/user/new", {}),
                               ("POST", "/user/update", {"user_id": "dev", "user_role": "proxy_admin"}),
                               ("POST", "/team/member_add", {"team_id": "ta", "member": {"user_id": "dev",
                                                                                         "role": "admin"}})):
        error = error_of(await watcher.request(method, path, json=body), 403)
        assert error["code"] == "read_only", (path, error)
    boss = w["boss"]
    assert isinstance(boss, httpx.AsyncClient)  # a proxy_admin user's key does everything
    assert (await boss.post("/user/update", json={"user_id": "dev", "user_alias": "D"})).status_code == 200
    assert (await boss.post("/team/new", json={"team_id": "tc"})).status_code == 200
