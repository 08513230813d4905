"""Issue 10's outage test through a running gateway: its PostgreSQL (a throwaway cluster of the test's
own, never the machine's server) is stopped mid-load and started again. Every request is still answered
200 while the database is away (readiness says so and stays ready: ``ready_while_db_down``), and once it
is back the outbox drains: the spend rows equal the answered requests, none twice, the roll-ups counted
once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import asyncpg
import httpx

from tests.db.conftest import PgCluster
from tests.fakes.typesafe import FakeTypeSafe
from tests.reliability.conftest import Flag, decisions_until
from tests.reliability.processes import GatewayProcess
from tests.reliability.wire_checks import Answer, bad, drive

KEY = "ts-db-outage-key"
DRAIN_TIMEOUT_S = 60.0


async def spend_ids(url: str) -> tuple[list[str], int]:
    """Every spend row's request_id, and the requests the daily roll-ups count."""
    conn = await asyncpg.connect(url, timeout=10)
    try:
        ids = [r["request_id"] for r in await conn.fetch("SELECT request_id FROM spend_logs")]
        rolled = await conn.fetchval("SELECT coalesce(sum(requests), 0) FROM daily_spend")
        return ids, int(rolled)
    finally:
        await conn.close()


def readiness(gw: GatewayProcess) -> httpx.Response:
    return httpx.get(gw.url + "/health/readiness", timeout=10)


def test_the_database_stopped_and_restarted_mid_load_loses_no_spend_row_and_writes_none_twice(
        pg_cluster: PgCluster, tmp_path: Path) -> None:
    with FakeTypeSafe(KEY) as upstream:
        config = {"model_list": [{"model_name": "jev", "litellm_params": {
            "model": "typesafe/jev-latest", "api_key": KEY, "api_base": upstream.url, "timeout": 10}}],
            "general_settings": {"database_url": pg_cluster.url, "ready_while_db_down": True}}
        with GatewayProcess(config, tmp_path / "gateway") as gw:
            gw.start()
            seen: dict[str, list] = {"during": [], "answers_while_down": []}

            async def scenario() -> list[Answer]:
                stop, down = Flag(), Flag()

                def count(answer: Answer) -> None:
                    if down.up:
                        seen["answers_while_down"].append(answer)

                load = asyncio.ensure_future(drive(gw.url, decisions_until(stop, "jev"), concurrency=8,
                                                   on_answer=count))
                await asyncio.sleep(1.0)
                await asyncio.to_thread(pg_cluster.stop, "immediate")  # mid-load, transactions in flight
                down.set()
                await asyncio.sleep(1.5)
                seen["during"].append(await asyncio.to_thread(readiness, gw))
                await asyncio.sleep(0.5)
                down.up = False
                await asyncio.to_thread(pg_cluster.start)
                await asyncio.sleep(1.0)
                stop.set()
                return await load

            answers = asyncio.run(scenario())
            assert bad(answers) == [], gw.log_tail()
            assert all(a.status == 200 for a in answers), [(a.status, a.body[:200]) for a in answers if a.status != 200]
            answered = [a.request_id for a in answers]
            assert len(seen["answers_while_down"]) > 20, "the load did not go on while the database was away"

            during = seen["during"][0]
            assert during.status_code == 200, during.text  # degraded but ready: the outbox holds the rows
            body = during.json()
            assert body["status"] == "degraded" and "database" in body["degraded"]
            assert body["checks"]["database"]["state"] == "down" and body["checks"]["database"]["outbox_depth"] > 0

            deadline = time.monotonic() + DRAIN_TIMEOUT_S
            ids: list[str] = []
            rolled = 0
            while time.monotonic() < deadline:
                ids, rolled = asyncio.run(spend_ids(pg_cluster.url))
                if len(ids) >= len(answered):
                    break
                time.sleep(0.25)
            assert sorted(ids) == sorted(answered), gw.log_tail()  # every answered request once, nothing else
            assert len(set(answered)) == len(answered) and rolled == len(answered)
            after = readiness(gw).json()
            assert after["status"] == "healthy" and after["checks"]["database"] == {"state": "up", "outbox_depth": 0}
