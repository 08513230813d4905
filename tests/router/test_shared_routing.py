"""Two gateways sharing the real Redis (127.0.0.1:6379, this worker's database) agree on cooldowns and usage; a Redis that
goes away mid-load costs no request."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import httpx
import pytest

from tests import polls
from tests.conftest import start_gateway
from tests.fakes.typesafe import FakeTypeSafe
from tests.minute_windows import Clock, routed_within_an_rpm_cap
from tests.router.test_routing_faults import HEAVY, KEY, LIGHT, S1, typesafe
from tests.settled import tasks_of, wait_settled
from tests.shared_state.conftest import REDIS_URL


@pytest.fixture
def two_fakes():
    a, b = FakeTypeSafe(KEY).start(), FakeTypeSafe(KEY).start()
    yield a, b
    a.stop()
    b.stop()


def pair(model_list, redis_url=REDIS_URL, **router):
    config = {"model_list": model_list, "router_settings": router, "general_settings": {"redis_url": redis_url}}
    return start_gateway(config), start_gateway(config)


def ask(gw, model="g"):
    return httpx.post(f"{gw.url}/v1/systemone", json={**S1, "model": model}, timeout=30)


def test_a_cooldown_set_by_one_gateway_holds_in_the_other(two_fakes):
    a, b = two_fakes
    first, second = pair([typesafe("g", a, HEAVY), typesafe("g", b, LIGHT)], num_retries=1, cooldown_time=30)
    try:
        a.fail_next(429, "slow down")
        assert ask(first).status_code == 200 and (len(a.requests), len(b.requests)) == (1, 1)
        for _ in range(4):
            assert ask(second).status_code == 200
        assert len(a.requests) == 1  # the second gateway saw the first one's cooldown
        assert first.state.shared.status()["backend"] == "redis"
    finally:
        first.stop()
        second.stop()


def test_an_rpm_cap_holds_across_gateways(two_fakes):
    a, b = two_fakes
    first, second = pair([typesafe("g", a, HEAVY, rpm=3), typesafe("g", b, LIGHT)], disable_cooldowns=True)
    try:
        calls = []  # the usage window is a calendar minute: each call's minutes, and whether a took it
        for n in range(8):
            gw = first if n % 2 else second
            resting, to_a = tasks_of(gw), len(a.requests)
            with Clock() as clock:
                assert ask(gw).status_code == 200
                wait_settled(gw, resting, "the call's usage booked")  # booked behind the response
            calls.append((clock.span, len(a.requests) > to_a))
        assert len(a.requests) + len(b.requests) == 8
        assert routed_within_an_rpm_cap(calls, 3), calls  # in one minute: a, a, a, then b five times
    finally:
        first.stop()
        second.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_redis(port: int) -> subprocess.Popen:
    binary = shutil.which("redis-server")
    assert binary, "redis-server is needed for this test (.ci/run installs and starts Redis)"
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the throwaway redis-server did not start")


def test_redis_stopped_mid_load_fails_no_request_and_readiness_says_so(two_fakes):
    a, b = two_fakes
    port = free_port()
    redis = start_redis(port)
    gw = start_gateway({"model_list": [typesafe("g", a), typesafe("g", b)],
                        "router_settings": {"routing_strategy": "least-busy", "num_retries": 1},
                        "general_settings": {"redis_url": f"redis://127.0.0.1:{port}/0"}})
    try:
        statuses = [ask(gw).status_code for _ in range(10)]
        ready = httpx.get(f"{gw.url}/health/readiness", timeout=10).json()
        assert ready["shared_state"]["degraded"] is False
        redis.kill()
        redis.wait(timeout=10)
        statuses += [ask(gw).status_code for _ in range(20)]
        assert statuses == [200] * 30
        ready = httpx.get(f"{gw.url}/health/readiness", timeout=10)
        assert ready.status_code == 200 and ready.json()["shared_state"]["degraded"] is True
        assert "Redis is unreachable" in ready.json()["warnings"][0]
        redis = start_redis(port)  # it comes back: the gateway reconnects by itself
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            assert ask(gw).status_code == 200
            if not polls.get(f"{gw.url}/health/readiness", timeout=10).json()["shared_state"]["degraded"]:
                break
            time.sleep(0.2)
        assert httpx.get(f"{gw.url}/health/readiness", timeout=10).json()["shared_state"]["degraded"] is False
    finally:
        gw.stop()
        redis.kill()
        redis.wait(timeout=10)
