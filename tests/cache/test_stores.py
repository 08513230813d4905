"""Where the entries live: in memory, bounded by entries and bytes (least recently used first), and in
Redis, shared by every gateway process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
import uuid
from pathlib import Path

import httpx
import pytest

from bench.processes import stop
from gateway.shared_state import MemoryState, RedisState
from tests import polls
from tests.cache.conftest import (
    CLIENT_KEY,
    OA_REFUND,
    OA_TONE,
    OA_URGENCY,
    TYPESAFE_KEY,
    asked,
    cache_counts,
    fresh_state,
    jev,
    s1_body,
)
from tests.fakes.typesafe import FakeTypeSafe
from tests.shared_state.conftest import REDIS_URL, delete_prefix, free_port

ROOT = Path(__file__).resolve().parents[2]
ENTRY_OVERHEAD = 400  # bytes a cached value's key, tuple and LRU node may take beyond its own bytes


async def test_the_memory_store_stays_within_its_bounds():
    """Entries of 2 KiB with 64-hex keys, ten times what the store may keep: what it holds, measured by
    tracemalloc, never passes ``max_bytes`` plus a small per-entry overhead, and the oldest go first."""
    max_entries, max_bytes, size = 500, 256 * 1024, 2048
    state = MemoryState(cache_max_entries=max_entries, cache_max_bytes=max_bytes)
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        for i in range(10 * max_bytes // size):
            await state.bytes_set(f"decisions-cache:a:{i:064x}", os.urandom(size), 60)
            held = tracemalloc.get_traced_memory()[0] - baseline
            assert held <= max_bytes + max_entries * ENTRY_OVERHEAD + 64 * 1024
        status = state.status()
        assert status["cache_bytes"] <= max_bytes and status["cache_entries"] == max_bytes // size
        last = 10 * max_bytes // size - 1
        newest, oldest = f"decisions-cache:a:{last:064x}", f"decisions-cache:a:{0:064x}"
        assert [v is not None for v in await state.bytes_get_many([newest, oldest, "never"])] == [True, False, False]
        for i in range(3 * max_entries):  # small entries: the entry bound holds
            await state.bytes_set(f"small:{i}", b"x", 60)
            assert state.status()["cache_entries"] <= max_entries
        assert tracemalloc.get_traced_memory()[0] - baseline <= max_bytes + max_entries * ENTRY_OVERHEAD + 64 * 1024
    finally:
        tracemalloc.stop()
    assert await state.bytes_get(newest) is None  # pushed out by the small ones
    await state.close()


def test_a_gateway_with_a_small_memory_cache_forgets_the_least_recently_used(gateway_factory):
    with FakeTypeSafe(TYPESAFE_KEY) as upstream:
        small = gateway_factory({"model_list": [jev("jev", upstream)],
                                 "litellm_settings": {"cache": True, "cache_params": {"type": "local", "max_entries": 4}}})
        first, second = fresh_state("lru one"), fresh_state("lru two")
        for state in (first, second, second):  # 3 entries + the version; then 3 more push the first out
            httpx.post(f"{small.url}/v1/systemone", json=s1_body(state), timeout=20)
        assert len(upstream.requests) == 2
        again = httpx.post(f"{small.url}/v1/systemone", json=s1_body(first), timeout=20)
        assert cache_counts(again) == (0, 3) and len(upstream.requests) == 3
        assert small.state.cache.store.status()["cache_entries"] <= 4


# ---- Redis shared by two gateway processes ---------------------------------------------------------


def start_process(config: Path, data: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "--config", str(config), "--host", "127.0.0.1",
                             "--port", str(port), "--log-level", "warning"], cwd=ROOT,
                            env={**os.environ, "DECISIONS_GATEWAY_DATA_DIR": str(data)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the gateway exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
        try:
            if polls.get(f"{url}/health/liveliness", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the gateway did not start")


@pytest.fixture
def namespace():
    name = f"test:cache:{uuid.uuid4().hex}"
    yield name
    import asyncio

    asyncio.run(delete_prefix(name + ":"))


def test_redis_entries_are_shared_by_two_gateway_processes(tmp_path, namespace):
    with FakeTypeSafe(TYPESAFE_KEY) as upstream:
        config = tmp_path / "gateway.yaml"
        config.write_text(json.dumps({
            "model_list": [jev("jev", upstream)],
            "litellm_settings": {"cache": True, "cache_params": {"type": "redis", "url": REDIS_URL,
                                                                 "namespace": namespace}}}))
        one, url_one = start_process(config, tmp_path / "one")
        two, url_two = start_process(config, tmp_path / "two")
        try:
            state = fresh_state("redis")
            headers = {"Authorization": f"Bearer {CLIENT_KEY}"}
            paid = httpx.post(f"{url_one}/v1/systemone", json=s1_body(state), headers=headers, timeout=20)
            assert paid.status_code == 200 and cache_counts(paid) == (0, 3) and len(upstream.requests) == 1
            body = {"model": "jev", "input": state, "questions": [OA_REFUND, OA_TONE, OA_URGENCY]}
            hit = httpx.post(f"{url_two}/v1/decisions", json=body, headers=headers, timeout=20)
            assert hit.status_code == 200 and cache_counts(hit) == (3, 0)
            assert len(upstream.requests) == 1, "the second process answered from the first one's entries"
            assert [a["name"] for a in hit.json()["answers"]] == ["refund", "tone", "urgency"]
            assert hit.json()["answers"][0]["probability"] == paid.json()["answers"]["refund"]["noul"]
            replay = httpx.post(f"{url_two}/v1/systemone", json=s1_body(state), headers=headers, timeout=20)
            assert replay.content == paid.content and asked(upstream, 1) == []
        finally:
            stop(one)
            stop(two)
    import asyncio

    assert asyncio.run(stored_values(namespace)), "the entries are in Redis"


async def stored_values(namespace: str) -> list[bytes]:
    """Every value under the namespace: none of them carries a credential."""
    state = RedisState(REDIS_URL, connect_timeout_s=2, socket_timeout_s=2, pool_timeout_s=2)
    try:
        keys = [key async for key in state._redis.scan_iter(match=f"{namespace}:*")]
        values = await state.bytes_get_many([k.decode() for k in keys])
    finally:
        await state.close()
    assert all(TYPESAFE_KEY.encode() not in (value or b"") for value in values)
    assert all(TYPESAFE_KEY not in key.decode() for key in keys)
    return [value for value in values if value]

