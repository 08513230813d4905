"""Spend by user (issue 20 item 2), over HTTP on SQLite and PostgreSQL: spend rows and their daily
roll-ups carry the key's user (``spend_logs."user"``, ``daily_spend.user_id``, ``users.spend``);
/spend/logs, /spend/logs/v2 and /global/spend/report filter by ``user_id`` and group by user, and
LiteLLM's daily summary fills ``users``; and who reads what, by role: a proxy admin or viewer every
row, an internal user (or viewer) its own user's rows, a team admin its teams' rows, a key of no user
nothing, with a filter outside that refused (403) and no filter narrowed silently."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest
import sqlalchemy as sa

from gateway.auth import store, user_store
from gateway.auth.records import Membership
from gateway.db.models import daily_spend, users
from gateway.db.spend import insert_spend_rows, normalise_row
from tests.admin.conftest import AdminEnv
from tests.admin.test_keys_api import error_of, generate

DAY = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
SPAN = {"start_date": "2026-11-30", "end_date": "2026-11-30"}
TEAM_A, TEAM_B = "team-a", "team-b"


class World:
    """Users ``u-admin`` (proxy_admin), ``u-viewer`` (proxy_admin_viewer), ``u-alice`` (internal_user,
    admin of team A), ``u-bob`` (internal_user_viewer, a plain member of team A) and ``u-carol``
    (internal_user in team B); a key each, ``alice``'s and ``bob``'s in team A, ``carol``'s in team B,
    plus ``nobody``, a key of no user in team A. One spend row per key (``nobody``'s: 0.5, the others
    0.25 each; request ids ``req-<name>``)."""

    def __init__(self) -> None:
        self.keys: dict[str, dict] = {}

    async def build(self, env: AdminEnv) -> World:
        master = env.client()
        for team in (TEAM_A, TEAM_B):
            assert (await master.post("/team/new", json={"team_id": team, "team_alias": team})).status_code == 200
        people = {"admin": ("proxy_admin", None, None), "viewer": ("proxy_admin_viewer", None, None),
                  "alice": ("internal_user", TEAM_A, "admin"), "bob": ("internal_user_viewer", TEAM_A, "user"),
                  "carol": ("internal_user", TEAM_B, "user")}
        for name, (role, team, team_role) in people.items():
            await user_store.insert_user(env.db, {"user_id": f"u-{name}", "user_role": role},
                                         [Membership(team, team_role)] if team and team_role else [])
        rows = []
        for name, (_, team, _) in [*people.items(), ("nobody", (None, TEAM_A, None))]:
            key = self.keys[name] = await generate(master, key_alias=name, team_id=team)
            user_id = None if name == "nobody" else f"u-{name}"
            if user_id is not None:
                await store.update_key(env.db, key["token"], {"user_id": user_id})
            rows.append(normalise_row({
                "request_id": f"req-{name}", "api_key": key["token"], "key_alias": name, "team_id": team,
                "user": user_id, "model_group": "jev", "model": "typesafe/jev-latest",
                "spend": 0.5 if name == "nobody" else 0.25, "prompt_tokens": 10, "completion_tokens": 1,
                "status": 200, "startTime": DAY, "endTime": DAY}))
        assert await insert_spend_rows(env.db, rows) == len(rows)
        return self

    def client(self, env: AdminEnv, name: str) -> httpx.AsyncClient:
        return env.client(key=self.keys[name]["key"])


async def ids(client: httpx.AsyncClient, path: str = "/spend/logs", **params: object) -> set[str]:
    response = await client.get(path, params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    return {row["request_id"] for row in (body["data"] if isinstance(body, dict) else body)}


ALL = {"req-admin", "req-viewer", "req-alice", "req-bob", "req-carol", "req-nobody"}


async def test_spend_rows_and_daily_roll_ups_carry_the_user(env: AdminEnv):
    world = await World().build(env)
    master = env.client()
    rows = (await master.get("/spend/logs")).json()
    assert {row["request_id"]: row["user"] for row in rows} == {
        "req-admin": "u-admin", "req-viewer": "u-viewer", "req-alice": "u-alice", "req-bob": "u-bob",
        "req-carol": "u-carol", "req-nobody": None}
    v2 = (await master.get("/spend/logs/v2", params={"user_id": "u-carol"})).json()
    assert [(r["request_id"], r["user"]) for r in v2["data"]] == [("req-carol", "u-carol")] and v2["total"] == 1
    assert await ids(master, user_id="u-alice") == {"req-alice"}
    assert await ids(master, user_id="u-alice", summarize=False, **SPAN) == {"req-alice"}
    assert await ids(master, user_id="u-nobody-such") == set()
    async with env.db.engine.connect() as conn:
        rolled = dict((await conn.execute(sa.select(daily_spend.c.user_id, sa.func.sum(daily_spend.c.spend))
                                          .group_by(daily_spend.c.user_id))).all())
        spent = dict((await conn.execute(sa.select(users.c.user_id, users.c.spend))).all())
    assert rolled == {"u-admin": 0.25, "u-viewer": 0.25, "u-alice": 0.25, "u-bob": 0.25, "u-carol": 0.25, "": 0.5}
    assert spent == {"u-admin": 0.25, "u-viewer": 0.25, "u-alice": 0.25, "u-bob": 0.25, "u-carol": 0.25}

    summary = (await master.get("/spend/logs", params=SPAN)).json()  # LiteLLM's users: spend per user
    assert len(summary) == 1 and summary[0]["spend"] == 1.75
    assert summary[0]["users"] == {"u-admin": 0.25, "u-viewer": 0.25, "u-alice": 0.25, "u-bob": 0.25,
                                   "u-carol": 0.25, "": 0.5}
    only = (await master.get("/spend/logs", params={**SPAN, "user_id": "u-bob"})).json()
    assert only == [{"startTime": "2026-11-30", "spend": 0.25, world.keys["bob"]["token"]: 0.25,
                     "users": {"u-bob": 0.25}, "models": {"typesafe/jev-latest": 0.25}}]

    report = (await master.get("/global/spend/report", params={**SPAN, "group_by": "user"})).json()
    assert {(e["user_id"], e["requests"]): e["spend"] for e in report} == {
        ("", 1): 0.5, **{(f"u-{n}", 1): 0.25 for n in ("admin", "viewer", "alice", "bob", "carol")}}
    assert report[0]["user_id"] == ""  # highest spend first
    mine = (await master.get("/global/spend/report", params={**SPAN, "group_by": "user", "user_id": "u-bob"})).json()
    assert [e["user_id"] for e in mine] == ["u-bob"]


@pytest.mark.parametrize("name", ["admin", "viewer"])
async def test_a_proxy_admin_or_viewer_reads_all_spend(env: AdminEnv, name: str):
    world = await World().build(env)
    client = world.client(env, name)
    assert await ids(client) == ALL == await ids(client, "/spend/logs/v2")
    assert await ids(client, user_id="u-carol") == {"req-carol"}
    assert await ids(client, team_id=TEAM_B) == {"req-carol"}
    days = (await client.get("/global/spend/report", params={**SPAN, "group_by": "day"})).json()
    assert [d["requests"] for d in days] == [6]


@pytest.mark.parametrize("name", ["bob", "carol"])  # an internal_user_viewer, an internal_user
async def test_an_internal_user_reads_its_own_users_spend(env: AdminEnv, name: str):
    world = await World().build(env)
    client = world.client(env, name)
    mine = {f"req-{name}"}
    for path in ("/spend/logs", "/spend/logs/v2", "/spend/logs/ui"):
        assert await ids(client, path) == mine  # no filter: narrowed to its own rows
        assert await ids(client, path, user_id=f"u-{name}") == mine
        assert await ids(client, path, api_key=world.keys[name]["key"]) == mine
    assert await ids(client, summarize=False, **SPAN) == mine
    summary = (await client.get("/spend/logs", params=SPAN)).json()
    assert summary[0]["users"] == {f"u-{name}": 0.25} and summary[0]["spend"] == 0.25
    report = (await client.get("/global/spend/report", params={**SPAN, "group_by": "team"})).json()
    assert [(e["requests"], e["spend"]) for e in report] == [(1, 0.25)]
    other = "alice"
    for path in ("/spend/logs", "/spend/logs/v2", "/global/spend/report"):
        for params, field in (({"user_id": f"u-{other}"}, "user_id"), ({"team_id": TEAM_A}, "team_id"),
                              ({"team_id": TEAM_B}, "team_id"), ({"api_key": world.keys[other]["token"]}, "api_key"),
                              ({"api_key": world.keys["nobody"]["key"]}, "api_key")):
            error = error_of(await client.get(path, params=params), 403)
            assert error["type"] == "permission_error" and error["param"] == field, (path, params, error)
            assert "req-" not in str(error) and "0.25" not in str(error)


async def test_a_team_admin_reads_its_teams_spend_and_its_own(env: AdminEnv):
    """alice: an internal user, admin of team A (with bob and nobody in it): team A's rows and her own."""
    world = await World().build(env)
    client = world.client(env, "alice")
    team_a = {"req-alice", "req-bob", "req-nobody"}
    assert await ids(client) == team_a == await ids(client, "/spend/logs/v2")
    assert await ids(client, team_id=TEAM_A) == team_a
    assert await ids(client, api_key=world.keys["nobody"]["key"]) == {"req-nobody"}  # a key of its team
    assert await ids(client, user_id="u-alice") == {"req-alice"}
    report = (await client.get("/global/spend/report", params={**SPAN, "group_by": "team", "team_id": TEAM_A})).json()
    assert [(e["team_id"], e["requests"], e["spend"]) for e in report] == [(TEAM_A, 3, 1.0)]
    summary = (await client.get("/spend/logs", params={**SPAN, "team_id": TEAM_A})).json()
    assert summary[0]["spend"] == 1.0 and summary[0]["users"] == {"u-alice": 0.25, "u-bob": 0.25, "": 0.5}
    for params, field in (({"team_id": TEAM_B}, "team_id"), ({"user_id": "u-carol"}, "user_id"),
                          ({"user_id": "u-bob"}, "user_id"), ({"api_key": world.keys["carol"]["key"]}, "api_key")):
        for path in ("/spend/logs", "/spend/logs/v2", "/global/spend/report"):
            assert error_of(await client.get(path, params=params), 403)["param"] == field, (path, params)


async def test_a_key_of_no_user_reads_no_spend(env: AdminEnv):
    world = await World().build(env)
    client = world.client(env, "nobody")
    for path in ("/spend/logs", "/spend/logs/v2", "/spend/logs/ui", "/global/spend/report"):
        error = error_of(await client.get(path), 403)
        assert error["type"] == "permission_error" and "no user" in error["message"]
        assert error_of(await client.get(path, params={"api_key": world.keys["nobody"]["key"]}), 403)
