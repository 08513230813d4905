"""``kill -9`` of the gateway under load loses no spend row and writes none twice: every answered
request's row is in the database after a restart on the same data directory (the outbox drains), no
row appears twice, and the only rows without an answer are those of requests in flight at the kill.
(The database stopped mid-load is tests/reliability/test_database_outage.py.)"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from tests.fakes.typesafe import FakeTypeSafe
from tests.reliability.conftest import S1, Flag, decisions_until
from tests.reliability.processes import GatewayProcess
from tests.reliability.wire_checks import Answer, drive

KEY = "ts-durability-key"
ANSWERED_BEFORE_THE_KILL = 20


def test_kill_9_under_load_loses_no_spend_row_and_writes_none_twice(tmp_path: Path) -> None:
    db = tmp_path / "spend.db"
    with FakeTypeSafe(KEY) as upstream:
        config = {"model_list": [{"model_name": "jev", "litellm_params": {
            "model": "typesafe/jev-latest", "api_key": KEY, "api_base": upstream.url}}],
            "general_settings": {"database_url": f"sqlite:///{db}"}}
        gateway = GatewayProcess(config, tmp_path / "gateway").start()

        async def scenario() -> list[Answer]:
            stop, going = Flag(), asyncio.Event()
            answered_so_far = 0

            def count(answer: Answer) -> None:
                nonlocal answered_so_far
                answered_so_far += answer.status == 200
                if answered_so_far > 2 * ANSWERED_BEFORE_THE_KILL:
                    going.set()

            load = asyncio.ensure_future(drive(gateway.url, decisions_until(stop, "jev"), concurrency=8,
                                               timeout_s=10, on_answer=count))
            # The load is going (a wait on answers, not on time: a loaded machine is slow to start it).
            await asyncio.wait_for(going.wait(), timeout=60)
            gateway.kill()  # mid-load: rows still in the outbox, requests in flight
            stop.set()
            return await load

        answers = asyncio.run(scenario())
        answered = [a.request_id for a in answers if a.status == 200]
        cut = [a for a in answers if a.status == 0]  # in flight at the kill, or refused after it
        assert len(answered) > ANSWERED_BEFORE_THE_KILL, "the load did not get going before the kill"
        assert all(a.problem is None for a in answers if a.status != 0)

        gateway.start()  # a new process on the same data directory adopts the dead one's outbox
        try:
            deadline = time.monotonic() + 20
            rows: list[tuple[str, int]] = []
            logged: list[tuple[str, int]] = []
            while time.monotonic() < deadline:
                with sqlite3.connect(db) as conn:
                    rows = conn.execute("SELECT request_id, status FROM spend_logs").fetchall()
                    logged = conn.execute("SELECT request_id, count(*) FROM decisions GROUP BY request_id").fetchall()
                if {r[0] for r in rows} >= set(answered):
                    break
                time.sleep(0.2)
        finally:
            gateway.stop()
    ids = [r[0] for r in rows]
    assert set(answered) <= set(ids)  # every answered request has its row
    # and its decision (one question a request), logged through the same outbox: none lost, none made up
    assert set(answered) <= {r[0] for r in logged} <= set(ids)
    assert {count for _, count in logged} == {1}
    assert len(ids) == len(set(ids))  # none twice
    unanswered = set(ids) - set(answered)
    assert len(unanswered) <= len(cut)  # none made up: at most the requests the kill cut off
    assert {status for request_id, status in rows if request_id in set(answered)} == {200}


def test_calls_repeating_a_callers_request_id_each_get_their_spend_row(gateway_factory, tmp_path: Path) -> None:
    db = tmp_path / "spend.db"
    with FakeTypeSafe(KEY) as upstream:
        gw = gateway_factory({"model_list": [{"model_name": "jev", "litellm_params": {
            "model": "typesafe/jev-latest", "api_key": KEY, "api_base": upstream.url,
            "input_cost_per_token": 0.001}}], "general_settings": {"database_url": f"sqlite:///{db}"}})
        answers = [httpx.post(gw.url + "/v1/systemone", json={**S1, "model": "jev"},
                              headers={"x-request-id": "my-own-id"}, timeout=10) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 200]
        priced = sum(float(a.headers["x-decisions-response-cost"]) for a in answers)
        deadline = time.monotonic() + 30  # the outbox drains every 0.25 s (a loaded machine: longer)
        rows: list[tuple[str, float]] = []
        while time.monotonic() < deadline:
            with sqlite3.connect(db) as conn:
                rows = conn.execute("SELECT request_id, spend FROM spend_logs").fetchall()
            if len(rows) >= 3:
                break
            time.sleep(0.2)
    assert len(rows) == 3 and sum(spend for _, spend in rows) == pytest.approx(priced)
    assert {a.headers["x-client-request-id"] for a in answers} == {"my-own-id"}
    assert {request_id for request_id, _ in rows} == {a.headers["x-request-id"] for a in answers}
