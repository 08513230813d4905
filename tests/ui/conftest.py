"""The admin UI in a real headless Chromium (Debian's ``chromium``, driven by Playwright for Python),
against a running gateway with the bundled ``local/smollm2`` backend, a master key and a database.

``ui`` is one browser session: ``ui.open(page)`` loads a page, ``ui.shot(name)`` saves a screenshot
under ``artifacts/ui/`` (git ignores it), and every console message of type error, every uncaught
exception and every CSP violation fails the test that caused it. Chromium also logs one line per
HTTP error answer ("Failed to load resource: ... status of 422"); for the API calls whose refusal is
the point (a validation that finds a problem, the admin API telling a virtual key no) that line is
not a page error, so only those, on API paths the test names, are let through.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests import polls
from tests.conftest import RunningGateway, start_gateway
from tests.fakes.typesafe import FakeTypeSafe

MASTER = "sk-master-ui-tests-0123456789"
FAKE_KEY = "ts-ui-tests-upstream-key"
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "ui"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--no-first-run"]
PRICE_PER_TOKEN = 2e-6  # the local model is free; a price makes the spend charts and the cost shown non-zero
READY_TIMEOUT_S = 300.0
# A decision call reaches the bundled model, which shares the CPU with the rest of the suite (xdist
# workers, other processes): its answer gets as long as the model is given (the deployment timeout).
MODEL_ANSWER_TIMEOUT_MS = 300_000
# How long Playwright's expect(...) waits for the page to show what it should: a loaded machine
# running the suite in several processes draws slowly (the default is 5 s).
EXPECT_TIMEOUT_MS = 30_000
# API paths whose error answers are expected (Chromium logs each as "Failed to load resource").
# /user/info: a key of no user may be refused its own user (the UI then asks /key/list who it is).
EXPECTED_REFUSALS = ("/v1/systemone/validate", "/v1/decisions/validate", "/key/list", "/v1/systemone",
                     "/v1/decisions", "/user/info")


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium; .ci/run installs it)")
    return path


@pytest.fixture(scope="session")
def ui_gateway(tmp_path_factory) -> Iterator[RunningGateway]:
    """Model groups: ``smollm2`` (the bundled model, priced), ``smollm2-cached`` (the same, with the
    answer cache on) and ``jev-fake`` (a fake TypeSafe upstream, which refuses questions that say
    REFUSE)."""
    chromium_path()
    pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra")
    db = tmp_path_factory.mktemp("ui-db") / "gateway.db"
    local = {"model": "local/smollm2", "timeout": 300, "input_cost_per_token": PRICE_PER_TOKEN}
    with FakeTypeSafe(FAKE_KEY) as fake:
        running = start_gateway({
            "model_list": [
                {"model_name": "smollm2", "litellm_params": local},
                {"model_name": "smollm2-cached", "litellm_params": local, "model_info": {"cache": True}},
                {"model_name": "jev-fake", "litellm_params": {"model": "typesafe/jev-latest", "api_key": FAKE_KEY,
                                                              "api_base": fake.url}},
            ],
            "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"},
            "router_settings": {"num_retries": 0},
        })
        deadline = time.monotonic() + READY_TIMEOUT_S
        while polls.get(f"{running.url}/health/readiness", timeout=10).status_code != 200:
            assert time.monotonic() < deadline, "the bundled model did not load"
            time.sleep(0.2)
        running.fake = fake  # type: ignore[attr-defined]  # the tests script its failures
        yield running
        running.stop()


@dataclass
class UI:
    url: str
    page: object
    context: object
    problems: list[str] = field(default_factory=list)
    refusals: set[str] = field(default_factory=lambda: set(EXPECTED_REFUSALS))  # API paths whose 4xx is the point

    def open(self, name: str = "playground", *, reload: bool = False) -> None:
        self.page.goto(f"{self.url}/ui/#/{name}")
        if reload:
            self.page.reload()
        self.page.wait_for_selector(f"#page-{name}")

    def sign_in(self, key: str = MASTER) -> None:
        self.page.goto(f"{self.url}/ui/")
        self.page.get_by_label("API key").fill(key)
        self.page.get_by_role("button", name="Sign in").click()
        self.page.wait_for_selector("#page-playground")

    def sign_out(self) -> None:
        self.page.get_by_role("button", name="Sign out").click()
        self.page.wait_for_selector("#sign-in-title")

    def shot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def width(self, width: int, height: int = 800) -> None:
        self.page.set_viewport_size({"width": width, "height": height})

    def check_clean(self) -> None:
        problems, self.problems[:] = list(self.problems), []
        assert not problems, "the page reported errors:\n" + "\n".join(problems)


def _expected_refusal(message, refusals: set[str]) -> bool:
    if not message.text.startswith("Failed to load resource: the server responded with a status of 4"):
        return False
    return urlsplit((message.location or {}).get("url", "")).path in refusals


@pytest.fixture(scope="module")
def browser_context(ui_gateway):
    """One browser per test module: Playwright's sync API keeps an event loop running in this thread
    while it is open, so it must be closed before the next module's asyncio tests run."""
    from playwright.sync_api import expect

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with chromium() as context:
        yield context


@contextmanager
def chromium() -> Iterator[object]:
    """Chromium with a profile of its own, removed afterwards: a Playwright browser context."""
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="ui-chromium-")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=chromium_path(), headless=True, args=LAUNCH_ARGS,
            viewport={"width": 1280, "height": 800})
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def ui(ui_gateway, browser_context) -> Iterator[UI]:
    page = browser_context.new_page()  # a tab of its own: its session storage starts empty
    session = UI(ui_gateway.url, page, browser_context)

    def on_console(message) -> None:
        if message.type == "error" and not _expected_refusal(message, session.refusals):
            session.problems.append(f"console error: {message.text} at {message.location}")

    def on_error(exc) -> None:
        session.problems.append(f"uncaught: {exc}")

    page.on("console", on_console)
    page.on("pageerror", on_error)
    session.width(1280)
    try:
        yield session
        session.check_clean()
    finally:
        page.close()
