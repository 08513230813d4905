"""Spend rows for the tests, and reading back what the database holds."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa

from gateway.db.engine import Database

DAY = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def spend_row(i: int, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "request_id": f"req-{i}", "api_key": "hash-a", "key_alias": "alias-a", "team_id": None,
        "model_group": "jev", "model": "typesafe/jev-latest", "call_type": "asystemone",
        "prompt_tokens": 10, "completion_tokens": 2, "spend": 0.5, "startTime": DAY + dt.timedelta(seconds=i),
        "endTime": DAY + dt.timedelta(seconds=i, milliseconds=40), "status": 200, "cache_hits": 1,
        "metadata": {"n": i},
    }
    row.update(fields)
    return row


async def scalar(db: Database, sql: str) -> Any:
    async with db.engine.connect() as conn:
        return (await conn.execute(sa.text(sql))).scalar()


async def spend_count(db: Database) -> int:
    return int(await scalar(db, "SELECT count(*) FROM spend_logs"))


async def rollup_totals(db: Database) -> tuple[int, float, int]:
    """(requests, spend, prompt_tokens) summed over daily_spend."""
    async with db.engine.connect() as conn:
        row = (await conn.execute(sa.text(
            "SELECT coalesce(sum(requests), 0), coalesce(sum(spend), 0), coalesce(sum(prompt_tokens), 0) "
            "FROM daily_spend"))).one()
    return int(row[0]), float(row[1]), int(row[2])
