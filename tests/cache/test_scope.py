"""Cache entries are scoped to the team that paid for them (issue 19 item 3): ``only-if-cached`` is no
oracle across teams, also over two workers sharing Redis; ``cache_params.scope: key`` narrows it to
the key, ``global`` shares every entry (the documented risk), and any other value fails the start.

The tenant case runs ``decisions-gateway --workers 2`` (one SQLite database, Redis for the shared
state and the cache) in front of a fake TypeSafe; keys are made through the admin API; the paying
call goes through typesafe-sdk, the probes through httpx (a 504 is what they test)."""

from __future__ import annotations

import uuid

import httpx
import pytest
from typesafe_sdk import TypeSafeClient

from gateway.config.errors import ConfigError
from gateway.config.loader import build_config
from tests.admin_calls import admin_ok
from tests.cache.conftest import S1_QUESTIONS, TYPESAFE_KEY, cache_counts, fresh_state, jev, s1_body
from tests.conftest import start_gateway
from tests.fakes.typesafe import FakeTypeSafe
from tests.observability.helpers import GatewayProcess
from tests.shared_state.conftest import REDIS_URL, delete_prefix

MASTER = "sk-master-cache-scope-0123456789"
PROBE = {"x-decisions-cache": "only-if-cached"}


@pytest.fixture(scope="module")
def upstream():
    with FakeTypeSafe(TYPESAFE_KEY) as fake:
        yield fake


def config(upstream, db, scope: str | None = None, namespace: str = "decisions-cache", **general) -> dict:
    params = {"type": "redis", "url": REDIS_URL, "namespace": namespace} if general.get("redis_url") else {}
    if scope is not None:
        params["scope"] = scope
    return {"model_list": [jev("jev", upstream)], "litellm_settings": {"cache": True, "cache_params": params},
            "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}", **general},
            "router_settings": {"num_retries": 0}}


def new_key(gateway, team: str | None = None) -> str:
    return admin_ok(gateway, MASTER, "/key/generate", {"team_id": team} if team else {})["key"]


def new_team(gateway) -> str:
    return admin_ok(gateway, MASTER, "/team/new", {})["team_id"]


def probe(gateway, key: str, state: str) -> httpx.Response:
    """Replay mode: the answer only when it is in the caller's cache, else a 504 (no upstream call)."""
    return httpx.post(gateway.url + "/v1/systemone", json=s1_body(state),
                      headers={"Authorization": f"Bearer {key}", **PROBE}, timeout=20)


def pay(gateway, key: str, state: str):
    with TypeSafeClient(api_key=key, base_url=gateway.url, compression=False) as client:
        return client.system_one(state, S1_QUESTIONS, model="jev")


@pytest.fixture
def workers(upstream, tmp_path):
    namespace = f"test:scope:{uuid.uuid4().hex}"
    gateway = GatewayProcess(tmp_path, config(upstream, tmp_path / "gateway.db", namespace=namespace,
                                              redis_url=REDIS_URL), "--workers", "2", "--log-level", "warning",
                             env={"DECISIONS_GATEWAY_DATA_DIR": str(tmp_path / "data")})
    try:
        yield gateway.wait_ready()
    finally:
        gateway.stop()
        import asyncio

        asyncio.run(delete_prefix(namespace + ":"))


def test_a_team_never_reads_another_teams_answers_over_two_workers_sharing_redis(workers, upstream):
    team_a, team_b = new_team(workers), new_team(workers)
    prober, payer, payers_mate = new_key(workers, team_a), new_key(workers, team_b), new_key(workers, team_b)
    state = fresh_state("oracle")
    assert probe(workers, prober, state).status_code == 504
    before = len(upstream.requests)
    pay(workers, payer, state)
    assert len(upstream.requests) == before + 1
    for _ in range(4):  # new connections: the kernel shares them out between the two workers
        again = probe(workers, prober, state)
        assert again.status_code == 504, again.text  # team B's answer is not team A's to read, free
        assert again.headers["x-decisions-cache-hits"] == "0"
        shared = probe(workers, payers_mate, state)
        assert shared.status_code == 200 and cache_counts(shared) == (3, 0)  # team B's, on either worker
    assert len(upstream.requests) == before + 1
    loner, other_loner = new_key(workers), new_key(workers)  # no team: each key is its own scope
    pay(workers, loner, state)
    assert probe(workers, loner, state).status_code == 200
    assert probe(workers, other_loner, state).status_code == 504
    assert probe(workers, MASTER, state).status_code == 504  # the master key has a scope of its own


@pytest.mark.parametrize("scope, mate_hits, stranger_hits", [("key", False, False), ("global", True, True)])
def test_the_scope_setting_narrows_to_the_key_or_shares_with_everyone(upstream, tmp_path, scope, mate_hits,
                                                                      stranger_hits):
    gateway = start_gateway(config(upstream, tmp_path / "gateway.db", scope))
    try:
        team = new_team(gateway)
        payer, mate, stranger = new_key(gateway, team), new_key(gateway, team), new_key(gateway, new_team(gateway))
        state = fresh_state(f"scope {scope}")
        pay(gateway, payer, state)
        assert probe(gateway, payer, state).status_code == 200
        assert (probe(gateway, mate, state).status_code == 200) is mate_hits
        assert (probe(gateway, stranger, state).status_code == 200) is stranger_hits  # global: the oracle
    finally:
        gateway.stop()


def test_an_unknown_scope_fails_the_start_naming_the_setting():
    raw = {"model_list": [{"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": "k"}}],
           "litellm_settings": {"cache": True, "cache_params": {"scope": "tenant"}}}
    with pytest.raises(ConfigError, match=r"litellm_settings\.cache_params\.scope: must be team, key or global"):
        build_config(raw, {}, source="<test>")
