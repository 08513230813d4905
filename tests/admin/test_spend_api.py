"""GET /spend/logs (LiteLLM's plain list and daily summary), GET /spend/logs/v2 (paged) and GET
/global/spend/report over HTTP, on SQLite and PostgreSQL: every filter, paging, the report's groupings, a
key given as the key or its id."""

from __future__ import annotations

import datetime as dt

from gateway.db.spend import insert_spend_rows, normalise_row
from tests.admin.conftest import AdminEnv
from tests.admin.test_keys_api import error_of, generate

DAY = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


async def seed(env: AdminEnv) -> tuple[dict, dict, str]:
    admin = env.client()
    team_id = (await admin.post("/team/new", json={"team_id": "team-s", "team_alias": "S"})).json()["team_id"]
    a = await generate(admin, key_alias="ka", team_id=team_id)
    b = await generate(admin, key_alias="kb")
    rows = []
    for i in range(12):
        key = a if i % 3 else b
        rows.append(normalise_row({
            "request_id": f"req-{i:02}", "api_key": key["token"], "key_alias": key["key_alias"],
            "team_id": team_id if key is a else None, "model_group": "jev" if i % 2 else "smollm2",
            "model": "typesafe/jev-latest" if i % 2 else "local/smollm2", "spend": 0.25,
            "prompt_tokens": 10, "completion_tokens": 1, "status": 200,
            "startTime": DAY + dt.timedelta(days=i // 6, seconds=i), "endTime": DAY + dt.timedelta(days=i // 6, seconds=i),
        }))
    assert await insert_spend_rows(env.db, rows) == 12
    return a, b, team_id


async def test_spend_logs_filters_and_pages(env: AdminEnv):
    a, b, team_id = await seed(env)
    admin = env.client()

    async def ids(**params: object) -> list[str]:
        response = await admin.get("/spend/logs/v2", params=params)
        assert response.status_code == 200, response.text
        return [row["request_id"] for row in response.json()["data"]]

    assert len(await ids()) == 12
    assert await ids(api_key=b["key"]) == ["req-09", "req-06", "req-03", "req-00"]
    assert await ids(api_key=b["token"]) == await ids(key_alias="kb")
    assert len(await ids(team_id=team_id)) == 8
    assert len(await ids(model="jev")) == 6 and len(await ids(model="local/smollm2")) == 6
    assert await ids(request_id="req-05") == ["req-05"]
    assert len(await ids(start_date="2026-12-01")) == 6 and len(await ids(end_date="2026-11-30")) == 6
    assert len(await ids(start_date=(DAY + dt.timedelta(seconds=3)).isoformat(), end_date="2026-11-30")) == 3
    body = (await admin.get("/spend/logs/v2", params={"page": 2, "page_size": 5})).json()
    assert (await admin.get("/spend/logs/ui", params={"page": 2, "page_size": 5})).json() == body
    assert (body["total"], body["page"], body["total_pages"], len(body["data"])) == (12, 2, 3, 5)
    assert a["key"] not in str(body) and b["key"] not in str(body)
    for bad in ({"api_key": "neither"}, {"start_date": "yesterday"}, {"page_size": 0}, {"page_size": 1001},
                {"start_date": "2026-12-02", "end_date": "2026-12-01"}):
        error_of(await admin.get("/spend/logs/v2", params=bad), 400)


async def test_spend_logs_answers_as_litellm_does(env: AdminEnv):
    """A plain list of rows, newest first; with both dates (and summarize, the default) one entry a day."""
    a, b, team_id = await seed(env)
    admin = env.client()

    async def listed(**params: object) -> list:
        response = await admin.get("/spend/logs", params=params)
        assert response.status_code == 200, response.text
        assert "x-litellm-spend-logs-truncated" not in response.headers
        return response.json()

    rows = await listed()
    assert isinstance(rows, list) and [r["request_id"] for r in rows][:2] == ["req-11", "req-10"] and len(rows) == 12
    assert rows[0]["api_key"] == a["token"] and rows[0]["spend"] == 0.25 and rows[0]["startTime"].startswith("2026")
    assert [r["request_id"] for r in await listed(api_key=b["key"])] == ["req-09", "req-06", "req-03", "req-00"]
    assert [r["request_id"] for r in await listed(request_id="req-05")] == ["req-05"]
    assert len(await listed(start_date="2026-12-01")) == 6  # one date alone: rows, as LiteLLM
    unsummarized = await listed(start_date="2026-12-01", end_date="2026-12-01", summarize=False)
    assert [r["request_id"] for r in unsummarized] == [f"req-{i:02}" for i in range(11, 5, -1)]
    assert a["key"] not in str(rows) and b["key"] not in str(rows)

    days = await listed(start_date="2026-11-30", end_date="2026-12-03")
    assert [(d["startTime"], d["spend"]) for d in days] == [("2026-11-30", 1.5), ("2026-12-01", 1.5),
                                                          ("2026-12-02", 0), ("2026-12-03", 0)]
    first = days[0]
    assert first[a["token"]] == 1.0 and first[b["token"]] == 0.5 and first["users"] == {"": 1.5}
    assert first["models"] == {"typesafe/jev-latest": 0.75, "local/smollm2": 0.75}
    only_b = await listed(start_date="2026-11-30", end_date="2026-12-01", api_key=b["token"])
    assert [(d["spend"], a["token"] in d) for d in only_b] == [(0.5, False), (0.5, False)]
    one = await listed(start_date="2026-11-30", end_date="2026-11-30", request_id="req-03")
    assert one == [{"startTime": "2026-11-30", "spend": 0.25, b["token"]: 0.25, "users": {"": 0.25},
                    "models": {"typesafe/jev-latest": 0.25}}]
    assert await listed(start_date="2027-01-01", end_date="2027-01-02") == []

    assert await listed(user_id="someone") == []  # the rows' user (none here: tests/admin/test_spend_by_user.py)
    for bad, field in (({"api_key": "neither"}, "api_key"), ({"start_date": "yesterday"}, "start_date"),
                       ({"summarize": "maybe"}, "summarize"),
                       ({"start_date": "2026-12-02", "end_date": "2026-12-01"}, "start_date"),
                       ({"start_date": "2000-01-01", "end_date": "2026-12-01"}, "end_date")):  # > 3660 days
        assert error_of(await admin.get("/spend/logs", params=bad), 400)["param"].startswith(field), bad


async def test_spend_report_groups(env: AdminEnv):
    a, b, team_id = await seed(env)
    admin = env.client()
    span = {"start_date": "2026-11-30", "end_date": "2026-12-01"}

    async def report(**params: object) -> list[dict]:
        response = await admin.get("/global/spend/report", params={**span, **params})
        assert response.status_code == 200, response.text
        return response.json()

    days = await report(group_by="day")
    assert [(d["date"], d["requests"]) for d in days] == [("2026-11-30", 6), ("2026-12-01", 6)]
    assert sum(d["spend"] for d in days) == 3.0
    models = {m["model"]: m["requests"] for m in await report(group_by="model")}
    assert models == {"typesafe/jev-latest": 6, "local/smollm2": 6}
    teams = {t["team_id"]: (t["team_alias"], t["requests"]) for t in await report(group_by="team")}
    assert teams == {team_id: ("S", 8), "": (None, 4)}
    keys = {k["api_key"]: k["key_alias"] for k in await report(group_by="api_key")}
    assert keys == {a["token"]: "ka", b["token"]: "kb"}
    assert [k["requests"] for k in await report(group_by="key", api_key=b["key"])] == [4]
    assert [t["requests"] for t in await report(group_by="team", team_id=team_id)] == [8]
    assert (await admin.get("/global/spend/report")).status_code == 200  # the last 30 days by default
    assert [(u["user_id"], u["requests"]) for u in await report(group_by="user")] == [("", 12)]
    assert error_of(await admin.get("/global/spend/report", params={"group_by": "customer"}), 400)["param"] == \
        "group_by"


async def test_spend_logs_caps_its_list_as_litellm_does(sqlite_env: AdminEnv):
    """Past MAX_LIST_ROWS rows the list stops, newest first, and says so in LiteLLM's header."""
    from gateway.db.queries import MAX_LIST_ROWS

    rows = [normalise_row({"request_id": f"cap-{i:05}", "api_key": "a" * 64, "spend": 0.0, "status": 200,
                           "startTime": DAY + dt.timedelta(seconds=i), "endTime": DAY + dt.timedelta(seconds=i)})
            for i in range(MAX_LIST_ROWS + 1)]
    assert await insert_spend_rows(sqlite_env.db, rows) == MAX_LIST_ROWS + 1
    response = await sqlite_env.client().get("/spend/logs")
    assert response.status_code == 200 and response.headers["x-litellm-spend-logs-truncated"] == "true"
    listed = response.json()
    assert len(listed) == MAX_LIST_ROWS and listed[0]["request_id"] == f"cap-{MAX_LIST_ROWS:05}"
