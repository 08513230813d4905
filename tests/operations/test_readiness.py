"""``/health/readiness`` tells the truth: the database, Redis and the ``local/`` models are each
checked and named with their state; a dependency that goes away is reported at once; the
degraded modes stay ready while spend waits in the outbox; details only for the master key."""

from __future__ import annotations

import asyncio

import httpx

from tests.conftest import RunningGateway, start_gateway
from tests.operations.conftest import MASTER, SlowTypeSafe, auth, body, entry, spend_rows, wait_until


def config(entries, **general) -> dict:
    return {"model_list": entries, "general_settings": {"master_key": MASTER, **general}}


def ready(gateway: RunningGateway, key: str | None = MASTER) -> httpx.Response:
    return httpx.get(f"{gateway.url}/health/readiness", headers=auth(key), timeout=10)


def ask(gateway: RunningGateway) -> httpx.Response:
    return httpx.post(f"{gateway.url}/v1/systemone", json=body(), headers=auth(), timeout=30)


def settled(gateway: RunningGateway) -> httpx.Response:
    """Readiness once the start-up is over (local models tried)."""
    return wait_until(lambda: (r := ready(gateway)).json()["status"] != "starting" and r, 120,
                      "the gateway to finish starting")




def test_each_dependency_is_named_with_its_state_and_only_the_master_key_sees_the_details(
        tmp_path, redis_server, pg_url):
    missing = str(tmp_path / "no-such-model")
    with SlowTypeSafe() as upstream:
        gateway = start_gateway(config([entry("jev", upstream.url),
                                        {"model_name": "tiny", "litellm_params": {"model": f"local/{missing}"}}],
                                       redis_url=redis_server.url, database_url=pg_url))
        try:
            full = settled(gateway)
            assert full.status_code == 200
            report = full.json()
            assert report["status"] == "degraded" and report["ready"] is True
            assert report["down"] == [] and report["degraded"] == ["local_models"]
            checks = report["checks"]
            assert checks["database"]["state"] == "up" and checks["redis"]["state"] == "up"
            assert checks["local_models"]["state"] == "failed"
            assert checks["local_models"]["models"][missing]["state"] == "failed"
            assert "is neither a folder" in checks["local_models"]["models"][missing]["error"]
            assert report["shared_state"]["backend"] == "redis" and report["models"] == 2
            assert report["config"]["generation"] == 1

            for key in (None, "sk-not-the-master-key-0000000000"):  # open, but the states alone
                public = ready(gateway, key)
                assert public.status_code == 200
                assert public.json()["checks"] == {"database": {"state": "up", "outbox_depth": 0},
                                                   "redis": {"state": "up"},
                                                   "local_models": {"state": "failed", "count": 1},
                                                   "deployments": {"state": "configured"}}
                assert missing not in public.text and "redis://" not in public.text
                assert "shared_state" not in public.json() and "config" not in public.json()
            assert httpx.get(f"{gateway.url}/health/liveliness", timeout=10).status_code == 200  # no key needed
            assert ask(gateway).status_code == 200
            assert upstream.requests and len(upstream.requests) == 1  # readiness itself called nobody
        finally:
            gateway.stop()


def test_redis_down_is_reported_at_once_degraded_by_default_and_not_ready_when_configured(redis_server):
    with SlowTypeSafe() as upstream:
        lenient = start_gateway(config([entry("jev", upstream.url)], redis_url=redis_server.url))
        strict = start_gateway(config([entry("jev", upstream.url)], redis_url=redis_server.url,
                                      ready_while_redis_down=False))
        try:
            for gateway in (lenient, strict):
                assert ready(gateway).status_code == 200 and ready(gateway).json()["status"] == "healthy"
            redis_server.kill()
            soft, hard = ready(lenient), ready(strict)  # no request has failed over yet: readiness pings
            assert soft.status_code == 200 and soft.json()["status"] == "degraded"
            assert soft.json()["degraded"] == ["redis"] and soft.json()["checks"]["redis"]["state"] == "down"
            assert "Redis is unreachable" in soft.json()["warnings"][0]
            assert hard.status_code == 503 and hard.json()["status"] == "unhealthy" and hard.json()["down"] == ["redis"]
            assert hard.json()["checks"]["redis"]["error"]
            assert ask(lenient).status_code == 200 and ask(strict).status_code == 200  # serving from memory

            redis_server.start()  # the same port: both reconnect by themselves
            for gateway in (lenient, strict):
                wait_until(lambda g=gateway: ready(g).json()["status"] == "healthy", 20, "Redis to be back")
                assert ready(gateway).status_code == 200
        finally:
            lenient.stop()
            strict.stop()


def test_database_down_is_503_naming_it_unless_the_degraded_mode_keeps_it_ready_while_the_outbox_holds_spend(
        pg_cluster):
    with SlowTypeSafe() as upstream:
        strict = start_gateway(config([entry("jev", upstream.url)], database_url=pg_cluster.url))
        lenient = start_gateway(config([entry("jev", upstream.url)], database_url=pg_cluster.url,
                                       ready_while_db_down=True))
        answered: set[str] = set()
        try:
            for gateway in (strict, lenient):
                assert ready(gateway).status_code == 200 and ready(gateway).json()["checks"]["database"]["state"] == "up"
            pg_cluster.stop("immediate")
            hard = wait_until(lambda: (r := ready(strict)).status_code == 503 and r, 10, "the database to be down")
            assert hard.json()["down"] == ["database"] and hard.json()["checks"]["database"]["state"] == "down"
            assert "ready_while_db_down" in hard.json()["warnings"][0]
            for gateway in (strict, lenient):  # the requests are answered; their spend waits in the outbox
                for _ in range(5):
                    r = ask(gateway)
                    assert r.status_code == 200
                    answered.add(r.headers["x-request-id"])
            soft = ready(lenient)
            assert soft.status_code == 200 and soft.json()["status"] == "degraded"
            assert soft.json()["degraded"] == ["database"] and soft.json()["checks"]["database"]["outbox_depth"] >= 5
            assert "outbox" in soft.json()["warnings"][0]

            pg_cluster.start()
            for gateway in (strict, lenient):
                wait_until(lambda g=gateway: ready(g).status_code == 200 and
                           ready(g).json()["checks"]["database"]["outbox_depth"] == 0, 60,
                           "the outbox to drain into the database that came back")
                assert ready(gateway).json()["status"] == "healthy"
        finally:
            strict.stop()
            lenient.stop()
    rows = asyncio.run(spend_rows(pg_cluster.url))
    assert answered <= {r[0] for r in rows}  # every answered request's row reached the database
