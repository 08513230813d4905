"""Hypothesis over every public route of a running gateway with a master key: random JSON shapes and raw
bytes as bodies, random headers (content type and encoding, credentials, deadline, request id) and
query strings, on both decision routes, both validate routes, the pass-throughs, the admin API and the
info routes. No answer is a 500 or hangs (each has 10 s), and each is in its caller's envelope
(wire_checks.problem). (tests/gateway/test_groups_and_fuzz.py fuzzes the two decision bodies alone.)"""

from __future__ import annotations

import json
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fakes.openai import FakeOpenAI
from tests.fakes.typesafe import FakeTypeSafe
from tests.reliability.wire_checks import ADMIN, OPENAI, STATUSES, SYSTEMONE, admin_routes, problem
from tests.security.conftest import OPENAI_KEY, TYPESAFE_KEY, hostile_config
from tests.security.helpers import gateway_with_env

MASTER = "sk-master-fuzz-0123456789abcdef"
FUZZ = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    """(gateway, a virtual key) on SQLite, with every pass-through configured."""
    with FakeTypeSafe(TYPESAFE_KEY) as typesafe, FakeOpenAI(OPENAI_KEY) as openai_fake:
        env = {"TYPESAFE_API_KEY": TYPESAFE_KEY, "TYPESAFE_API_BASE": typesafe.url, "LAYA_API_BASE": typesafe.url,
               "BESPOKE_API_BASE": typesafe.url}
        config = hostile_config(typesafe, openai_fake, master_key=MASTER,
                                database_url=f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'gw.db'}")
        with gateway_with_env(config, env) as gw:
            made = httpx.post(gw.url + "/key/generate", json={"key_alias": "fuzzer", "rpm_limit": 100000},
                              headers={"Authorization": f"Bearer {MASTER}"}, timeout=20)
            assert made.status_code == 200, made.text
            with httpx.Client(base_url=gw.url, timeout=10) as client:
                yield client, made.json()["key"]


# ---- strategies ---------------------------------------------------------------------------------------

TEXT = st.text(max_size=12)
HEADER_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=20)
S1_QUESTION = st.fixed_dictionaries({"type": st.sampled_from(["noul", "choice", "score", "box", "x"])},
                                    optional={"instructions": JSON, "criteria": JSON})
OA_QUESTION = st.fixed_dictionaries({"type": st.sampled_from(["predicate", "choice", "score"])},
                                    optional={"name": JSON, "instructions": JSON, "choices": JSON, "levels": JSON})
MODEL = st.sampled_from(["jev", "luna", "nope", "typesafe/jev-latest", ""]) | TEXT
S1_BODY = st.fixed_dictionaries({"model": MODEL, "state": JSON,
                                 "questions": st.dictionaries(TEXT, S1_QUESTION, max_size=3)}, optional={"x": JSON})
OA_BODY = st.fixed_dictionaries({"model": MODEL, "input": JSON, "questions": st.lists(OA_QUESTION, max_size=3)},
                                optional={"x": JSON})


def body(shaped: st.SearchStrategy) -> st.SearchStrategy[bytes]:
    """Raw bytes: a near-valid body, any JSON, or any bytes at all."""
    return st.one_of(shaped.map(lambda v: json.dumps(v).encode()), JSON.map(lambda v: json.dumps(v).encode()),
                     st.binary(max_size=200))


CONTENT_TYPE = st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain",
                                "multipart/form-data; boundary=x", "application/x-www-form-urlencoded", ""]) \
    | HEADER_TEXT
ENCODING = st.sampled_from(["", "gzip", "zstd", "br", "identity", "gzip, zstd"]) | HEADER_TEXT


@st.composite
def headers(draw, key: str) -> dict[str, str]:
    out = {"Content-Type": draw(CONTENT_TYPE)}
    credential = draw(st.sampled_from(["master", "virtual", "none", "junk"]))
    if credential != "none":
        value = {"master": MASTER, "virtual": key}.get(credential) or draw(HEADER_TEXT)
        name = draw(st.sampled_from(["Authorization", "x-api-key", "api-key"]))
        out[name] = f"Bearer {value}" if name == "Authorization" and draw(st.booleans()) else value
    for name, values in (("Content-Encoding", ENCODING), ("x-decisions-deadline-ms", HEADER_TEXT),
                         ("x-request-id", HEADER_TEXT), ("TypeSafe-Danger-Zone-Images", HEADER_TEXT)):
        if draw(st.booleans()):
            out[name] = draw(values)
    return {k: v for k, v in out.items() if v.strip() == v}  # httpx refuses surrounding whitespace


QUERY = st.dictionaries(st.sampled_from(["model", "key", "team_id", "api_key", "page", "size", "probe",
                                         "start_date", "end_date", "request_id", "group_by", "x"]) | TEXT,
                        HEADER_TEXT, max_size=4)


def check(response: httpx.Response, wire: str) -> None:
    assert response.status_code in STATUSES, (response.status_code, response.text[:300])
    if wire == "text":  # /metrics answers Prometheus text, its errors JSON
        if response.status_code != 200:
            wire = ADMIN
        else:
            assert response.text.startswith("#"), response.text[:200]
            return
    why = problem(wire, response.status_code, response.headers, response.content)
    assert why is None, why


def send(client: httpx.Client, method: str, path: str, content: bytes | None, hdrs: dict, query: dict):
    return client.request(method, path, content=content, headers=hdrs, params=query)


# ---- the routes ---------------------------------------------------------------------------------------

DECISION_ROUTES = [("/v1/decisions", OPENAI, OA_BODY), ("/decisions", OPENAI, OA_BODY),
                   ("/v1/systemone", SYSTEMONE, S1_BODY), ("/systemone", SYSTEMONE, S1_BODY),
                   ("/v1/decisions/validate", OPENAI, OA_BODY), ("/v1/systemone/validate", SYSTEMONE, S1_BODY)]


@pytest.mark.parametrize("path, wire, shaped", DECISION_ROUTES, ids=[r[0] for r in DECISION_ROUTES])
def test_decision_and_validate_routes_answer_random_requests_in_their_envelope(fuzzed, path, wire, shaped):
    client, key = fuzzed

    @FUZZ
    @given(content=body(shaped), hdrs=headers(key), query=QUERY)
    def run(content, hdrs, query):
        check(send(client, "POST", path, content, hdrs, query), wire)

    run()


PASSTHROUGH_PATH = st.lists(st.sampled_from(["v1", "systemone", "models", "..", ".", "%2e%2e", "%2f", "x",
                                             "http:", "127.0.0.1:1", "@evil", "%00", ""]) | TEXT.map(
    lambda t: quote(t, safe="")), min_size=1, max_size=4).map("/".join)


@FUZZ
@given(sub=PASSTHROUGH_PATH, method=st.sampled_from(["GET", "POST"]), content=body(S1_BODY),
       query=QUERY, data=st.data())
def test_pass_throughs_answer_random_requests_in_their_envelope(fuzzed, sub, method, content, query, data):
    client, key = fuzzed
    hdrs = data.draw(headers(key))
    path = data.draw(st.sampled_from([f"/typesafe/{sub}", "/laya/v1/systemone", "/bespoke/v1/systemone"]))
    response = client.request(method if path.startswith("/typesafe/") else "POST", path,
                              content=content if method == "POST" else None, headers=hdrs, params=query)
    if response.status_code == 307:  # /typesafe/. arrives as /typesafe: the slash redirect, on this host only
        assert response.headers["location"].startswith("/"), response.headers["location"]
        return
    assert response.status_code in STATUSES, (path, response.status_code, response.text[:300])
    assert response.headers.get("x-request-id")
    payload = response.json()  # the gateway's own errors in System One's envelope, or the upstream's answer
    assert isinstance(payload, dict) and ({"detail", "answers", "models"} & set(payload)), payload


ADMIN_ROUTES = admin_routes()
INFO_ROUTES = [("GET", "/v1/models", ADMIN), ("GET", "/models", ADMIN), ("GET", "/health/liveliness", ADMIN),
               ("GET", "/health/readiness", ADMIN), ("GET", "/health/providers", ADMIN), ("GET", "/health", ADMIN),
               ("GET", "/metrics", "text")]


def test_the_admin_routes_are_all_fuzzed():
    paths = {path for _, path in ADMIN_ROUTES}
    assert {"/key/generate", "/key/info", "/team/new", "/team/info", "/spend/logs", "/global/spend/report",
            "/config/reload"} <= paths


@pytest.mark.parametrize("method, path", ADMIN_ROUTES, ids=[f"{m} {p}" for m, p in ADMIN_ROUTES])
def test_admin_routes_answer_random_requests_in_openais_envelope(fuzzed, method, path):
    client, key = fuzzed

    @settings(FUZZ, max_examples=40)
    @given(content=st.one_of(JSON.map(lambda v: json.dumps(v).encode()), st.binary(max_size=100)),
           hdrs=headers(key), query=QUERY)
    def run(content, hdrs, query):
        check(send(client, method, path, content if method == "POST" else None, hdrs, query), ADMIN)

    run()


@pytest.mark.parametrize("method, path, wire", INFO_ROUTES, ids=[p for _, p, _ in INFO_ROUTES])
def test_info_routes_answer_random_requests(fuzzed, method, path, wire):
    client, key = fuzzed

    @settings(FUZZ, max_examples=30)
    @given(hdrs=headers(key), query=QUERY.filter(lambda q: q.get("probe", "").lower() not in ("true", "1", "yes")))
    def run(hdrs, query):
        check(send(client, method, path, None, hdrs, query), wire)

    run()


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_a_method_an_openai_route_does_not_serve_is_answered_in_openais_envelope(fuzzed, method):
    client, _ = fuzzed
    response = client.request(method, "/v1/decisions", headers={"Authorization": f"Bearer {MASTER}"})
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    check(response, OPENAI)
