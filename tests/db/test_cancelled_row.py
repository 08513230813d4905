"""A request cancelled at the graceful timeout (SIGTERM, an upstream that never answers) is in the spend
log as what its caller got, a 503 ``cancelled``, not a row with status 0 (issue 19 item 14): a real
gateway process, its SQLite database read after it exited."""

from __future__ import annotations

import asyncio
import signal
import sqlite3

import httpx

from tests.operations.conftest import GatewayProcess, SlowTypeSafe, auth, body, entry, wait_until, write_config


def test_a_request_cancelled_at_the_graceful_timeout_is_a_503_row(tmp_path):
    db = tmp_path / "gateway.db"
    with SlowTypeSafe() as upstream:
        config = write_config(tmp_path / "gateway.yaml", [entry("jev", upstream.url)], database_url=f"sqlite:///{db}")
        gateway = GatewayProcess.start(config, tmp_path, "--graceful-timeout", "1")
        try:
            upstream.hang_next(120)

            async def scenario() -> BaseException | httpx.Response:
                async with httpx.AsyncClient(timeout=60, headers=auth()) as client:
                    task = asyncio.ensure_future(client.post(f"{gateway.url}/v1/systemone", json=body()))
                    while upstream.hanging < 1:  # the call is at the upstream, held there
                        await asyncio.sleep(0.02)
                    gateway.signal(signal.SIGTERM)
                    try:
                        return await task
                    except httpx.HTTPError as exc:
                        return exc

            outcome = asyncio.run(scenario())
            assert gateway.proc.wait(timeout=60) in (0, -signal.SIGTERM)
            assert not (isinstance(outcome, httpx.Response) and outcome.status_code == 200)
            wait_until(lambda: upstream.abandoned >= 1, 10, "the hung upstream call to be dropped by the gateway")
        finally:
            upstream.release()
            gateway.stop()
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT status, error_class, model_group FROM spend_logs").fetchall()
    assert rows == [(503, "cancelled", "jev")], gateway.log()
