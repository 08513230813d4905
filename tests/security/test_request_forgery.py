"""What a caller sends never chooses where the gateway connects or who the caller is.

* No upstream URL can come from a request: ``api_base`` / ``base_url`` and friends in the body, headers
  naming a base or a host, query parameters, a pass-through path spelling another host; a canary fake
  on another port must never be called, and each request is still answered in its envelope.
* Forged ``Host`` and ``X-Forwarded-*`` headers buy no access (a loopback address is no credential),
  are not relayed upstream, and are not reflected into an answer.
* Every admin route refuses a caller without a key (401) and a virtual key (403; LiteLLM's read routes
  /model/info, /model_group/info and /v2/team/list answer a virtual key with what it may see), in OpenAI's
  envelope; SQL in the Authorization header is an unknown key (401) on every route family.
"""

from __future__ import annotations

import httpx
import pytest

from tests.fakes.harness import FakeServer
from tests.reliability.wire_checks import ADMIN, OPENAI, SYSTEMONE, admin_routes, problem
from tests.security.conftest import TYPESAFE_KEY, hostile_config
from tests.security.helpers import gateway_with_env
from tests.settled import tasks_of, wait_settled

MASTER = "sk-master-forgery-0123456789abcdef"
S1 = {"model": "jev", "state": "I was charged twice.", "questions": {"q": {"type": "noul", "instructions": "Billing?"}}}
OAI = {"model": "luna", "input": "I was charged twice.",
       "questions": [{"type": "predicate", "name": "q", "instructions": "Billing?"}]}


@pytest.fixture(scope="module")
def canary():
    """Another port the gateway was never configured with: any request here is a forged upstream URL."""
    with FakeServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def forgery(hostile_typesafe, hostile_openai, canary, tmp_path_factory):
    """(gateway, virtual key): a master key, SQLite, the TypeSafe pass-through configured."""
    config = hostile_config(hostile_typesafe, hostile_openai, master_key=MASTER,
                            database_url=f"sqlite:///{tmp_path_factory.mktemp('forgery') / 'gw.db'}")
    env = {"TYPESAFE_API_KEY": TYPESAFE_KEY, "TYPESAFE_API_BASE": hostile_typesafe.url}
    with gateway_with_env(config, env) as gw:
        made = httpx.post(gw.url + "/key/generate", json={"key_alias": "forger"},
                          headers={"Authorization": f"Bearer {MASTER}"}, timeout=20)
        assert made.status_code == 200, made.text
        yield gw, made.json()["key"]


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def envelope(response: httpx.Response, wire: str) -> None:
    why = problem(wire, response.status_code, response.headers, response.content)
    assert why is None, why
    assert response.status_code != 500


# ---- no upstream URL from a request ------------------------------------------------------------------

def base_fields(url: str) -> list[dict]:
    return [{"api_base": url}, {"base_url": url}, {"url": url}, {"api_url": url}, {"endpoint": url},
            {"litellm_params": {"api_base": url, "api_key": "sk-x"}}, {"metadata": {"api_base": url}},
            {"extra_body": {"api_base": url}}, {"user_config": {"model_list": [{"model_name": "jev", "litellm_params": {
                "model": "typesafe/jev-latest", "api_base": url}}]}}]


def test_no_body_field_sends_a_decision_to_another_host(forgery, canary, hostile_typesafe, hostile_openai):
    gw, key = forgery
    for extra in base_fields(canary.url):
        for path, body, wire in (("/v1/systemone", S1, SYSTEMONE), ("/v1/decisions", OAI, OPENAI),
                                 ("/v1/systemone/validate", S1, SYSTEMONE), ("/v1/decisions/validate", OAI, OPENAI)):
            r = httpx.post(gw.url + path, json={**body, **extra}, headers=auth(key), timeout=10)
            envelope(r, wire)
    for model in (canary.url, f"typesafe/{canary.url}", f"openai/{canary.url}", "typesafe/jev-latest",
                  f"{canary.url}/v1/systemone"):
        r = httpx.post(gw.url + "/v1/systemone", json={**S1, "model": model, "api_base": canary.url},
                       headers=auth(MASTER), timeout=10)
        assert r.status_code == 400 and "configured models" in r.text, r.text  # only configured groups
    assert canary.requests == []
    assert hostile_typesafe.requests and hostile_openai.requests  # the accepted ones went where configured
    upstream_hosts = {rec.header("host") for rec in hostile_typesafe.requests + hostile_openai.requests}
    assert upstream_hosts == {hostile_typesafe.url.removeprefix("http://"), hostile_openai.url.removeprefix("http://")}


def forged_headers(url: str) -> list[dict[str, str]]:
    host = url.removeprefix("http://")
    return [{"x-api-base": url}, {"api-base": url}, {"x-base-url": url}, {"base-url": url}, {"x-upstream-url": url},
            {"x-litellm-api-base": url}, {"x-forwarded-host": host}, {"forwarded": f"host={host};proto=http"},
            {"host": host}, {"x-original-url": url}, {"x-rewrite-url": url}]


def test_no_header_or_query_parameter_sends_a_request_to_another_host(forgery, canary):
    gw, key = forgery
    query = {"api_base": canary.url, "base_url": canary.url, "url": canary.url}
    for headers in forged_headers(canary.url):
        for path, body, wire in (("/v1/systemone", S1, SYSTEMONE), ("/v1/decisions", OAI, OPENAI)):
            r = httpx.post(gw.url + path, json=body, headers={**auth(key), **headers}, params=query, timeout=10)
            envelope(r, wire)
            assert r.status_code == 200, r.text
        relayed = httpx.post(gw.url + "/typesafe/v1/systemone", json={**S1, "model": "jev-latest"},
                             headers={**auth(MASTER), **headers}, params=query, timeout=10)
        assert relayed.status_code == 200, relayed.text
        probe = httpx.get(gw.url + "/health/providers", headers={**auth(MASTER), **headers}, params=query,
                          timeout=10)
        assert probe.status_code < 500
    assert canary.requests == []


@pytest.mark.parametrize("path", [
    "/typesafe/http://{host}/v1/systemone", "/typesafe//{host}/v1/systemone", "/typesafe/@{host}/v1/systemone",
    "/typesafe/%2f%2f{host}/v1/systemone", "/typesafe/http:%2f%2f{host}/v1/systemone",
    "/typesafe/..%2f..%2f@{host}/v1/systemone", "/typesafe/\\\\{host}/v1/systemone", "/typesafe/%5c%5c{host}/x",
    "/typesafe/v1/systemone?url=http://{host}/", "/typesafe/v1/systemone#@{host}",
])
def test_no_pass_through_path_reaches_another_host(forgery, canary, hostile_typesafe, path):
    gw, _ = forgery
    import http.client

    from tests.security.helpers import address

    conn = http.client.HTTPConnection(*address(gw.url), timeout=10)  # the path exactly as written
    try:
        conn.request("POST", path.format(host=canary.url.removeprefix("http://")), body=b'{"model": "jev-latest"}',
                     headers={"Content-Type": "application/json", **auth(MASTER)})
        status = conn.getresponse().status
    finally:
        conn.close()
    assert status != 500
    assert canary.requests == []
    base = hostile_typesafe.url.removeprefix("http://")
    assert all(rec.header("host") == base for rec in hostile_typesafe.requests)


# ---- forged Host and X-Forwarded-* ---------------------------------------------------------------------

LOOPBACK = {"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1", "X-Forwarded-Host": "localhost",
            "X-Forwarded-Proto": "https", "X-Forwarded-Port": "443", "Forwarded": "for=127.0.0.1;host=localhost",
            "Host": "localhost", "X-Client-IP": "::1", "True-Client-IP": "127.0.0.1"}


def test_a_forged_loopback_origin_is_no_credential(forgery, hostile_typesafe):
    gw, _ = forgery
    before = len(hostile_typesafe.requests)
    for method, path, wire, body in (("POST", "/v1/systemone", SYSTEMONE, S1), ("POST", "/v1/decisions", OPENAI, OAI),
                                     ("POST", "/typesafe/v1/systemone", SYSTEMONE, S1),
                                     ("GET", "/v1/models", ADMIN, None), ("GET", "/metrics", ADMIN, None),
                                     ("GET", "/health/providers", ADMIN, None), ("GET", "/key/list", ADMIN, None),
                                     ("POST", "/key/generate", ADMIN, {}), ("POST", "/config/reload", ADMIN, None)):
        r = httpx.request(method, gw.url + path, json=body, headers=LOOPBACK, timeout=10)
        assert r.status_code == 401, (path, r.status_code, r.text)
        envelope(r, wire)
    assert len(hostile_typesafe.requests) == before


def test_forged_forwarding_headers_are_not_relayed_or_reflected(forgery, hostile_typesafe, hostile_openai):
    gw, key = forgery
    evil = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https",
            "Forwarded": "for=203.0.113.9;host=evil.example", "X-Real-IP": "203.0.113.9", "Host": "evil.example"}
    for path, body, fake in (("/v1/systemone", S1, hostile_typesafe), ("/v1/decisions", OAI, hostile_openai),
                             ("/typesafe/v1/systemone", {**S1, "model": "jev-latest"}, hostile_typesafe)):
        fake.reset()
        r = httpx.post(gw.url + path, json=body, headers={**auth(key if "typesafe/" not in path else MASTER), **evil},
                       timeout=10)
        assert r.status_code == 200, r.text
        sent = fake.last.headers
        assert not {"x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "forwarded", "x-real-ip"} & set(sent)
        assert sent["host"] == fake.url.removeprefix("http://")
        assert "evil.example" not in r.text and "evil.example" not in str(r.headers)
    for path in ("/ui", "/docs", "/openapi.json", "/health/readiness"):
        r = httpx.get(gw.url + path, headers=evil, timeout=10)
        assert "evil.example" not in r.text and "evil.example" not in r.headers.get("location", ""), path


# ---- admin routes without a key and with a virtual key ------------------------------------------------

OPERATOR_ROUTES = admin_routes() + [("GET", "/metrics"), ("GET", "/health/providers")]
SCOPED = ("/model/info", "/v1/model/info", "/model_group/info", "/v2/team/list")
CALIBRATION_READS = ("/calibration/report", "/calibration/calibrators")  # fit and rollback: proxy admins (403)
CALIBRATION_POSTS = ("/v1/outcomes", "/calibration/thresholds")


@pytest.mark.parametrize("method, path", OPERATOR_ROUTES, ids=[f"{m} {p}" for m, p in OPERATOR_ROUTES])
def test_admin_routes_refuse_no_key_and_a_virtual_key(forgery, method, path):
    gw, key = forgery
    body = {} if method == "POST" else None
    anonymous = httpx.request(method, gw.url + path, json=body, timeout=10)
    assert anonymous.status_code == 401, anonymous.text
    envelope(anonymous, ADMIN)
    virtual = httpx.request(method, gw.url + path, json=body, headers=auth(key), timeout=10)
    if (method, path) == ("GET", "/key/info"):  # LiteLLM's self-service: its own key only
        assert virtual.status_code == 200 and virtual.json()["info"]["key_alias"] == "forger"
        other = httpx.get(gw.url + path, params={"key": MASTER}, headers=auth(key), timeout=10)
        assert other.status_code in (403, 404), other.text
        return
    if (method, path) == ("GET", "/user/info"):  # who the caller is (the UI asks): itself and nothing else
        assert virtual.status_code == 200, virtual.text
        mine = virtual.json()
        assert mine["user_info"] is None and mine["teams"] == [] and mine["caller"]["role"] is None
        assert [k["key_alias"] for k in mine["keys"]] == ["forger"] and MASTER not in virtual.text
        other = httpx.get(gw.url + path, params={"user_id": "someone"}, headers=auth(key), timeout=10)
        assert other.status_code == 403, other.text
        return
    if path in SCOPED:  # LiteLLM's read routes any key may call: only what the key may see (it has no team)
        assert virtual.status_code == 200, virtual.text
        assert virtual.json().get("teams", []) == [] and "api_base" not in virtual.text, virtual.text
        return
    if path in CALIBRATION_READS:  # any key: its own decisions only (it has no team: the key's own; none here)
        assert virtual.status_code == 200, virtual.text
        assert virtual.json().get("sites", []) == [] and virtual.json().get("models", []) == [], virtual.text
        return
    if path in CALIBRATION_POSTS:  # any key may post (scoped): the empty body is refused for what it lacks
        assert virtual.status_code == 400 and "is required" in virtual.json()["error"]["message"], virtual.text
        return
    assert virtual.status_code == 403, virtual.text
    envelope(virtual, ADMIN)


SQL = ["' OR '1'='1", "'; DROP TABLE verification_tokens; --", "1; SELECT pg_sleep(3)", "sk-' OR 1=1 --",
       "' UNION SELECT token, key_alias FROM verification_tokens --", "%' OR 1=1 --", "\\' OR 1=1"]


def test_sql_in_the_authorization_header_is_an_unknown_key_on_every_route(forgery):
    gw, key = forgery
    routes = (("POST", "/v1/systemone", SYSTEMONE, S1), ("POST", "/v1/decisions", OPENAI, OAI),
              ("POST", "/typesafe/v1/systemone", SYSTEMONE, S1), ("GET", "/v1/models", ADMIN, None),
              ("GET", "/key/info", ADMIN, None), ("GET", "/spend/logs", ADMIN, None), ("GET", "/metrics", ADMIN, None))
    for text in SQL:
        for headers in ({"Authorization": f"Bearer {text}"}, {"Authorization": text}, {"x-api-key": text},
                        {"api-key": text}):
            for method, path, wire, body in routes:
                r = httpx.request(method, gw.url + path, json=body, headers=headers, timeout=10)
                assert r.status_code == 401, (path, headers, r.text)
                envelope(r, wire)
    assert httpx.get(gw.url + "/key/info", headers=auth(key), timeout=10).status_code == 200  # tables intact


def test_sql_in_every_admin_filter_of_the_running_gateway_matches_nothing_and_changes_nothing(forgery):
    gw, key = forgery
    admin = auth(MASTER)
    resting = tasks_of(gw)
    assert httpx.post(gw.url + "/v1/systemone", json=S1, headers=auth(key), timeout=30).status_code == 200
    # the call's spend row drained into the database, with the key's spend rolled up in the same commit
    wait_settled(gw, resting, "the call's spend drained into the key's spend")

    def tables() -> dict:
        return {path: httpx.get(gw.url + path, params=params, headers=admin, timeout=10).json()
                for path, params in (("/key/list", {"return_full_object": "true"}), ("/team/list", {}))}

    before = tables()
    filters = [("/spend/logs", name) for name in ("api_key", "key_alias", "team_id", "model", "request_id",
                                                   "start_date", "end_date")]
    filters += [("/key/info", "key"), ("/team/info", "team_id"), ("/key/list", "key_alias"), ("/key/list", "team_id"),
                ("/global/spend/report", "api_key"), ("/global/spend/report", "team_id"),
                ("/global/spend/report", "group_by"), ("/model/info", "model")]
    for text in SQL:
        for path, name in filters:
            r = httpx.get(gw.url + path, params={name: text}, headers=admin, timeout=10)
            assert r.status_code < 500, (path, name, r.text)
            envelope(r, ADMIN)
            if r.status_code == 200 and path in ("/spend/logs", "/key/info", "/team/info"):
                body = r.json()
                rows = body.get("data", body) if isinstance(body, dict) else body
                assert rows in ([], {}) or (isinstance(rows, dict) and rows.get("total") == 0), (path, name, body)
    assert tables() == before  # no table changed
    assert httpx.get(gw.url + "/spend/logs/v2", params={"key_alias": "forger"}, headers=admin,
                     timeout=10).json()["data"]  # the rows are there to be found
