"""Small leaks at the edge (issue 19 item 13): the trailing-slash redirect never names the ``Host`` a
request sent, and ``/docs`` is served from the package under a CSP (its browser case is in
tests/ui/test_other_origins.py)."""

from __future__ import annotations

import httpx

from gateway.edge import docs


def test_the_trailing_slash_redirect_is_relative_whatever_host_is_sent(gateway):
    with httpx.Client(base_url=gateway.url, timeout=10) as client:
        for host in ("evil.example", "evil.example:8443", None):
            headers = {"Host": host} if host else {}
            answer = client.get("/key/list/", params={"page": "2"}, headers=headers)
            assert answer.status_code == 307
            assert answer.headers["location"] == "/key/list?page=2"
        assert client.get("/v1/models/", headers={"Host": "evil.example"}).headers["location"] == "/v1/models"
        # a path whose other spelling starts with // would be another host: not redirected
        assert client.get("//evil.example/").status_code == 404
        assert client.get("/no/such/route/").status_code == 404


def test_docs_are_served_from_the_package_under_a_csp(gateway):
    with httpx.Client(base_url=gateway.url, timeout=10) as client:
        page = client.get("/docs")
        assets = {name: client.get(f"/docs/assets/{name}") for name in (*docs.SWAGGER_FILES, "docs.js")}
        unknown = client.get("/docs/assets/redoc.standalone.js")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe" not in csp
    assert "http" not in page.text.replace("http-equiv", ""), "the page names another origin"
    assert "<script>" not in page.text  # no inline script: every script is a file of this origin
    for name, answer in assets.items():
        assert answer.status_code == 200 and answer.content, name
        assert answer.headers["content-type"].startswith(docs.SWAGGER_FILES.get(name, "text/javascript"))
    assert b"SwaggerUIBundle" in assets["swagger-ui-bundle.js"].content
    assert unknown.status_code == 404
