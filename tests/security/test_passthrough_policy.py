"""Issue 8 item 2: pass-through paths stay under the configured base; only GET and POST are
relayed; the caller's address and credential headers never go upstream.

With ``TYPESAFE_API_BASE=http://host/tsbase``, ``/typesafe/../../etc/passwd`` and
``/typesafe/..%2f..%2fescaped`` reached ``GET /etc/passwd`` and ``GET /escaped`` with the gateway's key.
"""

from __future__ import annotations

import http.client

import pytest

from gateway.passthrough.policy import (
    ALLOWED_METHODS,
    MethodRefused,
    PathRefused,
    check_method,
    forwarded_request_headers,
    raw_subpath,
    upstream_url,
)
from tests.security.conftest import TYPESAFE_KEY
from tests.security.helpers import address, gateway_with_env

BASE = "http://host/tsbase"


@pytest.mark.parametrize("path, url", [
    ("v1/systemone", "http://host/tsbase/v1/systemone"),
    ("/v1/models", "http://host/tsbase/v1/models"),
    ("v1/models/", "http://host/tsbase/v1/models/"),
    ("v1//models", "http://host/tsbase/v1/models"),
    ("v1/a%20b", "http://host/tsbase/v1/a%20b"),
    ("v1/caf%C3%A9", "http://host/tsbase/v1/caf%C3%A9"),
    ("v1/a%2Cb", "http://host/tsbase/v1/a,b"),
    ("v1/x..y", "http://host/tsbase/v1/x..y"),
    ("v1/.well", "http://host/tsbase/v1/.well"),
])
def test_paths_under_the_base_are_kept(path, url):
    assert upstream_url(BASE, path) == url


def test_a_v1_base_is_not_doubled_as_the_typesafe_provider_accepts_it():
    assert upstream_url("https://api.typesafe.ai/v1/", "v1/systemone") == "https://api.typesafe.ai/v1/systemone"
    assert upstream_url("http://host/v1", "v2/other") == "http://host/v1/v2/other"


@pytest.mark.parametrize("path", [
    "../../etc/passwd", "..%2f..%2fescaped", "..%2F..%2Fescaped", "%2e%2e/%2e%2e/etc/passwd", "%2E%2e%2fx",
    "v1/../../x", "v1/./x", ".", "..", "v1/..", "..\\..\\x", "v1\\..\\..\\x", "..%5c..%5cx", "%2e%2e%5cx",
    "%252e%252e/x", "..%252fx", "v1/%00", "v1/a%0d%0aHost: evil", "%ff", "a" * 3000,
])
def test_paths_that_could_leave_the_base_are_a_400(path):
    with pytest.raises(PathRefused) as err:
        upstream_url(BASE, path)
    assert err.value.status == 400


def test_query_strings_are_kept_but_not_fragments_or_control_characters():
    assert upstream_url(BASE, "v1/models", "a=1&b=%2F") == "http://host/tsbase/v1/models?a=1&b=%2F"
    for query in ("a=1#frag", "a=\r\nX: y"):
        with pytest.raises(PathRefused):
            upstream_url(BASE, "v1/models", query)


def test_a_base_with_credentials_is_refused():
    with pytest.raises(Exception) as err:
        upstream_url("http://user:pw@host/tsbase", "v1/models")
    assert "pw" not in str(err.value) and getattr(err.value, "status", 0) == 503


def test_the_raw_subpath_comes_from_the_still_encoded_raw_path():
    scope = {"raw_path": b"/typesafe/..%2f..%2fescaped", "path": "/typesafe/../../escaped"}
    assert raw_subpath(scope, "/typesafe/") == "..%2f..%2fescaped"
    with pytest.raises(PathRefused):
        upstream_url(BASE, raw_subpath(scope, "/typesafe/"))


def test_only_get_and_post_are_relayed():
    assert ALLOWED_METHODS == {"GET", "POST"}
    assert check_method("get") == "GET" and check_method("POST") == "POST"
    for method in ("PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"):
        with pytest.raises(MethodRefused) as err:
            check_method(method)
        assert err.value.status == 405 and err.value.headers["Allow"] == "GET, POST"


def test_request_headers_lose_auth_cookies_hop_by_hop_and_client_addresses():
    headers = [("Authorization", "Bearer caller"), ("x-api-key", "k"), ("Cookie", "c=1"), ("Host", "gw"),
               ("Content-Length", "5"), ("Connection", "keep-alive, X-Private"), ("X-Private", "1"),
               ("Keep-Alive", "5"), ("Transfer-Encoding", "chunked"), ("TE", "trailers"), ("Upgrade", "h2c"),
               ("Proxy-Authorization", "p"), ("X-Forwarded-For", "10.0.0.1"), ("X-Forwarded-Host", "a"),
               ("X-Forwarded-Proto", "https"), ("Forwarded", "for=10.0.0.1"), ("X-Real-IP", "10.0.0.1"),
               ("Content-Type", "application/json"), ("Content-Encoding", "zstd"),
               ("TypeSafe-Danger-Zone-Images", "true"), ("Accept", "application/json"), ("User-Agent", "sdk/1")]
    assert forwarded_request_headers(headers) == {
        "Content-Type": "application/json", "Content-Encoding": "zstd", "TypeSafe-Danger-Zone-Images": "true",
        "Accept": "application/json", "User-Agent": "sdk/1"}
    assert forwarded_request_headers({"X-Real-IP": "1", "Accept": "*/*"}) == {"Accept": "*/*"}


# ---- over HTTP (needs the pipeline to call upstream_url, check_method, forwarded_request_headers) ----

CONFIG = {"model_list": [{"model_name": "paths-pt", "litellm_params": {"model": "typesafe/jev-latest",
                                                                        "api_key": "cfg"}}]}


@pytest.fixture(scope="module")
def passthrough_gateway(hostile_typesafe):
    env = {"TYPESAFE_API_KEY": TYPESAFE_KEY, "TYPESAFE_API_BASE": hostile_typesafe.url + "/tsbase"}
    with gateway_with_env(CONFIG, env) as gw:
        yield gw


def raw_request(gateway, method: str, path: str, headers: dict | None = None, body: bytes | None = None):
    """The path exactly as written (http.client does not normalise dot segments or decode %2f)."""
    conn = http.client.HTTPConnection(*address(gateway.url), timeout=10)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@pytest.mark.parametrize("path", [
    "/typesafe/../../etc/passwd", "/typesafe/..%2f..%2fescaped", "/typesafe/%2e%2e/%2e%2e/escaped",
    "/typesafe/v1/..%2F..%2F..%2Fescaped", "/typesafe/..%5c..%5cescaped", "/typesafe/%252e%252e/escaped",
])
def test_passthrough_paths_never_leave_the_base(passthrough_gateway, hostile_typesafe, path):
    status, _ = raw_request(passthrough_gateway, "GET", path)
    assert status == 400
    assert [r.path for r in hostile_typesafe.requests] == []  # nothing was sent upstream


def test_a_passthrough_path_under_the_base_is_relayed(passthrough_gateway, hostile_typesafe):
    hostile_typesafe.queue(200, json={"models": []})
    status, _ = raw_request(passthrough_gateway, "GET", "/typesafe/v1/models")
    assert status == 200 and hostile_typesafe.last.path == "/tsbase/v1/models"


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
def test_passthrough_methods_other_than_get_and_post_are_refused(passthrough_gateway, hostile_typesafe, method):
    status, _ = raw_request(passthrough_gateway, method, "/typesafe/v1/models", body=b"{}")
    assert status == 405 and hostile_typesafe.requests == []


def test_passthrough_drops_the_callers_address_headers(passthrough_gateway, hostile_typesafe):
    hostile_typesafe.queue(200, json={"models": []})
    status, _ = raw_request(passthrough_gateway, "GET", "/typesafe/v1/models", headers={
        "X-Forwarded-For": "10.1.2.3", "Forwarded": "for=10.1.2.3", "X-Real-IP": "10.1.2.3",
        "Cookie": "session=1", "Authorization": "Bearer caller"})
    assert status == 200
    sent = hostile_typesafe.last.headers
    assert not {"x-forwarded-for", "forwarded", "x-real-ip", "cookie"} & set(sent)
    assert sent["authorization"] == f"Bearer {TYPESAFE_KEY}"
