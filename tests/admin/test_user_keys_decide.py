"""A user's key on the decision routes, over real HTTP against a gateway process: the user's models bound
its keys' (a refusal names the user), its spend rows carry the user, and deleting the user stops its keys
in every route within the key cache's second."""

from __future__ import annotations

import httpx
import pytest

from tests.admin_calls import admin_ok
from tests.conftest import start_gateway
from tests.fakes.typesafe import FakeTypeSafe
from tests.shared_state.conftest import wait_for

MASTER = "sk-master-user-keys-0123456789"
TS_KEY = "ts-user-keys"
ONE = {"refund": {"type": "noul", "instructions": "Refund?"}}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    with FakeTypeSafe(TS_KEY) as fake:
        params = {"model": "typesafe/jev-latest", "api_key": TS_KEY, "api_base": fake.url, "timeout": 10}
        running = start_gateway({
            "model_list": [{"model_name": "jev", "litellm_params": params},
                           {"model_name": "other", "litellm_params": params}],
            "general_settings": {"master_key": MASTER,
                                 "database_url": f"sqlite:///{tmp_path_factory.mktemp('users') / 'gw.db'}"},
            "router_settings": {"num_retries": 0}})
        yield running
        running.stop()


def ask(gateway, key: str, model: str = "jev") -> httpx.Response:
    return httpx.post(gateway.url + "/v1/systemone", json={"model": model, "state": "Charged twice.",
                                                            "questions": ONE},
                      headers={"Authorization": f"Bearer {key}"}, timeout=30)


def test_a_users_models_bound_its_keys_and_its_rows_carry_it(gateway):
    user = admin_ok(gateway, MASTER, "/user/new", {"user_id": "rita", "models": ["jev"]})
    key = user["key"]
    assert ask(gateway, key).status_code == 200
    refused = ask(gateway, key, "other")
    assert refused.status_code == 403, refused.text
    message = refused.json()["detail"]["message"]
    assert "user 'rita'" in message and "jev" in message and key not in refused.text
    wider = admin_ok(gateway, MASTER, "/key/generate", {"user_id": "rita", "models": ["jev", "other"]})["key"]
    assert ask(gateway, wider, "other").status_code == 403  # the key's own models do not widen the user's
    answered = ask(gateway, key)
    request_id = answered.headers["x-request-id"]
    headers = {"Authorization": f"Bearer {MASTER}"}

    def rows() -> list[dict]:
        return httpx.get(gateway.url + "/spend/logs", params={"request_id": request_id}, headers=headers,
                         timeout=10).json()

    wait_for(lambda: rows() != [], 20, lambda: f"no spend row for {request_id}")
    assert rows()[0]["user"] == "rita"
    mine = httpx.get(gateway.url + "/spend/logs", params={"user_id": "rita"}, headers=headers, timeout=10).json()
    assert request_id in {row["request_id"] for row in mine} and {row["user"] for row in mine} == {"rita"}


def test_deleting_a_user_stops_its_keys_on_the_decision_routes(gateway):
    key = admin_ok(gateway, MASTER, "/user/new", {"user_id": "sam"})["key"]
    assert ask(gateway, key).status_code == 200
    deleted = admin_ok(gateway, MASTER, "/user/delete", {"user_ids": ["sam"]})
    assert "sam" in str(deleted)
    wait_for(lambda: ask(gateway, key).status_code == 401, 10, lambda: "the deleted user's key still answers")
    assert ask(gateway, key).json()["detail"]["error_type"] in ("invalid_api_key", "authentication_error")
