"""The spend log shows what callers saw (issue 19 item 14), through a running gateway: a call refused
for its model has a row, and the master key's and a deleted key's spend carry their names in the
report by key, never a bare hash."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import start_gateway
from tests.fakes.typesafe import FakeTypeSafe
from tests.shared_state.conftest import wait_for

MASTER = "sk-master-spend-seen-0123456789"
UPSTREAM_KEY = "ts-spend-seen-upstream-key"
S1 = {"state": "I was charged twice.", "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    db = tmp_path_factory.mktemp("db") / "gateway.db"
    with FakeTypeSafe(UPSTREAM_KEY) as fake:
        running = start_gateway({
            "model_list": [{"model_name": "jev", "litellm_params": {
                "model": "typesafe/jev-latest", "api_key": UPSTREAM_KEY, "api_base": fake.url,
                "input_cost_per_token": 1e-6}}],
            "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"},
            "router_settings": {"num_retries": 0}})
        yield running
        running.stop()


def call(gateway, path: str, body: dict | None = None, *, key: str = MASTER, method: str = "POST") -> httpx.Response:
    return httpx.request(method, gateway.url + path, json=body, headers={"Authorization": f"Bearer {key}"},
                         timeout=20)


def new_key(gateway, alias: str) -> str:
    made = call(gateway, "/key/generate", {"key_alias": alias})
    assert made.status_code == 200, made.text
    return made.json()["key"]


def test_a_call_refused_for_its_model_has_a_spend_row(gateway):
    key = new_key(gateway, "seer")
    unknown = call(gateway, "/v1/systemone", {**S1, "model": "no-such-model"}, key=key)
    missing = call(gateway, "/v1/decisions", {"input": "x", "questions": []}, key=key)
    assert unknown.status_code == 400 and missing.status_code == 400

    def rows() -> list[dict]:
        logs = call(gateway, "/spend/logs/v2", method="GET", key=MASTER).json()["data"]
        return [row for row in logs if row["request_id"] in {unknown.headers["x-request-id"],
                                                              missing.headers["x-request-id"]}]

    found = wait_for(lambda: len(seen := rows()) == 2 and seen, what="the refused calls' spend rows")
    by_id = {row["request_id"]: row for row in found}
    row = by_id[unknown.headers["x-request-id"]]
    assert (row["status"], row["error_class"], row["key_alias"], row["spend"]) == (400, "model_not_found", "seer", 0)
    assert row["model_group"] is None and row["metadata"]["requested_model"] == "no-such-model"
    assert by_id[missing.headers["x-request-id"]]["status"] == 400
    assert key not in str(found) and MASTER not in str(found)


def test_the_master_keys_and_a_deleted_keys_spend_carry_their_names_in_the_report(gateway):
    doomed = new_key(gateway, "doomed")
    answers = [call(gateway, "/v1/systemone", {**S1, "model": "jev"}, key=key) for key in (MASTER, doomed)]
    assert [a.status_code for a in answers] == [200, 200]
    ids = {a.headers["x-request-id"] for a in answers}

    def drained() -> bool:
        logs = call(gateway, "/spend/logs/v2", method="GET").json()["data"]
        return ids <= {row["request_id"] for row in logs}

    wait_for(drained, what="both calls' spend rows in the database")
    assert call(gateway, "/key/delete", {"key_aliases": ["doomed"]}).status_code == 200
    by_key = call(gateway, "/global/spend/report?group_by=key", method="GET").json()
    aliases = {entry["key_alias"] for entry in by_key if entry["spend"] > 0}
    assert {"master key", "doomed"} <= aliases and None not in aliases, by_key
    assert doomed not in str(by_key) and MASTER not in str(by_key)
