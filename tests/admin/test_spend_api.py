"""GET /spend/logs and GET /global/spend/report over HTTP, on SQLite and PostgreSQL: every filter, paging,
the report's groupings, a key given as the key or its id."""

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
        response = await admin.get("/spend/logs", params=params)
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
    body = (await admin.get("/spend/logs", params={"page": 2, "page_size": 5})).json()
    assert (body["total"], body["page"], body["total_pages"], len(body["data"])) == (12, 2, 3, 5)
    assert a["key"] not in str(body) and b["key"] not in str(body)
    for bad in ({"api_key": "neither"}, {"start_date": "yesterday"}, {"page_size": 0}, {"page_size": 1001},
                {"start_date": "2026-12-02", "end_date": "2026-12-01"}):
        error_of(await admin.get("/spend/logs", params=bad), 400)


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
    assert error_of(await admin.get("/global/spend/report", params={"group_by": "user"}), 400)["param"] == "group_by"
