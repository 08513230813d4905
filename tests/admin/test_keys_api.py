"""The /key/* routes over HTTP, on SQLite and PostgreSQL: generate, info, update, block and unblock (seen by a
second gateway instance within the key cache's CHECK_S), regenerate, delete, list paging; master key only, in OpenAI's
error envelope."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx

from gateway.auth import store
from gateway.auth.keys import is_hash_id
from tests.admin.conftest import MASTER, AdminEnv
from tests.key_changes import after_change


async def generate(client: httpx.AsyncClient, **fields: object) -> dict:
    response = await client.post("/key/generate", json=fields)
    assert response.status_code == 200, response.text
    return response.json()


def refused_as(code: str) -> Callable[[httpx.Response], bool]:
    """A response that refuses the key with ``code`` (403)."""
    return lambda r: r.status_code == 403 and r.json()["error"]["code"] == code


def accepted(response: httpx.Response) -> bool:
    return response.status_code == 200


def error_of(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]


async def test_generate_shows_the_key_once_and_stores_only_its_hash(env: AdminEnv):
    admin = env.client()
    made = await generate(admin, key_alias="ci", models=["smollm2"], max_budget=5, budget_duration="30d",
                          rpm_limit=60, tpm_limit=1000, max_parallel_requests=2, duration="7d",
                          metadata={"owner": "qa"}, tags=["ci"])
    key, token = made["key"], made["token"]
    assert key.startswith("sk-") and len(key) == 46 and is_hash_id(token)
    assert made["key_name"] == key[:7] + "..." and made["key_alias"] == "ci"
    assert made["spend"] == 0 and made["blocked"] is False and made["models"] == ["smollm2"]
    assert datetime.fromisoformat(made["budget_reset_at"]) > datetime.now(UTC)
    assert timedelta(days=6) < datetime.fromisoformat(made["expires"]) - datetime.now(UTC) <= timedelta(days=7)
    for ref in (key, token):
        info = (await admin.get("/key/info", params={"key": ref})).json()
        assert info["key"] == token and info["info"]["rpm_limit"] == 60 and key not in str(info)
    async with env.db.engine.connect() as conn:
        rows = (await conn.exec_driver_sql("SELECT * FROM verification_tokens")).all()
    assert len(rows) == 1 and key not in str(rows) and key[3:] not in str(rows)


async def test_a_virtual_key_reads_its_own_info_and_nothing_else(env: AdminEnv):
    admin = env.client()
    mine, other = await generate(admin, key_alias="mine", rpm_limit=5), await generate(admin, key_alias="other")
    me = env.client(key=mine["key"])
    own = await me.get("/key/info")
    assert own.status_code == 200 and own.json()["info"]["key_alias"] == "mine"
    assert own.json()["info"]["rpm_limit"] == 5 and mine["key"] not in own.text
    assert (await me.get("/key/info", params={"key": mine["token"]})).status_code == 200
    error = error_of(await me.get("/key/info", params={"key": other["token"]}), 403)
    assert error["type"] == "permission_error"
    for method, path in (("post", "/key/generate"), ("get", "/key/list"), ("post", "/key/block"),
                         ("get", "/team/list"), ("get", "/spend/logs")):
        response = await me.request(method.upper(), path, json={} if method == "post" else None)
        assert error_of(response, 403)["code"] == "admin_only"


async def test_update_changes_only_the_named_fields(env: AdminEnv):
    admin = env.client()
    made = await generate(admin, key_alias="u", rpm_limit=10, tpm_limit=100, duration="1d", models=["a"])
    updated = await admin.post("/key/update", json={"key": made["key"], "rpm_limit": 20, "models": ["a", "b"],
                                                    "budget_duration": "1h", "max_budget": 1.5})
    assert updated.status_code == 200, updated.text
    body = updated.json()
    assert (body["rpm_limit"], body["tpm_limit"], body["models"], body["max_budget"]) == (20, 100, ["a", "b"], 1.5)
    assert body["expires"] == made["expires"] and made["key"] not in updated.text
    cleared = (await admin.post("/key/update", json={"key": made["token"], "rpm_limit": None, "duration": None,
                                                     "key_alias": "renamed", "spend": 0})).json()
    assert cleared["rpm_limit"] is None and cleared["expires"] is None and cleared["key_alias"] == "renamed"
    assert cleared["budget_duration"] == "1h"


async def test_update_and_generate_refuse_bad_fields_naming_them(env: AdminEnv):
    admin = env.client()
    made = await generate(admin, key_alias="taken")
    cases = [
        ({"rpm_limit": -1}, "rpm_limit"), ({"max_budget": "lots"}, "max_budget"),
        ({"budget_duration": "1hr"}, "budget_duration"), ({"duration": "forever"}, "duration"),
        ({"models": ["m"] * 101}, "models"), ({"key_alias": "x" * 256}, "key_alias"),
        ({"user_id": "someone"}, "user_id"), ({"metadata": {"blob": "x" * 20_000}}, "metadata"),
        ({"tags": ["t\n"]}, "tags[0]"), ({"team_id": "no team"}, "team_id"),
        ({"key_alias": "taken"}, "key_alias"), ({"team_id": "missing-team"}, "team_id"),
    ]
    for fields, param in cases:
        missing = fields.get("team_id") == "missing-team" or "user_id" in fields  # names no team / no user
        error = error_of(await admin.post("/key/generate", json=fields), 404 if missing else 400)
        assert error["param"] == param, (fields, error)
    error = error_of(await admin.post("/key/update", json={"key": made["token"], "max_parallel_requests": -5}), 400)
    assert error["param"] == "max_parallel_requests"
    assert error_of(await admin.post("/key/update", json={"key": "sk-unknown", "rpm_limit": 1}), 404)["param"] == "key"
    assert error_of(await admin.post("/key/update", json={"rpm_limit": 1}), 400)["param"] == "key"
    assert error_of(await admin.post("/key/generate", content=b"{not json", headers={"content-type":
                                                                                      "application/json"}), 400)


async def test_a_blocked_key_is_refused_by_another_instance_within_a_second(env: AdminEnv):
    one, two = env.app(), env.app()  # two gateway processes: one database, one shared state, a cache each
    admin = env.client(one)
    made = await generate(admin, key_alias="b")
    caller = env.client(two, key=made["key"])
    assert (await caller.get("/key/info")).status_code == 200  # cached in instance two now
    blocked, response = await after_change(lambda: admin.post("/key/block", json={"key": made["key"]}),
                                           lambda: caller.get("/key/info"), refused_as("key_blocked"), "the block")
    assert blocked.status_code == 200 and blocked.json()["blocked"] is True
    assert error_of(response, 403)["code"] == "key_blocked"
    unblocked, _ = await after_change(lambda: admin.post("/key/unblock", json={"key": made["token"]}),
                                      lambda: caller.get("/key/info"), accepted, "the unblock")
    assert unblocked.json()["blocked"] is False


async def test_regenerate_gives_a_new_key_once_and_the_old_one_stops(env: AdminEnv):
    one, two = env.app(), env.app()
    admin = env.client(one)
    made = await generate(admin, key_alias="r", rpm_limit=7)
    old = env.client(two, key=made["key"])
    assert (await old.get("/key/info")).status_code == 200
    response, refused = await after_change(
        lambda: admin.post("/key/regenerate", json={"key": made["key"], "tpm_limit": 9}),
        lambda: old.get("/key/info"), lambda r: r.status_code == 401, "the regeneration")
    assert response.status_code == 200, response.text
    new = response.json()
    assert new["key"] != made["key"] and new["token"] != made["token"] and new["key_alias"] == "r"
    assert (new["rpm_limit"], new["tpm_limit"]) == (7, 9)
    assert error_of(refused, 401)["type"] == "authentication_error"
    fresh = await env.client(two, key=new["key"]).get("/key/info")
    assert fresh.status_code == 200 and fresh.json()["key"] == new["token"] and new["key"] not in fresh.text


async def test_delete_by_key_id_and_alias(env: AdminEnv):
    admin = env.client()
    a, b, c = [await generate(admin, key_alias=name) for name in "abc"]
    response = await admin.post("/key/delete", json={"keys": [a["key"], b["token"], "sk-not-a-key"],
                                                     "key_aliases": ["c", "nobody"]})
    assert response.status_code == 200
    assert sorted(response.json()["deleted_keys"]) == sorted([a["token"], b["token"], c["token"]])
    assert a["key"] not in response.text
    for made in (a, b, c):
        assert error_of(await env.client(key=made["key"]).get("/key/info"), 401)["code"] == "invalid_api_key"
    assert error_of(await admin.post("/key/delete", json={}), 400)["param"] == "keys"
    assert error_of(await admin.post("/key/delete", json={"keys": ["k"] * 101}), 400)["param"] == "keys"


async def test_list_pages_through_every_key_without_showing_any(env: AdminEnv):
    admin = env.client()
    made = [await generate(admin, key_alias=f"k{i:02}") for i in range(23)]
    seen: list[str] = []
    for page in (1, 2, 3):
        response = await admin.get("/key/list", params={"page": page, "size": 10})
        body = response.json()
        assert (body["total_count"], body["current_page"], body["total_pages"]) == (23, page, 3)
        seen += body["keys"]
        assert all(m["key"] not in response.text for m in made)
    assert sorted(seen) == sorted(m["token"] for m in made)
    full = (await admin.get("/key/list", params={"size": 5, "return_full_object": "true",
                                                 "key_alias": "k07"})).json()
    assert full["total_count"] == 1 and full["keys"][0]["key_alias"] == "k07"
    assert full["keys"][0]["key_name"] == made[7]["key"][:7] + "..."
    assert (await admin.get("/key/list", params={"page": 9})).json()["keys"] == []
    for bad in ({"size": 0}, {"size": 101}, {"page": 0}, {"page": "x"}):
        assert error_of(await admin.get("/key/list", params=bad), 400)["param"] in {"size", "page"}


async def test_admin_routes_need_the_master_key(env: AdminEnv):
    for client, status, code in ((env.client(key=None), 401, "missing_api_key"),
                                 (env.client(key="sk-wrong"), 401, "invalid_api_key"),
                                 (env.client(key=MASTER + "x"), 401, "invalid_api_key")):
        error = error_of(await client.post("/key/generate", json={}), status)
        assert error["code"] == code and error["type"] == "authentication_error"
    via_header = env.client(key=None)
    assert (await via_header.get("/key/list", headers={"x-api-key": MASTER})).status_code == 200
    assert (await via_header.get("/key/list", headers={"api-key": MASTER})).status_code == 200


async def test_without_a_master_key_the_admin_api_is_off_and_without_a_db_it_says_so(env: AdminEnv):
    off = env.client(env.app(general_settings={"salt_key": "a-salt-for-the-admin-tests-0123456789"}))
    assert error_of(await off.get("/key/list"), 403)["code"] == "admin_disabled"
    no_db = env.client(env.app(db=None))
    assert error_of(await no_db.get("/key/list"), 503)["code"] == "no_db_connection"
    assert error_of(await env.client(env.app(db=None), key=None).get("/key/list"), 401)


async def test_expired_keys_are_refused(env: AdminEnv):
    admin = env.client()
    made = await generate(admin, key_alias="e", duration="1d")
    await store.update_key(env.db, made["token"], {"expires": datetime.now(UTC) - timedelta(seconds=1)})
    assert error_of(await env.client(key=made["key"]).get("/key/info"), 403)["code"] == "key_expired"


async def test_a_big_body_is_413_and_the_routes_are_in_openapi(sqlite_env: AdminEnv):
    admin = sqlite_env.client()
    error = error_of(await admin.post("/key/generate", content=b"{" + b" " * 70_000 + b"}",
                                      headers={"content-type": "application/json"}), 413)
    assert error["code"] == "request_too_large"
    app = sqlite_env.app()
    app.openapi_url = "/openapi.json"
    paths = app.openapi()["paths"]
    for path in ("/key/generate", "/key/info", "/key/update", "/key/delete", "/key/list", "/key/block",
                 "/key/unblock", "/key/regenerate", "/team/new", "/team/info", "/team/update", "/team/delete",
                 "/team/list", "/spend/logs", "/global/spend/report"):
        assert path in paths, path
    assert "GenerateKeyRequest" in app.openapi()["components"]["schemas"]


async def test_a_block_reaches_another_process_through_redis_not_just_the_ttl(sqlite_env: AdminEnv):
    """Two instances, each with its own Redis connection and a key cache that would keep entries for a minute:
    the block is seen within CHECK_S only because ``auth:version`` moved in Redis."""
    from gateway.auth.cache import KeyCache
    from gateway.auth.identity import Authenticator
    from gateway.auth.keys import KeyHasher
    from tests.admin.conftest import SALT
    from tests.shared_state.conftest import make_redis_state

    states = [make_redis_state(), make_redis_state()]
    apps = []
    for state in states:
        app = sqlite_env.app(shared=state)
        app.state.gateway.auth = Authenticator(KeyHasher(SALT.encode()), MASTER,
                                               lambda token: store.load_entry(sqlite_env.db, token),
                                               KeyCache(state, ttl_s=60))
        apps.append(app)
    try:
        admin = sqlite_env.client(apps[0])
        made = await generate(admin, key_alias="redis")
        caller = sqlite_env.client(apps[1], key=made["key"])
        assert (await caller.get("/key/info")).status_code == 200
        await after_change(lambda: admin.post("/key/block", json={"key": made["key"]}),
                           lambda: caller.get("/key/info"), refused_as("key_blocked"), "the block through Redis")
    finally:
        for state in states:
            await state.close()


async def test_a_database_error_is_a_503_in_the_envelope(sqlite_env: AdminEnv, monkeypatch, caplog):
    import sqlalchemy.exc

    made = await generate(sqlite_env.client(), key_alias="down")

    async def down(*args: object, **kwargs: object) -> None:
        raise sqlalchemy.exc.OperationalError("SELECT ...", {"token": made["token"]}, ConnectionError("gone"))

    monkeypatch.setattr(store, "list_keys", down)
    error = error_of(await sqlite_env.client().get("/key/list"), 503)
    assert error["code"] == "db_unavailable" and made["token"] not in error["message"]
    assert "OperationalError" in caplog.text and made["token"] not in caplog.text
