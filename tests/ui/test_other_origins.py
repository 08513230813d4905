"""Other origins, in the real Chromium the UI tests use.

Pages on other origins against a gateway without a master key (issue 19 item 7): a multipart System
One POST is a CORS "simple" request, so a page could make its visitors' browsers spend with
``mode: "no-cors"``. Cross-site and same-site pages are refused before anything reaches the upstream;
a page on an origin in ``allowed_origins`` is served, and may read the answer through CORS.

``/docs`` (issue 19 item 13): Swagger UI, whose Authorize dialog takes the master key, loads nothing
from another origin (every other request is cut off here, as offline) and runs under its CSP with no
violation."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import RunningGateway, start_gateway
from tests.fakes.typesafe import FakeTypeSafe
from tests.shared_state.conftest import wait_for
from tests.ui.conftest import chromium, chromium_path

FAKE_KEY = "ts-cross-site-upstream-key"
ATTEMPTS = 5

# Runs in the page: ATTEMPTS multipart System One requests, as a page on another origin may send them.
NO_CORS_POSTS = """async ([url, count]) => {
  const sent = [];
  for (let i = 0; i < count; i++) {
    const form = new FormData();
    form.append("request", JSON.stringify({model: "jev", state: "Charged twice, call " + i + ".",
      questions: {refund: {type: "noul", instructions: "Refund?"}}}));
    sent.push(fetch(url, {method: "POST", mode: "no-cors", body: form}).then((r) => r.type, (e) => String(e)));
  }
  return Promise.all(sent);
}"""

# Runs in the page: a JSON request with CORS (a preflight first), the answer read back.
CORS_POST = """async (url) => {
  const r = await fetch(url, {method: "POST", mode: "cors", headers: {"Content-Type": "application/json"},
    body: JSON.stringify({model: "jev", state: "Charged twice.", questions: {refund: {type: "noul", instructions: "Refund?"}}})});
  return {status: r.status, model: r.headers.get("x-decisions-model"), body: await r.json()};
}"""


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b"<!doctype html><title>another site</title><p>nothing here"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@dataclass
class PageServer:
    """A plain web server of another origin: a blank page the test runs its scripts in."""

    server: ThreadingHTTPServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @classmethod
    def start(cls) -> PageServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
        thread = threading.Thread(target=server.serve_forever, name="other-origin", daemon=True)
        thread.start()
        return cls(server, thread)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Sites:
    gateway: RunningGateway
    fake: FakeTypeSafe
    friend: str  # an origin in allowed_origins
    same_site: str  # another port on the gateway's host: same site, another origin
    cross_site: str  # another host name: another site


@pytest.fixture(scope="module")
def sites() -> Iterator[Sites]:
    chromium_path()
    pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra")
    friend, stranger = PageServer.start(), PageServer.start()
    friend_origin = f"http://127.0.0.1:{friend.port}"
    with FakeTypeSafe(FAKE_KEY) as fake:
        gateway = start_gateway({
            "model_list": [{"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": FAKE_KEY,
                                                                     "api_base": fake.url}}],
            "general_settings": {"allowed_origins": [friend_origin]},  # and no master key
            "router_settings": {"num_retries": 0},
        })
        try:
            yield Sites(gateway, fake, friend_origin, f"http://127.0.0.1:{stranger.port}",
                        f"http://localhost:{stranger.port}")
        finally:
            gateway.stop()
            friend.stop()
            stranger.stop()


@pytest.fixture(scope="module")
def browser(sites):
    with chromium() as context:
        yield context


@pytest.fixture
def page(browser, sites):
    page = browser.new_page()
    try:
        yield page
    finally:
        page.close()
        sites.fake.reset()


def test_pages_on_other_origins_cannot_spend_with_no_cors_multipart_posts(sites, page):
    seen = []
    page.on("request", lambda request: seen.append(request) if request.url.startswith(sites.gateway.url) else None)
    for origin in (sites.cross_site, sites.same_site):
        page.goto(origin + "/")
        for path in ("/v1/systemone", "/systemone"):
            outcomes = page.evaluate(NO_CORS_POSTS, [sites.gateway.url + path, ATTEMPTS])
            assert outcomes == ["opaque"] * ATTEMPTS, outcomes  # Chromium sent them all, and got answers
    assert len(seen) == 2 * 2 * ATTEMPTS
    refused = [request.response() for request in seen]
    assert [r.status for r in refused if r is not None] == [403] * len(seen)
    assert sites.fake.requests == [], "a page on another origin made the gateway call its upstream"


def test_a_page_on_an_allowed_origin_is_served_and_reads_the_answer(sites, page):
    page.goto(sites.friend + "/")
    outcomes = page.evaluate(NO_CORS_POSTS, [sites.gateway.url + "/v1/systemone", 1])
    assert outcomes == ["opaque"]
    wait_for(lambda: len(sites.fake.requests) == 1, what="the allowed page's call at the upstream")
    answer = page.evaluate(CORS_POST, sites.gateway.url + "/v1/systemone")
    assert answer["status"] == 200 and answer["model"] == "typesafe/jev-latest"  # an exposed header
    assert set(answer["body"]["answers"]) == {"refund"}
    assert len(sites.fake.requests) == 2


VIOLATIONS = """window.__violations = [];
  document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(e.violatedDirective + " " + e.blockedURI));"""


def test_docs_load_from_the_gateway_alone_under_a_csp_and_take_the_key_in_authorize(sites, page):
    gateway = sites.gateway.url
    elsewhere: list[str] = []

    def only_the_gateway(route) -> None:
        if route.request.url.startswith(gateway + "/"):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_gateway)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.add_init_script(VIOLATIONS)
    response = page.goto(gateway + "/docs")
    assert response is not None and response.status == 200
    csp = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp and "frame-ancestors 'none'" in csp
    page.wait_for_selector(".opblock", timeout=30_000)  # Swagger UI drew the operations of /openapi.json
    page.get_by_role("button", name="Authorize").first.click()
    page.wait_for_selector(".modal-ux input", timeout=30_000)
    assert elsewhere == [], f"/docs asked other origins for {elsewhere}"
    assert page.evaluate("() => window.__violations") == []
    assert problems == []
