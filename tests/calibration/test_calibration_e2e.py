"""Calibration end to end over HTTP: outcomes from an overconfident upstream, a fit, and its application on both
wires with the real typesafe-sdk, openai and Nimble clients, the cache keeping raw answers, rollback.

The fake upstream reports a known truth at inverse temperature 2.5 (tests/fakes/tempered.py); outcomes are
drawn from the truth, so the right calibrator is temperature 2.5 (beta 0.4).
"""

from __future__ import annotations

import json
import random
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from bespokelabs.nimble import Nimble
from typesafe_sdk import TypeSafeClient

from gateway.calibration import fitting
from gateway.calibration.site import sites
from gateway.calibration.temperature import scaled
from tests.conftest import start_gateway
from tests.fakes.tempered import TemperedTypeSafe, draw, truth
from tests.shared_state.conftest import wait_for
from translators import systemone

TS_KEY = "ts-calibration"
SHARPEN = 2.5
LABELS = {"calm": None, "angry": "upset", "neutral": None, "mixed": None}
QUESTION = {"type": "choice", "instructions": "Tone of the message?", "criteria": LABELS}
OPENAI_QUESTION = {"type": "choice", "name": "tone", "instructions": "Tone of the message?",
                   "choices": [{"value": "calm"}, {"value": "angry", "description": "upset"}, {"value": "neutral"},
                               {"value": "mixed"}]}
ASKED = 1000


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("calibration")
    with TemperedTypeSafe(TS_KEY, sharpen=SHARPEN) as fake:
        params = {"model": "typesafe/jev-latest", "api_key": TS_KEY, "api_base": fake.url, "timeout": 10}
        db = folder / "gw.db"
        running = start_gateway({
            "model_list": [{"model_name": "jev", "litellm_params": params, "model_info": {"calibration": "apply"}}],
            "litellm_settings": {"cache": True},
            "general_settings": {"database_url": f"sqlite:///{db}"},
            "router_settings": {"num_retries": 0}})
        try:
            yield running, db
        finally:
            running.stop()


CLIENT = httpx.Client(timeout=30)  # one pool: a new httpx client each call builds an SSL context (~25 ms)


def ask(url: str, state: str, headers: dict | None = None) -> httpx.Response:
    response = CLIENT.post(url + "/v1/systemone", json={"model": "jev", "state": state, "questions": {"tone": QUESTION}},
                          headers=headers or {}, timeout=30)
    assert response.status_code == 200, response.text
    return response


def site() -> str:
    return sites(systemone.parse_request({"model": "jev", "state": "x", "questions": {"tone": QUESTION}}))[0]


def logged_count(db) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM decisions").fetchone()[0])


@pytest.fixture(scope="module")
def fitted(world):
    gateway, db = world
    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda i: ask(gateway.url, f"message {i}"), range(ASKED)))
    wait_for(lambda: logged_count(db) >= ASKED, 30, "the decisions did not reach the database")
    rng = random.Random(7)
    drawn = [draw(truth(f"message {i}", "tone", 4), rng) for i in range(ASKED)]
    outcomes = [{"request_id": r.headers["x-request-id"], "question": "tone", "outcome": list(LABELS)[k]}
                for r, k in zip(responses, drawn, strict=True)]
    for start in range(0, len(outcomes), 500):
        posted = httpx.post(gateway.url + "/v1/outcomes", json={"outcomes": outcomes[start:start + 500]}, timeout=30)
        assert posted.status_code == 200, posted.text
    fit = httpx.post(gateway.url + "/calibration/fit", json={"model_group": "jev", "site": site()}, timeout=60)
    assert fit.status_code == 200, fit.text
    # the same fit here, on the answers as the clients got them (the request ids decide the split)
    samples = [fitting.Sample(tuple(r.json()["answers"]["tone"]["probabilities"].values()), k, 1.0,
                              r.headers["x-request-id"], 0) for r, k in zip(responses, drawn, strict=True)]
    return fit.json(), fitting.fit_calibrator("choice", samples)


def test_a_fit_recovers_the_temperature_and_brings_the_held_out_ece_down(fitted):
    fitted, here = fitted
    assert fitted["method"] == "temperature" and fitted["kind"] == "choice"
    assert fitted["params"]["beta"] == pytest.approx(here.calibrator.params["beta"], rel=1e-9)
    # 700 train answers: the fitted temperature varies by about 8 % with the split (the request ids), so the
    # bound here is loose; tests/calibration/test_fitting.py and bench/calibration.py hold it to 10 %
    assert fitted["temperature"] == pytest.approx(SHARPEN, rel=0.3)  # softening an overconfident upstream
    before, after = fitted["held_out"]["before"], fitted["held_out"]["after"]
    assert before["ece"] == pytest.approx(here.before.ece) and after["ece"] == pytest.approx(here.after.ece)
    assert after["log_loss"] == pytest.approx(here.after.log_loss) and after["log_loss"] < before["log_loss"]
    assert before["ece"] > after["ece"]
    assert fitted["train_n"] + fitted["held_out_n"] == ASKED
    assert fitted["calibrator"]["version"] == 1 and fitted["calibrator"]["active"] is True


def test_answers_carry_calibrated_probabilities_on_both_wires_with_the_raw_ones_in_a_header(world, fitted):
    gateway, _ = world
    beta = fitted[0]["params"]["beta"]
    state = "a fresh message for the clients"
    raw = [round(p, 6) for p in truth(state, "tone", 4)]
    with TypeSafeClient(api_key="any", base_url=gateway.url, compression=False) as client:
        answer = client.system_one(state, {"tone": QUESTION}, model="jev")
    headers = answer.raw_http_response.headers
    assert headers["x-decisions-calibration"].startswith("applied; questions=1/1; calibrators=")
    sent_raw = json.loads(headers["x-decisions-raw-probabilities"])["tone"]
    tempered = [p ** SHARPEN for p in raw]
    assert sent_raw == pytest.approx([p / sum(tempered) for p in tempered], abs=1e-5)
    expected = scaled(tuple(sent_raw), beta)
    assert list(answer.answers["tone"].probabilities.values()) == pytest.approx(list(expected), abs=1e-9)
    assert answer.answers["tone"].choice == list(LABELS)[max(range(4), key=lambda i: expected[i])]

    import openai

    decision = openai.OpenAI(api_key="any", base_url=f"{gateway.url}/v1", max_retries=0).decisions.create(
        model="jev", input=state, questions=[OPENAI_QUESTION])
    (tone,) = decision.answers
    assert [p.probability for p in tone.probabilities] == pytest.approx(list(expected), abs=1e-9)
    with Nimble(base_url=gateway.url, model="jev", max_retries=0) as nimble:
        strict = nimble.system_one(state, {"tone": QUESTION})
    assert list(strict.answers["tone"].probabilities.values()) == pytest.approx(list(expected), abs=1e-9)
    off = ask(gateway.url, state, {"x-decisions-calibration": "off"})
    assert list(off.json()["answers"]["tone"]["probabilities"].values()) == pytest.approx(sent_raw, abs=1e-12)
    assert off.headers["x-decisions-calibration"] == "off"
    bad = httpx.post(gateway.url + "/v1/systemone", json={"model": "jev", "state": state, "questions": {"tone": QUESTION}},
                     headers={"x-decisions-calibration": "sometimes"})
    assert bad.status_code == 400 and "x-decisions-calibration" in bad.text


def test_the_cache_keeps_raw_answers_so_a_calibrator_applies_to_cached_ones(world, fitted):
    gateway, db = world
    state = "cached before the calibration question"
    first = ask(gateway.url, state, {"x-decisions-calibration": "off"})
    again = ask(gateway.url, state)
    assert again.headers["x-decisions-cache-hits"] == "1"
    raw = list(first.json()["answers"]["tone"]["probabilities"].values())
    calibrated = list(again.json()["answers"]["tone"]["probabilities"].values())
    assert calibrated == pytest.approx(list(scaled(tuple(raw), fitted[0]["params"]["beta"])), abs=1e-9)
    rid = again.headers["x-request-id"]

    def row():
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT probabilities, served, cached, calibrator_id FROM decisions "
                                "WHERE request_id = ?", (rid,)).fetchone()

    probabilities, served, cached, calibrator_id = wait_for(row, 20, "the cached answer's decision")
    assert json.loads(probabilities) == pytest.approx(raw) and json.loads(served) == pytest.approx(calibrated)
    assert cached == 1 and calibrator_id == fitted[0]["calibrator"]["id"]


def test_rollback_answers_raw_again_and_too_few_outcomes_refuse_a_fit(world, fitted):
    gateway, _ = world
    listed = httpx.get(gateway.url + "/calibration/calibrators", params={"model_group": "jev"}).json()["calibrators"]
    assert [c["version"] for c in listed] == [1]
    few = httpx.post(gateway.url + "/calibration/fit", json={"model_group": "jev", "site": "0" * 32})
    assert few.status_code == 422 and "has 0 outcomes; a fit needs at least 50" in few.json()["error"]["message"]
    rolled = httpx.post(gateway.url + "/calibration/rollback", json={"model_group": "jev", "site": site()})
    assert rolled.status_code == 200 and rolled.json()["activated"] is None
    plain = ask(gateway.url, "after the rollback")
    assert "x-decisions-calibration" not in plain.headers
    assert httpx.post(gateway.url + "/calibration/rollback",
                      json={"model_group": "jev", "site": site()}).status_code == 404
    refit = httpx.post(gateway.url + "/calibration/fit", json={"model_group": "jev", "site": site()}, timeout=60)
    assert refit.json()["calibrator"]["version"] == 2
    report = httpx.get(gateway.url + "/calibration/report", params={"site": site()}).json()
    (row,) = report["sites"]
    assert row["raw"]["n"] >= ASKED and row["raw"]["ece"] > 0.05
    assert len(row["raw"]["bins"]) > 3 and row["raw"]["ece_interval"][0] <= row["raw"]["ece"]


def test_a_yes_no_site_gets_platt_scaling_on_both_wires(world):
    gateway, db = world
    refund = {"type": "noul", "instructions": "Is this a refund request?"}
    before = logged_count(db)

    def asked(i: int) -> httpx.Response:
        response = CLIENT.post(gateway.url + "/v1/systemone", json={"model": "jev", "state": f"refund {i}",
                                                                    "questions": {"refund": refund}})
        assert response.status_code == 200, response.text
        return response

    responses = [asked(i) for i in range(120)]
    wait_for(lambda: logged_count(db) >= before + 120, 30, "the yes/no decisions did not reach the database")
    rng = random.Random(5)
    outcomes = [{"request_id": r.headers["x-request-id"], "question": "refund",
                 "outcome": draw(truth(f"refund {i}", "refund", 2), rng) == 0} for i, r in enumerate(responses)]
    assert httpx.post(gateway.url + "/v1/outcomes", json={"outcomes": outcomes}, timeout=30).status_code == 200
    yes_site = sites(systemone.parse_request({"model": "jev", "state": "x", "questions": {"refund": refund}}))[0]
    fit = httpx.post(gateway.url + "/calibration/fit", json={"model_group": "jev", "site": yes_site}, timeout=60).json()
    assert fit["method"] == "platt" and fit["kind"] == "yes_no" and set(fit["params"]) == {"a", "b"}
    from gateway.calibration import platt

    answer = ask_yes(gateway.url, refund)
    raw = json.loads(answer.headers["x-decisions-raw-probabilities"])["refund"]
    expected = platt.apply(raw[0], fit["params"]["a"], fit["params"]["b"])
    assert answer.json()["answers"]["refund"]["noul"] == pytest.approx(expected, abs=1e-9)
    import openai

    decision = openai.OpenAI(api_key="any", base_url=f"{gateway.url}/v1", max_retries=0).decisions.create(
        model="jev", input="a new refund question", questions=[{"type": "predicate", "name": "refund",
                                                                "instructions": "Is this a refund request?"}])
    assert decision.answers[0].probability == pytest.approx(expected, abs=1e-9)


def ask_yes(url: str, refund: dict) -> httpx.Response:
    response = CLIENT.post(url + "/v1/systemone", json={"model": "jev", "state": "a new refund question",
                                                        "questions": {"refund": refund}})
    assert response.status_code == 200, response.text
    return response
