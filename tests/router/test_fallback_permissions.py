"""Fallbacks never reach a model the caller may not use (issue 19 item 2): every kind (``fallbacks``,
``default_fallbacks``, ``capacity_fallbacks`` / ``context_window_fallbacks``) is filtered by the key's
and team's models before the attempt, and the error says which were skipped.

A real gateway (master key, SQLite) in front of fake TypeSafe servers over HTTP; keys made through
the admin API; the System One wire with httpx and the OpenAI wire with the openai client."""

from __future__ import annotations

import threading

import httpx
import pytest

from tests.admin_calls import admin_ok
from tests.conftest import start_gateway
from tests.fakes.typesafe import FakeTypeSafe
from tests.shared_state.conftest import wait_for

MASTER = "sk-master-fallback-perms-0123"
KEY = "ts-fallback-perms-key"
ONE = {"refund": {"type": "noul", "instructions": "Refund?"}}
LONG = "I was charged twice. " * 40  # about 210 tokens: past small's context, within expensive's


@pytest.fixture(scope="module")
def fakes():
    with FakeTypeSafe(KEY) as cheap, FakeTypeSafe(KEY) as expensive, FakeTypeSafe(KEY) as small:
        yield {"cheap": cheap, "expensive": expensive, "small": small}


@pytest.fixture(autouse=True)
def _fresh(fakes):
    yield
    for fake in fakes.values():
        fake.reset()


def config(fakes, db) -> dict:
    def entry(name: str, fake, **params) -> dict:
        return {"model_name": name, "litellm_params": {"model": "typesafe/jev-latest", "api_key": KEY,
                                                        "api_base": fake.url, "timeout": 10, **params}}

    return {
        "model_list": [entry("cheap", fakes["cheap"]), entry("other", fakes["cheap"]),
                       entry("expensive", fakes["expensive"], input_cost_per_token=4.2e-7),
                       entry("small", fakes["small"], max_context_tokens=50)],
        "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"},
        "router_settings": {"num_retries": 0, "disable_cooldowns": True,
                            "fallbacks": [{"cheap": ["expensive"]}], "default_fallbacks": ["expensive"],
                            "context_window_fallbacks": [{"small": ["expensive"]}]}}


@pytest.fixture(scope="module")
def gateway(fakes, tmp_path_factory):
    running = start_gateway(config(fakes, tmp_path_factory.mktemp("fallback-perms") / "gateway.db"))
    yield running
    running.stop()


@pytest.fixture
def fresh_gateway(fakes, tmp_path):
    """A gateway of this test's own: what it learned of each deployment's token counts is what this test
    taught it (the module's gateway learns from whichever of its tests ran before on this worker: a long
    input at expensive teaches it a lower ratio of counted to estimated tokens than a short one)."""
    running = start_gateway(config(fakes, tmp_path / "gateway.db"))
    yield running
    running.stop()


def admin(gateway, path: str, body: dict) -> dict:
    return admin_ok(gateway, MASTER, path, body)


def key(gateway, models: list[str]) -> str:
    team = admin(gateway, "/team/new", {"models": models})["team_id"]
    return admin(gateway, "/key/generate", {"team_id": team, "models": models})["key"]


def ask(gateway, key_: str, model: str, state: str = "I was charged twice.") -> httpx.Response:
    return httpx.post(gateway.url + "/v1/systemone", json={"model": model, "state": state, "questions": ONE},
                      headers={"Authorization": f"Bearer {key_}"}, timeout=30)


@pytest.mark.parametrize("group", ["cheap", "other"])  # its own fallbacks; default_fallbacks
def test_a_failing_group_never_falls_back_to_a_model_the_key_may_not_use(gateway, fakes, group):
    cheap_only = key(gateway, [group])
    fakes["cheap"].fail_next(500, "cheap is down")
    refused = ask(gateway, cheap_only, group)
    assert refused.status_code == 502, refused.text
    message = refused.json()["detail"]["message"]
    assert "cheap is down" in message and "may not use them: 'expensive'" in message
    assert fakes["expensive"].requests == []  # ten times the price, never asked
    assert refused.headers["x-decisions-attempted-fallbacks"] == "0"
    fakes["cheap"].fail_next(500, "cheap is down")
    allowed = ask(gateway, key(gateway, [group, "expensive"]), group)
    assert allowed.status_code == 200 and len(fakes["expensive"].requests) == 1
    assert allowed.headers["x-decisions-attempted-fallbacks"] == "1"
    fakes["cheap"].fail_next(500, "cheap is down")
    assert ask(gateway, MASTER, group).status_code == 200 and len(fakes["expensive"].requests) == 2


def test_a_capacity_fallback_the_key_may_not_use_is_a_403_in_each_wire(gateway, fakes):
    import openai

    small_only = key(gateway, ["small"])
    refused = ask(gateway, small_only, "small", LONG)  # past small's context window
    assert refused.status_code == 403, refused.text
    detail = refused.json()["detail"]
    assert detail["error_type"] == "fallback_not_allowed" and "'expensive'" in detail["message"]
    client = openai.OpenAI(api_key=small_only, base_url=f"{gateway.url}/v1", max_retries=0)
    with pytest.raises(openai.PermissionDeniedError) as raised:
        client.decisions.create(model="small", input=LONG, questions=[
            {"type": "predicate", "name": "refund", "instructions": "Refund?"}])
    assert raised.value.body["code"] == "fallback_not_allowed" and "'expensive'" in raised.value.body["message"]
    assert fakes["expensive"].requests == [] and fakes["small"].requests == []
    assert ask(gateway, small_only, "small").status_code == 200  # a short input: small itself answers
    checked = httpx.post(gateway.url + "/v1/systemone/validate", json={"model": "small", "state": LONG,
                                                                        "questions": ONE},
                         headers={"Authorization": f"Bearer {small_only}"}, timeout=30)
    assert checked.status_code == 403 and checked.json()["detail"]["error_type"] == "fallback_not_allowed"
    assert ask(gateway, MASTER, "small", LONG).status_code == 200 and len(fakes["expensive"].requests) == 1


def test_the_budget_holds_only_the_fallbacks_the_key_may_use(fresh_gateway, fakes):
    """A request in flight holds its worst case against the key's budget: for a key limited to cheap,
    cheap's alone, not that of expensive, the fallback it can never reach (ten times the price)."""
    gateway = fresh_gateway
    for group in ("cheap", "expensive"):  # each has answered: the bounds are learned, not unknown
        assert ask(gateway, MASTER, group).status_code == 200

    def held_in_flight(models: list[str]) -> float:
        budgeted = admin(gateway, "/key/generate", {"models": models, "max_budget": 1.0})["key"]
        fakes["cheap"].hang_next(30.0)
        worker = threading.Thread(target=ask, args=(gateway, budgeted, "cheap"))
        worker.start()
        try:
            wait_for(lambda: fakes["cheap"].hanging, what="the call held at cheap")
            info = httpx.get(gateway.url + "/key/info", params={"key": budgeted},
                             headers={"Authorization": f"Bearer {budgeted}"}, timeout=20)
            assert info.status_code == 200, info.text
            return info.json()["usage"]["period_spend"]
        finally:
            fakes["cheap"].release()
            worker.join(timeout=30)

    cheap_only, both = held_in_flight(["cheap"]), held_in_flight(["cheap", "expensive"])
    assert 0 < cheap_only and both > 5 * cheap_only, (cheap_only, both)
