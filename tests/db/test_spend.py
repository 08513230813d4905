"""Spend rows: normalised at append, inserted once by request_id, rolled up once."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from gateway.db.engine import Database
from gateway.db.models import teams, verification_tokens
from gateway.db.spend import insert_spend_rows, normalise_row, rollup
from tests.db.rows import DAY, rollup_totals, spend_count, spend_row


def test_normalise_fills_defaults_and_coerces() -> None:
    row = normalise_row({"request_id": "r", "prompt_tokens": "3", "completion_tokens": 4.0, "spend": None,
                         "startTime": "2026-11-30T10:00:00", "model": "x" * 300})
    assert row["api_key"] == "" and row["prompt_tokens"] == 3 and row["total_tokens"] == 7 and row["spend"] == 0.0
    assert row["startTime"] == dt.datetime(2026, 11, 30, 10, tzinfo=dt.UTC) == row["endTime"]
    assert len(row["model"]) == 255 and row["metadata"] == {}
    assert normalise_row({"request_id": "r", "startTime": 0})["startTime"] == dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    assert normalise_row({"request_id": "r", "spend": float("nan")})["spend"] == 0.0


@pytest.mark.parametrize(("row", "message"), [
    ({"request_id": "r", "prompt": "x"}, "unknown columns"),
    ({"model": "m"}, "request_id"),
    ({"request_id": ""}, "request_id"),
    ({"request_id": "r" * 300}, "longer than 255"),
    ({"request_id": "r", "startTime": []}, "not a time"),
])
def test_normalise_refuses_rows_that_could_never_be_stored(row: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        normalise_row(row)


def test_rollup_groups_by_utc_day_key_team_group_and_model() -> None:
    rows = [normalise_row(spend_row(1)), normalise_row(spend_row(2, status=502, error_class="UpstreamError")),
            normalise_row(spend_row(3, team_id="t1")),
            normalise_row(spend_row(4, startTime=DAY + dt.timedelta(hours=13)))]
    totals = rollup(rows)
    assert [(t["date"].isoformat(), t["team_id"], t["requests"], t["failed_requests"]) for t in totals] == [
        ("2026-11-30", "", 2, 1), ("2026-11-30", "t1", 1, 0), ("2026-12-01", "", 1, 0)]


async def test_insert_is_idempotent_and_rolls_up_once(db: Database) -> None:
    rows = [normalise_row(spend_row(i)) for i in range(20)]
    assert await insert_spend_rows(db, rows) == 20
    assert await insert_spend_rows(db, rows) == 0
    assert await insert_spend_rows(db, rows[:5] + [normalise_row(spend_row(20))] + rows[:5]) == 1
    assert await spend_count(db) == 21
    assert await rollup_totals(db) == (21, 10.5, 210)


async def test_new_rows_add_to_their_keys_and_teams_spend_once(db: Database) -> None:
    async with db.engine.begin() as conn:
        await conn.execute(sa.insert(teams).values(team_id="team-a"))
        await conn.execute(sa.insert(verification_tokens).values(token="hash-a", team_id="team-a", spend=1.0))
    rows = [normalise_row(spend_row(i, team_id="team-a")) for i in range(4)]
    rows.append(normalise_row(spend_row(4, api_key="", team_id=None, spend=7.0)))  # no key, no team
    assert await insert_spend_rows(db, rows) == 5
    assert await insert_spend_rows(db, rows) == 0  # a replay adds nothing
    async with db.engine.connect() as conn:
        key = (await conn.execute(sa.select(verification_tokens.c.spend))).scalar_one()
        team = (await conn.execute(sa.select(teams.c.spend))).scalar_one()
    assert key == pytest.approx(1.0 + 4 * 0.5) and team == pytest.approx(4 * 0.5)


async def test_rows_read_back_with_their_types(db: Database) -> None:
    await insert_spend_rows(db, [normalise_row(spend_row(7, metadata={"tags": ["a"], "n": 1.5}, content="x"))])
    async with db.engine.connect() as conn:
        from gateway.db.models import spend_logs

        row = (await conn.execute(sa.select(spend_logs))).one()._mapping
    assert row["startTime"] == DAY + dt.timedelta(seconds=7) and row["startTime"].tzinfo is not None
    assert row["metadata"] == {"tags": ["a"], "n": 1.5} and row["content"] == "x" and row["api_key"] == "hash-a"
