"""``/health/providers``: each deployment's last outcome, latency and cooldown from real traffic, for
the master key only, billing nothing; ``?probe=true`` calls the deployments, says it is billable,
and writes each probe to the spend log as a ``health_probe``."""

from __future__ import annotations

import sqlite3

import httpx
import pytest

from tests.conftest import RunningGateway, start_gateway
from tests.operations.conftest import KEY, MASTER, SlowTypeSafe, auth, body, entry, wait_until

SECRET_QUERY = "sig=do-not-show-this-0123"


def health(gateway: RunningGateway, key: str | None = MASTER, **params: str) -> httpx.Response:
    return httpx.get(f"{gateway.url}/health/providers", params=params, headers=auth(key), timeout=60)


def by_group(report: dict) -> dict[str, dict]:
    return {entry["model_group"]: entry for entry in report["deployments"]}


def spend(db_path, request_id: str) -> tuple | None:
    with sqlite3.connect(db_path) as conn:
        return conn.execute("SELECT call_type, status, spend, model_group FROM spend_logs WHERE request_id = ?",
                            (request_id,)).fetchone()


@pytest.fixture
def fakes():
    with SlowTypeSafe() as good, SlowTypeSafe() as flaky:
        yield good, flaky


@pytest.fixture
def gateway(fakes, tmp_path):
    good, flaky = fakes
    db = tmp_path / "spend.db"
    gw = start_gateway({
        "model_list": [entry("jev", good.url), entry("flaky", flaky.url),
                       entry("other", f"{good.url}/?{SECRET_QUERY}")],
        "router_settings": {"num_retries": 0, "allowed_fails": 0, "cooldown_time": 60},
        "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"}})
    gw.db_path = db  # type: ignore[attr-defined]
    yield gw
    gw.stop()


def test_the_report_comes_from_traffic_and_calls_no_upstream(gateway, fakes):
    good, flaky = fakes
    before = by_group(health(gateway).json())
    assert {name: entry["state"] for name, entry in before.items()} == {
        "jev": "unknown", "flaky": "unknown", "other": "unknown"}
    assert good.requests == [] and flaky.requests == []  # nothing was asked: nothing billed

    for _ in range(3):
        assert httpx.post(f"{gateway.url}/v1/systemone", json=body("jev"), headers=auth(), timeout=30).status_code == 200
    flaky.fail_next(503, "overloaded")
    failed = httpx.post(f"{gateway.url}/v1/systemone", json=body("flaky"), headers=auth(), timeout=30)
    assert failed.status_code == 503

    response = health(gateway)
    assert response.status_code == 200
    report = response.json()
    assert report["billable"] is False and report["source"] == "traffic"
    entries = by_group(report)
    jev, bad, other = entries["jev"], entries["flaky"], entries["other"]
    assert jev["state"] == "healthy" and jev["last"]["outcome"] == "success" and jev["last"]["status"] == 200
    assert jev["last"]["latency_ms"] > 0 and jev["cooldown"] == {"cooling": False}
    assert jev["provider"] == "typesafe" and jev["model"] == "jev-latest" and jev["api_base"] == good.url
    assert bad["state"] == "cooling_down" and bad["last"]["outcome"] == "error" and bad["last"]["status"] == 503
    assert "overloaded" in bad["last"]["message"]
    assert bad["cooldown"]["cooling"] is True and 0 < bad["cooldown"]["seconds_left"] <= 60
    assert "503" in bad["cooldown"]["reason"]
    assert other["state"] == "unknown" and other["last"] is None
    assert other["api_base"] == f"{good.url}/"  # no query string: it may hold a credential
    assert report["healthy_count"] == 1 and report["unhealthy_count"] == 1 and report["unknown_count"] == 1
    assert KEY not in response.text and MASTER not in response.text and SECRET_QUERY not in response.text
    assert len(good.requests) == 3 and len(flaky.requests) == 1  # the report itself called nobody

    narrowed = health(gateway, model="jev").json()
    assert [entry["model_group"] for entry in narrowed["deployments"]] == ["jev"]
    alias = httpx.get(f"{gateway.url}/health", headers=auth(), timeout=10).json()  # LiteLLM's name, same report
    assert [(e["model_group"], e["state"]) for e in alias["deployments"]] == \
        [(e["model_group"], e["state"]) for e in report["deployments"]]


def test_only_the_master_key_reads_it(gateway):
    assert health(gateway, key=None).status_code == 401
    assert health(gateway, key="sk-wrong-0000000000000000").status_code == 401
    made = httpx.post(f"{gateway.url}/key/generate", json={"key_alias": "reader"}, headers=auth(), timeout=30)
    assert made.status_code == 200, made.text
    denied = health(gateway, key=made.json()["key"])
    assert denied.status_code == 403 and denied.json()["error"]["code"] == "admin_only"
    assert health(gateway).status_code == 200


def test_bad_parameters_are_a_400_naming_them(gateway):
    wrong = health(gateway, probe="maybe")
    assert wrong.status_code == 400 and wrong.json()["error"]["param"] == "probe"
    unknown = health(gateway, model="nosuch")
    assert unknown.status_code == 400 and unknown.json()["error"]["param"] == "model"
    assert "jev, flaky, other" in unknown.json()["error"]["message"]


def test_probe_calls_each_deployment_says_billable_and_logs_each_probe_as_such(gateway, fakes):
    good, flaky = fakes
    flaky.fail_next(500, "down for maintenance")
    response = health(gateway, probe="true", model="jev")
    assert response.status_code == 200
    report = response.json()
    assert report["billable"] is True and report["source"] == "traffic and probe"
    (probe,) = [entry["probe"] for entry in report["deployments"]]
    assert probe["outcome"] == "success" and probe["status"] == 200 and probe["billable"] is True
    assert probe["cost"] is not None and probe["cost"] > 0 and report["probe_cost"] == probe["cost"]
    assert len(good.requests) == 1 and good.last.json["state"] == "health check"
    assert good.last.json["questions"] == {"reachable": {"type": "noul", "instructions": "Is the service reachable?"}}

    failing = health(gateway, probe="true", model="flaky").json()
    (failed,) = [entry["probe"] for entry in failing["deployments"]]
    assert failed["outcome"] == "error" and failed["status"] == 502 and failed["cost"] is None
    assert "down for maintenance" in failed["message"]
    assert by_group(health(gateway).json())["flaky"]["state"] == "unknown"  # a probe is not traffic

    row = wait_until(lambda: spend(gateway.db_path, probe["request_id"]), 20, "the probe's spend row")
    assert row == ("health_probe", 200, pytest.approx(probe["cost"]), "jev")
    failed_row = wait_until(lambda: spend(gateway.db_path, failed["request_id"]), 20, "the failed probe's row")
    assert failed_row[:2] == ("health_probe", 502) and failed_row[2] == 0
    assert KEY not in response.text
