"""The admin API's reads: spend logs by page with filters, spend reports from the daily roll-ups."""

from __future__ import annotations

import datetime as dt

import pytest
import pytest_asyncio
import sqlalchemy as sa

from gateway.db.engine import Database
from gateway.db.models import Team, VerificationToken
from gateway.db.queries import spend_logs, spend_report
from gateway.db.spend import insert_spend_rows, normalise_row
from tests.db.rows import DAY, spend_row


@pytest_asyncio.fixture(loop_scope="function")
async def filled(db: Database) -> Database:
    async with db.sessions() as session, session.begin():
        session.add(Team(team_id="t1", team_alias="Team One"))
        await session.flush()
        session.add(VerificationToken(token="hash-b", key_alias="alias-b", key_prefix="sk-b…", team_id="t1"))
    rows = [spend_row(i) for i in range(10)]  # 2026-11-30, key a, no team, jev
    rows += [spend_row(i, api_key="hash-b", key_alias="alias-b", team_id="t1", model_group="luna",
                       model="openai/luna", spend=1.0, startTime=DAY + dt.timedelta(days=1, seconds=i))
             for i in range(10, 15)]  # 2026-12-01
    rows += [spend_row(15, startTime=DAY + dt.timedelta(days=2), status=429, error_class="RateLimited")]
    await insert_spend_rows(db, [normalise_row(r) for r in rows])
    return db


async def test_pages_newest_first_with_the_total(filled: Database) -> None:
    page1, total = await spend_logs(filled, page_size=6)
    page3, _ = await spend_logs(filled, page=3, page_size=6)
    assert total == 16 and len(page1) == 6 and len(page3) == 4
    assert page1[0]["request_id"] == "req-15" and page3[-1]["request_id"] == "req-0"
    assert set(page1[0]) >= {"request_id", "api_key", "startTime", "endTime", "metadata", "spend"}
    assert (await spend_logs(filled, page=9))[0] == []


@pytest.mark.parametrize(("filters", "expected"), [
    ({"api_key": "hash-b"}, 5),
    ({"key_alias": "alias-a"}, 11),
    ({"team_id": "t1"}, 5),
    ({"model": "luna"}, 5),
    ({"model": "typesafe/jev-latest"}, 11),
    ({"request_id": "req-3"}, 1),
    ({"start_date": "2026-12-01"}, 6),
    ({"end_date": "2026-11-30"}, 10),  # a date is the whole day
    ({"start_date": dt.date(2026, 12, 1), "end_date": dt.date(2026, 12, 1)}, 5),
    ({"start_date": "2026-11-30T12:00:05+00:00", "end_date": "2026-11-30T12:00:07Z"}, 3),  # instants, both in
    ({"api_key": "hash-b", "team_id": "nope"}, 0),
    ({"key_alias": "x' OR '1'='1"}, 0),  # bound, not spliced into SQL
])
async def test_filters(filled: Database, filters: dict[str, object], expected: int) -> None:
    rows, total = await spend_logs(filled, **filters, page_size=100)  # type: ignore[arg-type]
    assert total == expected == len(rows)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"page": 0}, "page"), ({"page_size": 0}, "page_size"), ({"page_size": 5000}, "page_size"),
    ({"start_date": "yesterday"}, "start_date"),
])
async def test_bad_parameters_name_themselves(filled: Database, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        await spend_logs(filled, **kwargs)  # type: ignore[arg-type]


async def test_report_by_day(filled: Database) -> None:
    report = await spend_report(filled, start_date="2026-11-01", end_date="2026-12-31", group_by="day")
    assert [(r["date"], r["requests"], r["spend"], r["failed_requests"]) for r in report] == [
        (dt.date(2026, 11, 30), 10, 5.0, 0), (dt.date(2026, 12, 1), 5, 5.0, 0), (dt.date(2026, 12, 2), 1, 0.5, 1)]
    assert report[0]["prompt_tokens"] == 100 and report[0]["cache_hits"] == 10


async def test_report_by_key_team_and_model(filled: Database) -> None:
    window = {"start_date": dt.date(2026, 11, 30), "end_date": dt.date(2026, 12, 1)}
    by_key = await spend_report(filled, **window, group_by="key")
    # hash-a has no key row (deleted): its spend still shows the alias its rows carried, not a bare hash
    assert [(r["api_key"], r["key_alias"], r["spend"]) for r in by_key] == [("hash-a", "alias-a", 5.0),
                                                                            ("hash-b", "alias-b", 5.0)]
    by_team = await spend_report(filled, **window, group_by="team")
    assert {(r["team_id"], r["team_alias"], r["requests"]) for r in by_team} == {("", None, 10), ("t1", "Team One", 5)}
    by_model = await spend_report(filled, **window, group_by="model")
    assert {r["model"]: r["requests"] for r in by_model} == {"typesafe/jev-latest": 10, "openai/luna": 5}
    by_group = await spend_report(filled, start_date="2026-12-01", end_date="2026-12-02", group_by="model_group",
                                  api_key="hash-a")
    assert [(r["model_group"], r["requests"]) for r in by_group] == [("jev", 1)]
    assert await spend_report(filled, start_date="2027-01-01", end_date="2027-01-31", group_by="team") == []


async def test_report_refuses_an_unknown_grouping(filled: Database) -> None:
    with pytest.raises(ValueError, match="group_by"):
        await spend_report(filled, start_date="2026-11-30", end_date="2026-11-30", group_by="customer")  # type: ignore[arg-type]


async def test_models_read_and_write_through_the_orm(db: Database) -> None:
    async with db.sessions() as session, session.begin():
        team = Team(team_alias="x", models=["jev"], max_budget=10.0, metadata_={"owner": "a"})
        session.add(team)
        await session.flush()
        session.add(VerificationToken(token="h" * 64, team_id=team.team_id, models=["jev"], tags=["prod"]))
    async with db.sessions() as session:
        key = (await session.execute(sa.select(VerificationToken))).scalar_one()
        assert key.team_id == team.team_id and key.models == ["jev"] and key.metadata_ == {} and not key.blocked
        assert key.created_at.tzinfo is not None and key.spend == 0.0
        loaded = await session.get(Team, team.team_id)
        assert loaded is not None and loaded.metadata_ == {"owner": "a"} and len(loaded.team_id) == 36
