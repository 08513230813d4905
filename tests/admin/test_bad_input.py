"""Bad input on the admin API (issue 19, items 8 and 11), over HTTP on SQLite and PostgreSQL: refused with a 400
naming the field before anything is written, and a listing that never fails on a row already stored."""

from __future__ import annotations

import httpx
import sqlalchemy as sa

from tests.admin.conftest import AdminEnv
from tests.admin.test_keys_api import error_of, generate

JSON = {"content-type": "application/json"}


async def post_raw(client: httpx.AsyncClient, path: str, text: str) -> httpx.Response:
    """``text`` sent as it is: what json= would never send (a repeated key, NaN, a lone surrogate escape)."""
    return await client.post(path, content=text.encode(), headers=JSON)


async def refused(admin: httpx.AsyncClient, cases: tuple[tuple[str, str, str], ...]) -> list[dict]:
    """Each (path, body text, field) answered 400 with the field as ``param`` and first in the message."""
    errors = []
    for path, text, param in cases:
        error = error_of(await post_raw(admin, path, text), 400)
        assert error["param"] == param and error["message"].startswith(param + ":"), (text, error)
        errors.append(error)
    return errors


async def counts(env: AdminEnv) -> tuple[int, int]:
    async with env.db.engine.connect() as conn:
        keys = (await conn.exec_driver_sql("SELECT count(*) FROM verification_tokens")).scalar_one()
        teams = (await conn.exec_driver_sql("SELECT count(*) FROM teams")).scalar_one()
    return int(keys), int(teams)


async def test_a_lone_surrogate_is_refused_before_anything_is_written(env: AdminEnv):
    admin = env.client()
    errors = await refused(admin, (
        ("/key/generate", '{"metadata": {"a": "\\ud800"}}', "metadata.a"),
        ("/team/new", '{"metadata": {"a": "\\ud800"}}', "metadata.a"),
        ("/team/new", '{"metadata": {"list": ["ok", "\\udfff"]}}', "metadata.list[1]"),
        ("/key/generate", '{"key_alias": "ops\\udc00"}', "key_alias")))
    assert all("surrogate" in error["message"] for error in errors), errors
    assert await counts(env) == (0, 0)
    # A pair of escapes is one character, and fine.
    made = await post_raw(admin, "/key/generate", '{"metadata": {"a": "\\ud83d\\ude00"}}')
    assert made.status_code == 200 and made.json()["metadata"] == {"a": "\U0001f600"}
    assert (await admin.get("/key/list", params={"return_full_object": "true"})).status_code == 200


async def test_a_listing_shows_a_stored_row_that_holds_a_lone_surrogate(sqlite_env: AdminEnv):
    """A row written before the refusal (or by hand): SQLite keeps JSON as text, so it can hold the escape."""
    env = sqlite_env
    admin = env.client()
    key = await generate(admin, key_alias="stored")
    assert (await admin.post("/team/new", json={"team_id": "t-stored"})).status_code == 200
    async with env.db.engine.begin() as conn:
        for table in ("verification_tokens", "teams"):
            await conn.exec_driver_sql(f"UPDATE {table} SET metadata = ?, models = ?",
                                       ('{"a": "\\ud800", "\\udc01": 1}', '["m\\ud800"]'))
    for path, params in (("/key/list", {"return_full_object": "true"}), ("/team/list", {}),
                         ("/team/info", {"team_id": "t-stored"}), ("/key/info", {"key": key["token"]})):
        response = await admin.get(path, params=params)
        assert response.status_code == 200, (path, response.text)
        assert "\ufffd" in response.text and '"a":"\ufffd"' in response.content.decode(), (path, response.text)


async def test_repeated_keys_nan_and_numbers_in_disguise_are_refused_naming_the_field(env: AdminEnv):
    admin = env.client()
    await refused(admin, (
        ("/key/generate", '{"key_alias": "a", "key_alias": "b"}', "key_alias"),
        ("/key/generate", '{"metadata": {"x": 1, "x": 2}}', "metadata.x"),
        ("/team/new", '{"team_id": "t1", "max_budget": 1, "max_budget": 1000}', "max_budget"),
        ("/key/generate", '{"metadata": {"a": NaN}}', "metadata.a"),
        ("/key/generate", '{"metadata": {"deep": [1, Infinity]}}', "metadata.deep[1]"),
        ("/team/new", '{"metadata": {"a": 1e999}}', "metadata.a"),
        ("/key/generate", '{"max_budget": "10"}', "max_budget"),
        ("/key/generate", '{"max_budget": true}', "max_budget"),
        ("/team/new", '{"max_budget": false}', "max_budget"),
        ("/key/generate", '{"rpm_limit": true}', "rpm_limit"),
        ("/key/generate", '{"tpm_limit": "100"}', "tpm_limit"),
        ("/team/new", '{"max_parallel_requests": 2.5}', "max_parallel_requests"),
        ("/key/generate", '{"blocked": "false"}', "blocked")))
    assert await counts(env) == (0, 0)
    made = await generate(admin, max_budget=10, rpm_limit=5, blocked=False)  # plain numbers stay fine
    assert made["max_budget"] == 10.0 and made["rpm_limit"] == 5
    update = await post_raw(admin, "/key/update", f'{{"key": "{made["token"]}", "spend": "1"}}')
    assert error_of(update, 400)["param"] == "spend"


async def test_aliases_differing_only_by_case_or_surrounding_space_are_refused(env: AdminEnv):
    admin = env.client()
    ops = await generate(admin, key_alias="Ops Team")
    for alias in ("ops team", "OPS TEAM", "Ops Team ", " Ops Team", "Ops Team\t"):
        error = error_of(await admin.post("/key/generate", json={"key_alias": alias}), 400)
        assert error["param"] == "key_alias", (alias, error)
    other = await generate(admin, key_alias="other")
    error = error_of(await admin.post("/key/update", json={"key": other["token"], "key_alias": "OPS team"}), 400)
    assert error["param"] == "key_alias" and error["code"] == "conflict"
    error = error_of(await admin.post("/team/new", json={"team_alias": "trailing "}), 400)
    assert error["param"] == "team_alias"
    # A key may change the case of its own alias.
    renamed = await admin.post("/key/update", json={"key": ops["token"], "key_alias": "ops team"})
    assert renamed.status_code == 200 and renamed.json()["key_alias"] == "ops team"
    assert await counts(env) == (2, 0)


async def test_a_listing_shows_stored_metadata_and_tags_of_the_wrong_shape_as_empty(env: AdminEnv):
    """Written by hand: metadata an array, tags a number. Both databases can hold them (JSON / JSONB)."""
    admin = env.client()
    key = await generate(admin, key_alias="shapes", metadata={"a": 1}, tags=["t"])
    assert (await admin.post("/team/new", json={"team_id": "t-shapes", "metadata": {"a": 1}})).status_code == 200
    cast = "CAST(:value AS JSONB)" if env.db.dialect == "postgresql" else ":value"
    async with env.db.engine.begin() as conn:
        await conn.execute(sa.text(f"UPDATE verification_tokens SET metadata = {cast}"), {"value": "[1, 2]"})
        await conn.execute(sa.text(f"UPDATE verification_tokens SET tags = {cast}"), {"value": "5"})
        await conn.execute(sa.text(f"UPDATE teams SET metadata = {cast}"), {"value": '"text"'})
    listed = await admin.get("/key/list", params={"return_full_object": "true"})
    assert listed.status_code == 200, listed.text
    assert listed.json()["keys"][0]["metadata"] == {} and listed.json()["keys"][0]["tags"] == []
    teams = await admin.get("/team/list")
    assert teams.status_code == 200 and teams.json()[0]["metadata"] == {}, teams.text
    assert (await admin.get("/key/info", params={"key": key["token"]})).status_code == 200
