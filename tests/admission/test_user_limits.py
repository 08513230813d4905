"""A user's limits apply to all its keys together, as a team's do (issue 20 item 2): the user's
max_budget caps two of its keys together (one gateway, and two gateway processes sharing Redis and
the database), its rpm_limit caps them together, its database spend (``users.spend``) seeds the
budget's counter, the refusals name the user, and the x-ratelimit headers count the user's window.
Over HTTP against real gateway processes with a priced fake upstream; the users and their keys'
user_id are written straight into the database before the keys are first used."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
import pytest
import sqlalchemy as sa

from gateway.admission.ticket import scopes_of
from gateway.auth.records import Identity, Limits
from gateway.config.loader import load_config
from gateway.db.engine import open_database
from gateway.db.models import User, verification_tokens
from tests.conftest import start_gateway
from tests.fakes.typesafe import FakeTypeSafe
from tests.shared_state.conftest import REDIS_URL, wait_for

MASTER = "sk-master-user-limits-0123456789"
UPSTREAM_KEY = "ts-user-limits-upstream-key"
PRICE = 4e-6  # USD per input token: a call costs about $0.0001


def entry(name: str, fake: FakeTypeSafe) -> dict:
    return {"model_name": name, "litellm_params": {"model": "typesafe/jev-latest", "api_key": UPSTREAM_KEY,
                                                   "api_base": fake.url, "input_cost_per_token": PRICE}}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Two gateway processes on one SQLite database and one Redis, and the database's URL."""
    folder = tmp_path_factory.mktemp("user-limits")
    url = f"sqlite:///{folder / 'gateway.db'}"
    with FakeTypeSafe(UPSTREAM_KEY) as fake:
        path = folder / "gateway.yaml"
        path.write_text(json.dumps({
            "model_list": [entry("jev", fake)],
            "general_settings": {"master_key": MASTER, "database_url": url, "redis_url": REDIS_URL},
            "router_settings": {"num_retries": 0}}))
        first, second = start_gateway(load_config(path)), start_gateway(load_config(path))
        yield first, second, url
        first.stop()
        second.stop()


def admin(gateway, path: str, body: dict) -> dict:
    r = httpx.post(gateway.url + path, json=body, headers={"Authorization": f"Bearer {MASTER}"}, timeout=20)
    assert r.status_code == 200, r.text
    return r.json()


async def _write_user(url: str, user_id: str, tokens: list[str], limits: dict) -> None:
    db = await open_database(url, auto_migrate=False)
    try:
        async with db.sessions() as session:
            session.add(User(user_id=user_id, user_role="internal_user", **limits))
            await session.commit()
        async with db.engine.begin() as conn:
            await conn.execute(sa.update(verification_tokens).where(verification_tokens.c.token.in_(tokens))
                               .values(user_id=user_id))
    finally:
        await db.close()


def user_keys(gateway, url: str, count: int = 2, **limits) -> tuple[str, list[str]]:
    """A fresh internal user with ``limits`` and ``count`` keys of its own, none used yet."""
    user_id = f"u-{uuid.uuid4().hex[:8]}"
    made = [admin(gateway, "/key/generate", {"key_alias": f"{user_id}-{i}"}) for i in range(count)]
    asyncio.run(_write_user(url, user_id, [m["token"] for m in made], limits))
    return user_id, [m["key"] for m in made]


def s1(state: str = "I was charged twice.") -> dict:
    return {"model": "jev", "state": state, "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}


def ask(gateway, key: str) -> httpx.Response:
    return httpx.post(gateway.url + "/v1/systemone", json=s1(), headers={"Authorization": f"Bearer {key}"},
                      timeout=60)


def cost(r: httpx.Response) -> float:
    assert r.status_code == 200, r.text
    return float(r.headers["x-decisions-response-cost"])


def refusal(r: httpx.Response, status: int) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    return (body.get("detail") or body.get("error"))["message"]


@pytest.mark.parametrize("processes", [1, 2], ids=["one-gateway", "two-gateways-sharing-redis"])
def test_a_users_budget_caps_its_keys_together(pair, processes):
    first, second, url = pair
    ask(first, MASTER)  # warm: the group has answered, so a call's worst case is bounded
    user_id, (a, b) = user_keys(first, url, max_budget=0.0005)
    gateways = (first, second)[:processes]
    spent: list[float] = []
    for i in range(30):
        r = ask(gateways[i % processes], (a, b)[i // processes % 2])
        if r.status_code != 200:
            break
        spent.append(cost(r))
    else:
        pytest.fail(f"30 calls of about ${spent[0]} each got past a $0.0005 budget")
    assert len(spent) >= 3  # both keys spent from it before it ran out
    assert 0.0005 - max(spent) < sum(spent) <= 0.0005 + max(spent)  # at most one call above, for both keys
    message = refusal(r, 400)
    assert message.startswith(f"Budget exceeded for user '{user_id}': max_budget $0.0005, spent $"), message
    for gateway in gateways:  # the other key, on every gateway, is refused the same
        for key in (a, b):
            assert f"user '{user_id}'" in refusal(ask(gateway, key), 400)
    other_user, (c,) = user_keys(first, url, count=1, max_budget=0.0005)
    cost(ask(second, c))  # another user's key is not touched


def test_a_users_database_spend_seeds_its_budget(pair):
    first, second, url = pair
    user_id, (a, b) = user_keys(first, url, max_budget=1.0, spend=1.0)
    for gateway, key in ((first, a), (second, b)):
        message = refusal(ask(gateway, key), 400)
        assert f"Budget exceeded for user '{user_id}': max_budget $1, spent $1" in message, message


def test_a_users_rpm_limit_caps_its_keys_together(pair):
    """Within one fixed minute (conftest starts each test at least 3 s before a boundary)."""
    first, second, url = pair
    user_id, (a, b) = user_keys(first, url, rpm_limit=3)
    answered = [ask((first, second)[i % 2], (a, b)[i % 2]) for i in range(3)]
    assert [r.status_code for r in answered] == [200, 200, 200]
    assert [r.headers["x-ratelimit-remaining-requests"] for r in answered] == ["2", "1", "0"]
    assert {r.headers["x-ratelimit-limit-requests"] for r in answered} == {"3"}
    for gateway in (first, second):
        for key in (a, b):
            r = ask(gateway, key)
            message = refusal(r, 429)
            assert message.startswith(f"Rate limit exceeded for user '{user_id}': rpm_limit 3 requests per "
                                      "minute"), message
            assert r.headers["x-ratelimit-remaining-requests"] == "0" and int(r.headers["retry-after"]) >= 1
    _, (c,) = user_keys(first, url, count=1, rpm_limit=3)
    assert ask(first, c).status_code == 200  # another user's window is its own


def test_the_scopes_run_key_then_team_then_user():
    """Budget turns are taken in this order on every request, so two waiting requests never deadlock."""
    limited = Limits(max_budget=1.0)
    who = Identity(key_hash="h", key_alias="k", key_limits=limited, team_id="t", team_alias="T", team_limits=limited,
                   user_id="u-1", user_limits=limited)
    assert [(s.kind, s.id, s.name) for s in scopes_of(who)] == [
        ("key", "h", "key 'k'"), ("team", "t", "team 'T'"), ("user", "u-1", "user 'u-1'")]
    assert [s.kind for s in scopes_of(Identity(key_hash="h", user_id="u-1", user_limits=Limits()))] == []


def test_a_users_calls_reach_its_spend_rows_and_its_database_spend(pair):
    """What the gateway logs for a user's keys carries the user: /spend/logs?user_id= finds the rows, each
    with its "user", and the drain adds their cost to users.spend."""
    first, second, url = pair
    user_id, (a, b) = user_keys(first, url)
    total = cost(ask(first, a)) + cost(ask(second, b))

    def rows() -> list[dict]:
        r = httpx.get(first.url + "/spend/logs", params={"user_id": user_id},
                      headers={"Authorization": f"Bearer {MASTER}"}, timeout=20)
        assert r.status_code == 200, r.text
        return r.json() if len(r.json()) == 2 else []

    found = wait_for(rows, what=f"the two spend rows of {user_id}")
    assert {row["user"] for row in found} == {user_id}
    assert sum(row["spend"] for row in found) == pytest.approx(total, abs=2e-6)

    async def spent() -> float:
        db = await open_database(url, auto_migrate=False)
        try:
            async with db.engine.connect() as conn:
                return float((await conn.execute(sa.select(User.spend).where(User.user_id == user_id))).scalar_one())
        finally:
            await db.close()

    wait_for(lambda: asyncio.run(spent()) == pytest.approx(total, abs=2e-6), what="users.spend to hold the calls")
