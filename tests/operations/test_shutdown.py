"""SIGTERM: the gateway stops accepting at once, finishes the requests in flight (within
``--graceful-timeout``), drains the spend outbox into the database and exits."""

from __future__ import annotations

import asyncio
import signal
import time

import httpx

from tests.operations.conftest import (
    MASTER,
    GatewayProcess,
    SlowTypeSafe,
    auth,
    body,
    entry,
    spend_rows,
    wait_until,
    write_config,
)

IN_FLIGHT = 12


def test_sigterm_finishes_the_requests_in_flight_refuses_new_connections_and_drains_the_outbox(tmp_path, pg_url):
    with SlowTypeSafe() as upstream:
        config = write_config(tmp_path / "gateway.yaml", [entry("jev", upstream.url)], database_url=pg_url)
        gateway = GatewayProcess.start(config, tmp_path, "--graceful-timeout", "30")
        try:
            with httpx.Client(timeout=30, headers=auth()) as client:
                before = [client.post(f"{gateway.url}/v1/systemone", json=body()) for _ in range(3)]
            assert [r.status_code for r in before] == [200] * 3
            upstream.delay = 2.0  # every request from now on is in flight for two seconds

            async def scenario() -> tuple[list[httpx.Response], bool, int]:
                async with httpx.AsyncClient(timeout=30, headers=auth()) as client:
                    tasks = [asyncio.ensure_future(client.post(f"{gateway.url}/v1/systemone", json=body()))
                             for _ in range(IN_FLIGHT)]
                    while len(upstream.requests) < 3 + IN_FLIGHT:  # all of them are at the upstream
                        await asyncio.sleep(0.02)
                    gateway.signal(signal.SIGTERM)
                    deadline = time.monotonic() + 1.5
                    refused = False
                    while not refused and time.monotonic() < deadline:
                        refused = await asyncio.to_thread(gateway.refuses_connections)
                    pending = sum(not task.done() for task in tasks)  # still being answered when refused
                    return list(await asyncio.gather(*tasks)), refused, pending

            answers, refused, pending = asyncio.run(scenario())
            assert refused, "a new connection was still accepted after SIGTERM"
            assert pending == IN_FLIGHT, "the in-flight requests were answered before new ones were refused"
            assert [r.status_code for r in answers] == [200] * IN_FLIGHT
            assert gateway.proc.wait(timeout=30) in (0, -signal.SIGTERM)
        finally:
            gateway.stop()

    answered = {r.headers["x-request-id"] for r in before + answers}
    rows = asyncio.run(spend_rows(pg_url))
    assert sorted(r[0] for r in rows) == sorted(answered)  # every answered request, once, and nothing else
    assert {r[2] for r in rows} == {200}
    assert not list((gateway.data / "outbox").glob("outbox-*.sqlite3")), "rows were left in the outbox"


def test_a_request_past_the_graceful_timeout_is_cancelled_and_the_gateway_still_exits(tmp_path):
    with SlowTypeSafe() as upstream:
        config = write_config(tmp_path / "gateway.yaml", [entry("jev", upstream.url)])
        gateway = GatewayProcess.start(config, tmp_path, "--graceful-timeout", "1")
        try:
            upstream.hang_next(120)

            async def scenario() -> tuple[BaseException | httpx.Response, float]:
                async with httpx.AsyncClient(timeout=60, headers=auth()) as client:
                    task = asyncio.ensure_future(client.post(f"{gateway.url}/v1/systemone", json=body()))
                    while upstream.hanging < 1:
                        await asyncio.sleep(0.02)
                    gateway.signal(signal.SIGTERM)
                    signalled = time.monotonic()
                    try:
                        outcome: BaseException | httpx.Response = await task
                    except httpx.HTTPError as exc:
                        outcome = exc
                    await asyncio.to_thread(gateway.proc.wait, 60)
                    return outcome, time.monotonic() - signalled

            outcome, exited_after_s = asyncio.run(scenario())
            # The upstream holds the call for 120 s; the gateway gave it the 1 s it was told to.
            assert exited_after_s < 60, f"the gateway waited {exited_after_s:.0f} s for a hung upstream"
            assert not (isinstance(outcome, httpx.Response) and outcome.status_code == 200)
            wait_until(lambda: upstream.abandoned >= 1, 10, "the hung upstream call to be dropped by the gateway")
        finally:
            upstream.release()
            gateway.stop()
    assert MASTER not in gateway.log()
