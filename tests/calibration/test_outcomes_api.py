"""The decision log and POST /v1/outcomes over real HTTP against a gateway with keys, two teams and a fake upstream.

Every answered question is logged with its site, probabilities and model version; a key posts outcomes
only for its own team's requests (403 saying why); unknown requests, unknown questions, outcomes that
are not options and oversized batches get a 4xx naming the item; a repeat replaces, never adds.
"""

from __future__ import annotations

import json
import math
import sqlite3

import httpx
import pytest

from gateway.calibration.site import sites
from tests.admin_calls import admin_ok
from tests.conftest import start_gateway
from tests.fakes.tempered import TemperedTypeSafe
from tests.shared_state.conftest import wait_for
from translators import systemone

MASTER = "sk-master-outcomes-0123456789"
TS_KEY = "ts-outcomes"
QUESTIONS = {"refund": {"type": "noul", "instructions": "Is this a refund request?"},
             "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset",
                                                                            "neutral": None}},
             "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high"]}}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("outcomes")
    with TemperedTypeSafe(TS_KEY, sharpen=1.0) as fake:
        params = {"model": "typesafe/jev-latest", "api_key": TS_KEY, "api_base": fake.url, "timeout": 10}
        running = start_gateway({
            "model_list": [{"model_name": "jev", "litellm_params": params}],
            "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{folder / 'gw.db'}",
                                 "decision_log": {"capture": "digest"}},
            "router_settings": {"num_retries": 0}})
        try:
            keys = {}
            for team in ("risk", "support"):
                made = admin_ok(running, MASTER, "/team/new", {"team_alias": team})
                keys[team] = admin_ok(running, MASTER, "/key/generate", {"team_id": made["team_id"]})["key"]
            keys["loner"] = admin_ok(running, MASTER, "/key/generate", {})["key"]
            for capture in ("full", "none"):
                keys[capture] = admin_ok(running, MASTER, "/key/generate",
                                         {"metadata": {"decision_log": {"capture": capture}}})["key"]
            yield running, keys
        finally:
            running.stop()


def ask(gateway, key: str, state: str = "Charged twice.") -> httpx.Response:
    response = httpx.post(gateway.url + "/v1/systemone", json={"model": "jev", "state": state, "questions": QUESTIONS},
                          headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert response.status_code == 200, response.text
    return response


def post(gateway, key: str, outcomes: list[dict]) -> httpx.Response:
    return httpx.post(gateway.url + "/v1/outcomes", json={"outcomes": outcomes},
                      headers={"Authorization": f"Bearer {key}"}, timeout=30)


def logged(gateway, request_id: str) -> list[dict]:
    """The request's decision rows, once drained to the database."""
    return wait_for(lambda: _read_sqlite(gateway, request_id), 20, f"no decisions logged for {request_id}")


def _read_sqlite(gateway, request_id: str) -> list[dict]:
    url = gateway.app.state.gateway.config.general_settings["database_url"]
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM decisions WHERE request_id = ? ORDER BY question_index",
                                              (request_id,))]


def test_every_answered_question_is_logged_with_its_site_probabilities_and_version(world):
    gateway, keys = world
    response = ask(gateway, keys["risk"])
    rows = logged(gateway, response.headers["x-request-id"])
    assert [r["question"] for r in rows] == ["refund", "tone", "urgency"]
    req = systemone.parse_request({"model": "jev", "state": "Charged twice.", "questions": QUESTIONS})
    assert [r["site"] for r in rows] == list(sites(req))
    answers = response.json()["answers"]
    probabilities = [json.loads(r["probabilities"]) for r in rows]
    assert probabilities[0] == pytest.approx([answers["refund"]["noul"], 1 - answers["refund"]["noul"]])
    assert probabilities[1] == pytest.approx(list(answers["tone"]["probabilities"].values()))
    assert json.loads(rows[1]["options"]) == ["calm", "angry", "neutral"]
    assert json.loads(rows[2]["options"]) == [0, 1, 2]
    assert {r["model_version"] for r in rows} == {response.json()["model"]} == {"jev-1.13-20260917"}  # as reported
    assert {r["model_group"] for r in rows} == {"jev"}
    assert all(r["input_digest"].startswith("sha256:") and len(r["input_digest"]) == 71 for r in rows)
    assert rows[0]["team_id"] is not None and rows[0]["served"] is None


def test_outcomes_are_taken_for_the_keys_own_team_and_refused_for_another_with_the_reason(world):
    gateway, keys = world
    request_id = ask(gateway, keys["risk"]).headers["x-request-id"]
    logged(gateway, request_id)
    other = post(gateway, keys["support"], [{"request_id": request_id, "question": "refund", "outcome": True}])
    assert other.status_code == 403, other.text
    error = other.json()["error"]
    assert "another team's key" in error["message"] and "outcomes[0].request_id" in error["message"]
    assert error["code"] == "not_your_request" and keys["support"] not in other.text
    loner = post(gateway, keys["loner"], [{"request_id": request_id, "question": "refund", "outcome": True}])
    assert loner.status_code == 403 and "it has no team" in loner.json()["error"]["message"]
    mine = post(gateway, keys["risk"], [{"request_id": request_id, "question": "refund", "outcome": True},
                                        {"request_id": request_id, "question": "tone", "outcome": "angry"},
                                        {"request_id": request_id, "question": 2, "outcome": 1, "weight": 2.0}])
    assert mine.status_code == 200, mine.text
    assert mine.json() == {"recorded": 3, "replaced": 0}
    again = post(gateway, MASTER, [{"request_id": request_id, "question": "refund", "outcome": "yes"}])
    assert again.json() == {"recorded": 1, "replaced": 1}  # idempotent per (request, question): replaced
    rows = {r["question"]: r for r in _read_sqlite(gateway, request_id)}
    assert rows["refund"]["outcome_index"] == 0 and rows["tone"]["outcome_index"] == 1
    assert rows["urgency"]["outcome_index"] == 1 and rows["urgency"]["outcome_weight"] == 2.0
    p_yes = json.loads(rows["refund"]["probabilities"])[0]
    assert rows["refund"]["brier"] == pytest.approx(2 * (1 - p_yes) ** 2)
    assert rows["refund"]["log_loss"] == pytest.approx(-math.log(p_yes))


@pytest.mark.parametrize(("item", "status", "code", "words"), [
    ({"request_id": "req_nothing_like_it", "question": "refund", "outcome": True}, 404, "unknown_request",
     "no answered decision is logged"),
    ({"question": "nope", "outcome": True}, 422, "unknown_question", "has no answered question 'nope'"),
    ({"question": "tone", "outcome": "furious"}, 422, "invalid_outcome", "one of 'calm', 'angry', 'neutral'"),
    ({"question": "refund", "outcome": "maybe"}, 422, "invalid_outcome", "true or false"),
    ({"question": "urgency", "outcome": 7}, 422, "invalid_outcome", "a level index from 0 to 2"),
])
def test_a_bad_outcome_is_a_4xx_naming_the_item_and_nothing_of_the_batch_is_written(world, item, status, code, words):
    gateway, keys = world
    request_id = ask(gateway, keys["risk"], state=f"bad outcome {code} {words}").headers["x-request-id"]
    logged(gateway, request_id)
    good = {"request_id": request_id, "question": "refund", "outcome": False}
    refused = post(gateway, keys["risk"], [good, {"request_id": request_id, **item}])
    assert refused.status_code == status, refused.text
    error = refused.json()["error"]
    assert error["code"] == code and words in error["message"] and "outcomes[1]" in error["message"]
    assert all(r["outcome_index"] is None for r in _read_sqlite(gateway, request_id))  # the good item neither


def test_schema_errors_and_a_batch_over_its_cap_are_4xx_naming_the_field(world):
    gateway, keys = world
    too_many = [{"request_id": "x", "question": "refund", "outcome": True}] * 1001
    response = post(gateway, keys["risk"], too_many)
    assert response.status_code == 413 and "at most 1000" in response.json()["error"]["message"]
    for body, field in (({"outcomes": [{"request_id": "x", "question": "q"}]}, "outcome"),
                        ({"outcomes": [{"request_id": "x", "question": "q", "outcome": True, "weight": -1}]},
                         "weight"),
                        ({"outcomes": []}, "outcomes")):
        bad = httpx.post(gateway.url + "/v1/outcomes", json=body, headers={"Authorization": f"Bearer {keys['risk']}"})
        assert bad.status_code == 400, bad.text
        assert field in bad.json()["error"]["message"]
    anonymous = httpx.post(gateway.url + "/v1/outcomes", json={"outcomes": too_many[:1]})
    assert anonymous.status_code == 401


def test_a_team_key_reads_the_report_of_its_own_team_only(world):
    gateway, keys = world
    for team in ("support", "risk"):  # one outcome of each team's (not relying on the other tests' outcomes)
        request_id = ask(gateway, keys[team], state=f"{team} only").headers["x-request-id"]
        logged(gateway, request_id)
        assert post(gateway, keys[team], [{"request_id": request_id, "question": "refund",
                                           "outcome": True}]).status_code == 200

    def report(key: str) -> dict:
        response = httpx.get(gateway.url + "/calibration/report", params={"model_group": "jev"},
                             headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def refund_n(body: dict) -> float:
        return sum(s["raw"]["n"] for s in body["sites"] if s["question"] == "refund")

    support, everything = report(keys["support"]), report(MASTER)
    assert refund_n(support) == 1.0 and refund_n(everything) >= 2.0
    assert support["binning"]["bins"] == 15


def test_a_keys_capture_level_keeps_the_input_its_digest_or_neither(world):
    gateway, keys = world
    full = ask(gateway, keys["full"], state="keep me whole").headers["x-request-id"]
    none = ask(gateway, keys["none"], state="keep nothing").headers["x-request-id"]
    assert {r["input_digest"] for r in logged(gateway, none)} == {None}
    assert all(r["input_digest"].startswith("sha256:") for r in logged(gateway, full))
    url = gateway.app.state.gateway.config.general_settings["database_url"]
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        kept = dict(conn.execute("SELECT request_id, content FROM decision_inputs").fetchall())
    assert none not in kept and json.loads(kept[full])["state"] == "keep me whole"


def test_times_out_of_range_and_bad_filters_are_400_naming_the_field(world):
    gateway, keys = world
    headers = {"Authorization": f"Bearer {keys['risk']}"}
    for params, field in (({"start": "9999-12-31T23:59:59-01:00"}, "start"), ({"site": "not-a-site"}, "site"),
                          ({"start": "2026-12-02T00:00:00Z", "end": "2026-12-01T00:00:00Z"}, "start")):
        response = httpx.get(gateway.url + "/calibration/report", params=params, headers=headers, timeout=10)
        assert response.status_code == 400, response.text
        assert field in response.json()["error"]["message"]
    late = post(gateway, keys["risk"], [{"request_id": "x", "question": "q", "outcome": True,
                                          "observed_at": "9999-12-31T23:59:59-01:00"}])
    assert late.status_code == 400 and "observed_at" in late.json()["error"]["message"]
    refused = httpx.post(gateway.url + "/calibration/fit", json={"model_group": "jev"}, headers=headers, timeout=10)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "admin_only"
