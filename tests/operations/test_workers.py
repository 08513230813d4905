"""The deployment docs/deploy.md describes, run for real: ``--workers 2`` and two replicas, on one
Redis and one PostgreSQL. State is shared (the deployments' outcomes and cooldowns in Redis, the
spend in the database), SIGHUP to the parent reloads every worker, a broken file reloads none, and
SIGTERM to the parent finishes what is in flight and refuses new connections."""

from __future__ import annotations

import asyncio
import signal
import time

import httpx

from tests.operations.conftest import (
    GatewayProcess,
    SlowTypeSafe,
    auth,
    body,
    entry,
    fresh_client,
    spend_rows,
    wait_until,
    write_config,
)

ROUTER = {"num_retries": 0, "allowed_fails": 0, "cooldown_time": 60}
SALT = "one-salt-for-every-replica-0123456789"



def generations(url: str, want_pids: int = 2, timeout_s: float = 30.0) -> dict[int, int]:
    """pid -> config generation of every worker behind ``url``, asking on new connections until
    ``want_pids`` workers have answered."""
    seen: dict[int, int] = {}
    deadline = time.monotonic() + timeout_s
    with fresh_client(headers=auth()) as client:
        while len(seen) < want_pids and time.monotonic() < deadline:
            report = client.get(f"{url}/health/readiness").json()
            seen[report["pid"]] = report["config"]["generation"]
    assert len(seen) == want_pids, f"only {len(seen)} worker(s) answered: {seen}"
    return seen


def every_worker_at(url: str, generation: int, timeout_s: float = 30.0) -> dict[int, int]:
    def check() -> dict[int, int] | None:
        seen = generations(url)
        return seen if all(g >= generation for g in seen.values()) else None

    return wait_until(check, timeout_s, f"every worker to load config generation {generation}", every_s=0.2)


def config_of(tmp_path, upstreams, redis_url: str, pg_url: str, *names: str):
    """As docs/deploy.md has it: one Redis, one database, and one salt for every process."""
    good, flaky = upstreams
    entries = [entry("jev", good.url), entry("flaky", flaky.url), *(entry(name, good.url) for name in names)]
    return write_config(tmp_path / "gateway.yaml", entries, ROUTER, redis_url=redis_url, database_url=pg_url,
                        salt_key=SALT)


def test_two_workers_share_state_reload_together_on_sighup_and_stop_gracefully(tmp_path, redis_server, pg_url):
    with SlowTypeSafe() as good, SlowTypeSafe() as flaky:
        upstreams = (good, flaky)
        config = config_of(tmp_path, upstreams, redis_server.url, pg_url)
        gateway = GatewayProcess.start(config, tmp_path, "--workers", "2", "--graceful-timeout", "30")
        answered: list[str] = []
        try:
            assert len(generations(gateway.url)) == 2
            with fresh_client(headers=auth()) as client:
                for _ in range(20):
                    r = client.post(f"{gateway.url}/v1/systemone", json=body("jev"))
                    assert r.status_code == 200
                    answered.append(r.headers["x-request-id"])
                flaky.fail_next(503, "overloaded")
                assert client.post(f"{gateway.url}/v1/systemone", json=body("flaky")).status_code == 503
                # One worker saw the failure; every worker reports it (Redis), on every new connection.
                for _ in range(10):
                    report = {e["model_group"]: e for e in client.get(f"{gateway.url}/health/providers").json()
                              ["deployments"]}
                    assert report["jev"]["state"] == "healthy" and report["flaky"]["state"] == "cooling_down"
                    assert report["flaky"]["last"]["status"] == 503

            config_of(tmp_path, upstreams, redis_server.url, pg_url, "luna")
            gateway.signal(signal.SIGHUP)  # to the parent: it validates the file and tells every worker
            assert set(every_worker_at(gateway.url, 2).values()) == {2}
            with fresh_client(headers=auth()) as client:
                for _ in range(10):
                    r = client.post(f"{gateway.url}/v1/systemone", json=body("luna"))
                    assert r.status_code == 200
                    answered.append(r.headers["x-request-id"])

            (tmp_path / "gateway.yaml").write_text('{"model_list": [{"model_name": "luna"}]}')
            gateway.signal(signal.SIGHUP)
            log = gateway.wait_for_log("every worker keeps the running config")
            assert "model_list[0] (luna).litellm_params: missing" in log
            assert set(generations(gateway.url).values()) == {2}

            config_of(tmp_path, upstreams, redis_server.url, pg_url, "luna", "third")
            reloaded = httpx.post(f"{gateway.url}/config/reload", headers=auth(), timeout=30).json()
            assert reloaded["added"] == ["third"] and set(reloaded["workers"].values()) == {3}  # all, once each
            assert set(generations(gateway.url).values()) == {3}  # answered only once every worker reloaded

            good.delay = 1.5

            async def in_flight() -> tuple[list[httpx.Response], bool]:
                async with httpx.AsyncClient(timeout=30, headers=auth()) as client:
                    sent = len(good.requests)
                    tasks = [asyncio.ensure_future(client.post(f"{gateway.url}/v1/systemone", json=body("third")))
                             for _ in range(8)]
                    while len(good.requests) < sent + 8:
                        await asyncio.sleep(0.02)
                    gateway.signal(signal.SIGTERM)
                    refused = await asyncio.to_thread(
                        wait_until, gateway.refuses_connections, 5, "new connections to be refused", 0.05)
                    return list(await asyncio.gather(*tasks)), refused

            finished, refused = asyncio.run(in_flight())
            assert refused and [r.status_code for r in finished] == [200] * 8
            answered += [r.headers["x-request-id"] for r in finished]
            assert gateway.proc.wait(timeout=60) is not None
        finally:
            gateway.stop()
    rows = asyncio.run(spend_rows(pg_url))
    decisions = sorted(r[0] for r in rows if r[2] == 200)
    assert decisions == sorted(answered)  # both workers' spend, every row once, the outboxes drained
    assert not list((gateway.data / "outbox").glob("outbox-*.sqlite3"))


def test_two_replicas_on_one_redis_and_one_database_agree(tmp_path, redis_server, pg_url):
    with SlowTypeSafe() as good, SlowTypeSafe() as flaky:
        config = config_of(tmp_path, (good, flaky), redis_server.url, pg_url)
        first = GatewayProcess.start(config, tmp_path, name="replica-1")
        second = GatewayProcess.start(config, tmp_path, name="replica-2")
        answered: list[str] = []
        try:
            flaky.fail_next(429, "slow down")
            assert httpx.post(f"{first.url}/v1/systemone", json=body("flaky"), headers=auth(),
                              timeout=30).status_code == 429
            seen = {e["model_group"]: e for e in httpx.get(f"{second.url}/health/providers", headers=auth(),
                                                            timeout=10).json()["deployments"]}
            assert seen["flaky"]["state"] == "cooling_down" and seen["flaky"]["last"]["status"] == 429
            for replica in (first, second) * 5:
                r = httpx.post(f"{replica.url}/v1/systemone", json=body("jev"), headers=auth(), timeout=30)
                assert r.status_code == 200
                answered.append(r.headers["x-request-id"])
            made = httpx.post(f"{first.url}/key/generate", json={"key_alias": "shared", "rpm_limit": 3},
                              headers=auth(), timeout=30)
            assert made.status_code == 200, made.text
            key = made.json()["key"]
            statuses = []
            if time.time() % 60 > 50:  # rpm counts in fixed minute windows: not across a boundary
                time.sleep(60.5 - time.time() % 60)
            for replica in (first, second, first, second):  # one key, one limit, whichever replica answers
                r = httpx.post(f"{replica.url}/v1/systemone", json=body("jev"), headers=auth(key), timeout=30)
                statuses.append(r.status_code)
                if r.status_code == 200:
                    answered.append(r.headers["x-request-id"])
            assert statuses == [200, 200, 200, 429]
        finally:
            first.stop()
            second.stop()
    rows = asyncio.run(spend_rows(pg_url))
    assert set(answered) <= {r[0] for r in rows} and len(rows) == len({r[0] for r in rows})
