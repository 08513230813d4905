"""The validation routes over HTTP, on both wires: the decision route's own sentence and field for an
invalid request, 200 for a valid one, auth like the decision routes, no upstream call, no spend row.
And ``/model/info``: every deployment with its limits, prices and cooldown (the api_base and cooldown for the
master key only)."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import start_gateway
from tests.fakes.typesafe import FakeTypeSafe
from tests.shared_state.conftest import wait_for

MASTER = "sk-master-validate-0123456789"
UPSTREAM_KEY = "ts-validate-upstream-key"
S1 = {"model": "jev", "state": "I was charged twice.", "questions": {
    "refund": {"type": "noul", "instructions": "Refund?"},
    "tone": {"type": "choice", "criteria": {"calm": None, "angry": "upset"}},
}}
OPENAI = {"model": "jev", "input": "I was charged twice.", "questions": [
    {"type": "predicate", "name": "refund", "instructions": "Refund?"},
    {"type": "choice", "name": "tone", "instructions": "Tone?", "choices": [{"value": "calm"}, {"value": True}]},
]}
FOUR_LEVELS = ["low", "medium", "high", "urgent"]


@pytest.fixture(scope="module")
def upstream():
    with FakeTypeSafe(UPSTREAM_KEY) as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(upstream, tmp_path_factory):
    db = tmp_path_factory.mktemp("validate-db") / "gateway.db"
    entry = {"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": UPSTREAM_KEY,
                                                     "api_base": upstream.url}}
    # A group whose only deployment takes at most 3 levels: the pre-call filter refuses 4 (Unsupported, 400).
    narrow = {"model_name": "narrow", "litellm_params": {"model": "typesafe/jev-latest", "api_key": UPSTREAM_KEY,
                                                         "api_base": upstream.url, "max_levels": 3}}
    running = start_gateway({"model_list": [entry, narrow],
                             "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"},
                             "router_settings": {"num_retries": 0}})
    yield running
    running.stop()


def post(gateway, path: str, body, key: str | None = MASTER, **kwargs) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if isinstance(body, bytes):
        headers["Content-Type"] = "application/json"
        return httpx.post(gateway.url + path, content=body, headers=headers, timeout=30, **kwargs)
    return httpx.post(gateway.url + path, json=body, headers=headers, timeout=30, **kwargs)


def with_question(body: dict, key, question) -> dict:
    out = dict(body)
    if isinstance(out["questions"], dict):
        out["questions"] = {**out["questions"], key: question}
    else:
        out["questions"] = [*out["questions"][:key], question, *out["questions"][key + 1:]]
    return out


def test_a_valid_request_is_accepted_without_calling_the_upstream(gateway, upstream):
    before = len(upstream.requests)
    s1 = post(gateway, "/v1/systemone/validate", S1)
    assert s1.status_code == 200, s1.text
    assert s1.json() == {"valid": True, "model": "jev", "questions": 2}
    oa = post(gateway, "/v1/decisions/validate", OPENAI)
    assert oa.status_code == 200, oa.text
    assert oa.json() == {"valid": True, "model": "jev", "questions": 2}
    assert len(upstream.requests) == before


OPENAI_INVALID = [
    ("one choice", with_question(OPENAI, 1, {"type": "choice", "instructions": "?", "choices": [{"value": "a"}]}),
     "questions[1].choices"),
    ("bool and string twins", with_question(OPENAI, 1, {"type": "choice", "instructions": "?", "choices": [
        {"value": True}, {"value": "true"}]}), "questions[1].choices[1].value"),
    ("unknown model", {**OPENAI, "model": "nope"}, "model"),
    ("missing input", {k: v for k, v in OPENAI.items() if k != "input"}, "input"),
    ("too many levels for the group", {**OPENAI, "model": "narrow", "questions": [
        {"type": "score", "instructions": "?", "levels": [{"label": x} for x in FOUR_LEVELS]}]}, "questions[0].levels"),
]


@pytest.mark.parametrize(("case", "body", "param"), OPENAI_INVALID, ids=[c[0] for c in OPENAI_INVALID])
def test_openai_errors_are_the_routes_own_sentence_at_the_field(gateway, upstream, case, body, param):
    checked = post(gateway, "/v1/decisions/validate", body)
    assert checked.status_code == 400, checked.text
    error = checked.json()["error"]
    assert error["param"] == param and error["message"]
    before = len(upstream.requests)
    sent = post(gateway, "/v1/decisions", body)  # what the real route answers for the same body
    assert len(upstream.requests) == before
    assert (sent.status_code, sent.json()) == (checked.status_code, checked.json())


S1_INVALID = [
    ("empty choice criteria", with_question(S1, "tone", {"type": "choice", "criteria": {}}),
     ["body", "questions", "tone", "choice", "criteria"]),
    ("unknown question type", with_question(S1, "x", {"type": "maybe"}), ["body", "questions", "x"]),
    ("state missing", {k: v for k, v in S1.items() if k != "state"}, ["body", "state"]),
]


@pytest.mark.parametrize(("case", "body", "loc"), S1_INVALID, ids=[c[0] for c in S1_INVALID])
def test_system_one_schema_errors_are_the_routes_own_detail_at_the_field(gateway, upstream, case, body, loc):
    checked = post(gateway, "/v1/systemone/validate", body)
    assert checked.status_code == 422, checked.text
    detail = checked.json()["detail"]
    assert detail[0]["loc"][:len(loc)] == loc and detail[0]["msg"]
    sent = post(gateway, "/v1/systemone", body)
    assert (sent.status_code, sent.json()) == (checked.status_code, checked.json())


def test_system_one_errors_after_the_schema_name_their_field_too(gateway, upstream):
    body = {**S1, "model": "narrow", "questions": {"urgency": {"type": "score", "criteria": FOUR_LEVELS}}}
    checked = post(gateway, "/v1/systemone/validate", body)
    assert checked.status_code == 400, checked.text
    detail = checked.json()["detail"]
    assert detail["loc"] == ["body", "questions", "urgency", "criteria"] and "level" in detail["message"]
    sent = post(gateway, "/v1/systemone", body)
    assert sent.status_code == 400
    assert sent.json()["detail"] == {k: v for k, v in detail.items() if k != "loc"}  # the same sentence
    unknown = post(gateway, "/v1/systemone/validate", {**S1, "model": "nope"})
    assert unknown.status_code == 400 and unknown.json()["detail"]["loc"] == ["body", "model"]


def requests_counted(gateway) -> float:
    """The sum of decisions_gateway_requests_total over every label set."""
    text = httpx.get(gateway.url + "/metrics", headers={"Authorization": f"Bearer {MASTER}"}, timeout=30).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("decisions_gateway_requests_total{"))


def test_a_check_is_not_a_request_in_the_metrics(gateway):
    before = requests_counted(gateway)
    assert post(gateway, "/v1/systemone/validate", S1).status_code == 200
    assert post(gateway, "/v1/decisions/validate", {**OPENAI, "model": "nope"}).status_code == 400
    assert requests_counted(gateway) == before
    assert post(gateway, "/v1/systemone", S1).status_code == 200
    assert requests_counted(gateway) == before + 1  # what a decision request adds


def test_unreadable_bodies_get_the_routes_answers(gateway):
    oa = post(gateway, "/v1/decisions/validate", b'{"model": "jev", ')
    assert oa.status_code == 400 and oa.json()["error"]["code"] == "json_invalid"
    s1 = post(gateway, "/v1/systemone/validate", b"[1, 2]")
    assert s1.status_code == 422 and s1.json()["detail"][0]["loc"] == ["body"]
    big = post(gateway, "/v1/decisions/validate", b'{"input": "' + b"x" * (17 * 1024 * 1024) + b'"}')
    assert big.status_code == 413  # the size cap of every decision route (16 MiB by default)


def test_only_post_is_served_in_each_wires_envelope(gateway):
    oa = httpx.get(gateway.url + "/v1/decisions/validate", timeout=10)
    assert oa.status_code == 405 and oa.json()["error"]["code"] == "method_not_allowed"
    s1 = httpx.get(gateway.url + "/v1/systemone/validate", timeout=10)
    assert s1.status_code == 405 and "detail" in s1.json()


def test_validation_needs_a_key_like_the_decision_routes(gateway, upstream):
    assert post(gateway, "/v1/decisions/validate", OPENAI, key=None).status_code == 401
    assert post(gateway, "/v1/systemone/validate", S1, key="sk-not-a-key").status_code == 401
    made = httpx.post(gateway.url + "/key/generate", json={"key_alias": "validate-narrow", "models": ["narrow"]},
                      headers={"Authorization": f"Bearer {MASTER}"}, timeout=30)
    assert made.status_code == 200, made.text
    key = made.json()["key"]
    refused = post(gateway, "/v1/decisions/validate", OPENAI, key=key)  # "jev" is not among its models
    assert refused.status_code == 403 and refused.json()["error"]["type"] == "permission_error"
    allowed = post(gateway, "/v1/decisions/validate", {**OPENAI, "model": "narrow"}, key=key)
    assert allowed.status_code == 200, allowed.text


def test_a_check_is_never_a_spend_row(gateway):
    checked = post(gateway, "/v1/systemone/validate", S1)
    refused = post(gateway, "/v1/systemone/validate", {**S1, "model": "nope"})
    sent = post(gateway, "/v1/systemone", S1)
    assert (checked.status_code, refused.status_code, sent.status_code) == (200, 400, 200)

    def rows(request_id: str) -> int:
        logs = httpx.get(gateway.url + "/spend/logs/v2", params={"request_id": request_id},
                         headers={"Authorization": f"Bearer {MASTER}"}, timeout=30)
        assert logs.status_code == 200, logs.text
        return logs.json()["total"]

    wait_for(lambda: rows(sent.headers["x-request-id"]), what="the decision call's spend row drained from the outbox")
    assert rows(checked.headers["x-request-id"]) == 0 and rows(refused.headers["x-request-id"]) == 0


def test_model_info_lists_deployments_with_limits_prices_and_cooldowns(gateway, upstream):
    master = {"Authorization": f"Bearer {MASTER}"}
    upstream.fail_next(429, "slow down")  # a 429 cools the deployment at once (router policy)
    failed = post(gateway, "/v1/systemone", S1)
    assert failed.status_code == 429
    info = httpx.get(gateway.url + "/model/info", headers=master, timeout=30)
    assert info.status_code == 200, info.text
    assert UPSTREAM_KEY not in info.text and MASTER not in info.text
    entries = {e["model_name"]: e for e in info.json()["data"]}
    assert set(entries) == {"jev", "narrow"}
    jev, narrow = entries["jev"], entries["narrow"]
    assert jev["litellm_params"]["model"] == "typesafe/jev-latest"
    assert jev["litellm_params"]["api_base"] == upstream.url
    assert jev["model_info"]["input_cost_per_token"] == pytest.approx(4.2e-8) and jev["model_info"]["priced"]
    assert narrow["model_info"]["limits"]["levels"][1] == 3
    assert jev["model_info"]["health"]["status"] == "cooling_down"
    assert "429" in jev["model_info"]["health"]["cooldown_reason"]
    assert jev["model_info"]["health"]["cooldown_seconds_left"] > 0
    assert narrow["model_info"]["health"] == {"status": "healthy", "cooldown_reason": None,
                                              "cooldown_seconds_left": None}
    made = httpx.post(gateway.url + "/key/generate", json={}, headers=master, timeout=30).json()["key"]
    scoped = httpx.get(gateway.url + "/model/info", headers={"Authorization": f"Bearer {made}"}, timeout=30)
    assert scoped.status_code == 200, scoped.text  # a virtual key: its models, without api_base or health
    assert all("api_base" not in e["litellm_params"] and "health" not in e["model_info"]
               for e in scoped.json()["data"])
    assert httpx.get(gateway.url + "/model/info", timeout=30).status_code == 401


def test_api_base_is_shown_without_credentials():
    from gateway.admin.models import shown_base

    assert shown_base("https://user:secret@api.example.com:8443/v1?key=abc#x") == "https://api.example.com:8443/v1"
    assert shown_base(None) is None


def test_key_info_reports_what_the_key_spent(gateway):
    master = {"Authorization": f"Bearer {MASTER}"}
    made = httpx.post(gateway.url + "/key/generate", json={"key_alias": "usage-seen", "max_budget": 1},
                      headers=master, timeout=30).json()
    key = made["key"]
    costs = []
    for _ in range(2):
        sent = post(gateway, "/v1/systemone", S1, key=key)
        assert sent.status_code == 200, sent.text
        costs.append(float(sent.headers["x-decisions-response-cost"]))
    def usage() -> dict:
        return httpx.get(gateway.url + "/key/info", headers={"Authorization": f"Bearer {key}"}, timeout=30).json()

    own = wait_for(lambda: (own := usage())["usage"]["requests"] >= 2 and own, what="both calls in the key's usage")
    assert own["usage"]["total_spend"] == pytest.approx(sum(costs)) and sum(costs) > 0
    # The budget's own counter: what the limits count against max_budget in this period.
    assert own["usage"]["period_spend"] == pytest.approx(sum(costs), abs=1e-6)
    by_master = httpx.get(gateway.url + "/key/info", params={"key": made["token"]}, headers=master, timeout=30).json()
    assert by_master["usage"]["total_spend"] == pytest.approx(sum(costs)) and by_master["usage"]["period_spend"] is None
