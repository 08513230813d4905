"""Costs are shown without float noise (issue 20 item 6): three calls at $0.00026 are $0.00078, not
``0.0007799999999999999``, in the response headers, ``/key/info``, ``/team/info``, ``/key/list``,
``/spend/logs`` and ``/global/spend/report``, while the database keeps the sums as they were added.

A real gateway (master key, SQLite) over HTTP in front of a fake TypeSafe priced per request."""

from __future__ import annotations

import sqlite3
from decimal import Decimal

import httpx
import pytest

from gateway.spend.cost import COST_DIGITS, format_cost, shown_cost
from tests.admin_calls import admin_ok
from tests.conftest import start_gateway
from tests.fakes.typesafe import FakeTypeSafe
from tests.settled import tasks_of, wait_settled

MASTER = "sk-master-cost-shown-0123456"
TS_KEY = "ts-cost-shown-key"
ONE = {"refund": {"type": "noul", "instructions": "Refund?"}}
PER_REQUEST = 0.00026  # three of them add up to 0.0007799999999999999 in binary floating point
NOISY_PRICE = 1e-7  # per input token: the fake counts 29 for NOISY_STATE, and 29 x 1e-7 = 2.8999999999999998e-06
NOISY_STATE = "Charged twice, again."


def digits(text: str) -> int:
    return len(Decimal(text).normalize().as_tuple().digits)


@pytest.fixture
def running(tmp_path):
    db = tmp_path / "gateway.db"
    with FakeTypeSafe(TS_KEY) as fake:
        gateway = start_gateway({
            "model_list": [
                {"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": TS_KEY,
                                                         "api_base": fake.url, "cost_per_request": PER_REQUEST,
                                                         "input_cost_per_token": 0.0}},
                {"model_name": "noisy", "litellm_params": {"model": "typesafe/jev-latest", "api_key": TS_KEY,
                                                           "api_base": fake.url,
                                                           "input_cost_per_token": NOISY_PRICE}},
            ],
            "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"},
            "router_settings": {"num_retries": 0}})
        try:
            yield gateway, db
        finally:
            gateway.stop()


def test_three_calls_at_0_00026_show_0_00078_everywhere(running):
    gateway, db = running
    team = admin_ok(gateway, MASTER, "/team/new", {"team_alias": "costs"})["team_id"]
    made = admin_ok(gateway, MASTER, "/key/generate", {"team_id": team})
    key, token = made["key"], made["token"]
    auth = {"Authorization": f"Bearer {key}"}
    resting = tasks_of(gateway)
    spent = []
    for _ in range(3):
        answered = httpx.post(gateway.url + "/v1/systemone", json={"model": "jev", "state": "Charged twice.",
                                                                    "questions": ONE}, headers=auth, timeout=30)
        assert answered.status_code == 200, answered.text
        assert answered.headers["x-litellm-response-cost"] == "0.00026"
        spent.append(answered.headers["x-litellm-key-spend"])
    assert spent[-1] == "0.00078"  # the counted spend with this call: 0.0007799999999999999 before
    wait_settled(gateway, resting, "the three spend rows")

    with sqlite3.connect(db) as conn:  # stored as added: the noise is there, and only the showing drops it
        stored = conn.execute("SELECT spend FROM verification_tokens WHERE token = ?", (token,)).fetchone()[0]
    assert stored == PER_REQUEST + PER_REQUEST + PER_REQUEST != 0.00078

    master = {"Authorization": f"Bearer {MASTER}"}

    def get(path: str, **params: object) -> httpx.Response:
        response = httpx.get(gateway.url + path, params=params, headers=master, timeout=10)
        assert response.status_code == 200, response.text
        assert "0.000779999" not in response.text
        return response

    info = get("/key/info", key=token).json()
    assert info["info"]["spend"] == 0.00078 and info["usage"]["total_spend"] == 0.00078
    assert get("/team/info", team_id=team).json()["team_info"]["spend"] == 0.00078
    assert [k["spend"] for k in get("/key/list", return_full_object="true").json()["keys"]] == [0.00078]
    rows = get("/spend/logs/v2", api_key=token).json()["data"]
    assert [row["spend"] for row in rows] == [0.00026] * 3
    report = get("/global/spend/report", group_by="key").json()
    assert [(entry["api_key"], entry["spend"]) for entry in report] == [(token, 0.00078)]


def test_one_call_priced_per_token_shows_its_cost_in_twelve_digits(running):
    gateway, db = running
    answered = httpx.post(gateway.url + "/v1/systemone", json={"model": "noisy", "state": NOISY_STATE,
                                                                "questions": ONE},
                          headers={"Authorization": f"Bearer {MASTER}"}, timeout=30)
    assert answered.status_code == 200, answered.text
    shown = answered.headers["x-litellm-response-cost"]
    assert answered.headers["x-decisions-response-cost"] == shown
    tokens = answered.json()["usage"]["input_tokens"]
    raw = tokens * NOISY_PRICE
    assert digits(repr(raw)) > COST_DIGITS  # the price times the count carries noise ...
    assert shown == format_cost(raw) == repr(shown_cost(raw)) and digits(shown) <= COST_DIGITS  # ... not shown
    assert abs(float(shown) - raw) <= raw * 1e-12
