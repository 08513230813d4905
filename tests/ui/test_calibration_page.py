"""The Calibration page in Chromium, against a gateway whose upstream is overconfident by a known amount
(tests/fakes/tempered.py at inverse temperature 2.5) with outcomes drawn from the truth: the sites table
shows each question's n and raw and calibrated figures as the report has them, the reliability diagram
draws every bin, a Fit makes an active version 1 whose held-out ECE falls, Roll back makes it inactive,
a site with too few outcomes is refused with the server's sentence, and a reading role gets neither
button. The page fits a 600 px window without sideways scroll.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import RunningGateway, start_gateway
from tests.fakes.tempered import TemperedTypeSafe, draw, truth
from tests.shared_state.conftest import wait_for
from tests.ui.conftest import MASTER, chromium_path
from tests.ui.test_quality import UNNAMED

TS_KEY = "ts-ui-calibration"
SHARPEN = 2.5
GROUP, OTHER_GROUP = "jev", "jev-b"
TONE = {"type": "choice", "instructions": "Tone of the message?",
        "criteria": {"calm": None, "angry": "upset", "neutral": None, "mixed": None}}
TOPIC = {"type": "choice", "instructions": "Topic of the message?",
         "criteria": {"billing": None, "bug": None, "praise": None, "other": None}}
ASKED, FEW, ELSEWHERE = 200, 10, 5
LOGGED_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def ui_gateway(tmp_path_factory) -> Iterator[RunningGateway]:
    """This module's gateway (in place of the suite's bundled-model one): two groups on the tempered
    fake, calibration applied where fitted, a master key and a SQLite database."""
    chromium_path()
    pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra")
    db = tmp_path_factory.mktemp("ui-calibration") / "gateway.db"
    with TemperedTypeSafe(TS_KEY, sharpen=SHARPEN) as fake:
        params = {"model": "typesafe/jev-latest", "api_key": TS_KEY, "api_base": fake.url, "timeout": 10}
        running = start_gateway({
            "model_list": [{"model_name": name, "litellm_params": params, "model_info": {"calibration": "apply"}}
                           for name in (GROUP, OTHER_GROUP)],
            "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"},
            "router_settings": {"num_retries": 0}})
        try:
            yield running
        finally:
            running.stop()


@pytest.fixture(scope="module")
def client(ui_gateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=ui_gateway.url, headers={"Authorization": f"Bearer {MASTER}"}, timeout=30) as one:
        yield one


def ask(client: httpx.Client, group: str, state: str, qid: str, question: dict) -> dict:
    answer = client.post("/v1/systemone", json={"model": group, "state": state, "questions": {qid: question}})
    assert answer.status_code == 200, answer.text
    return {"request_id": answer.headers["x-request-id"], "state": state, "question": qid,
            "options": list(question["criteria"])}


@pytest.fixture(scope="module")
def report(client) -> dict:
    """200 answers of "tone" and 10 of "topic" in the group, 5 of "tone" in the other, each with an
    outcome drawn from the truth: the report of the group, as the API gives it."""
    asked = [ask(client, GROUP, f"message {i}", "tone", TONE) for i in range(ASKED)]
    asked += [ask(client, GROUP, f"note {i}", "topic", TOPIC) for i in range(FEW)]
    asked += [ask(client, OTHER_GROUP, f"elsewhere {i}", "tone", TONE) for i in range(ELSEWHERE)]
    rng = random.Random(7)
    outcomes = [{"request_id": a["request_id"], "question": a["question"],
                 "outcome": a["options"][draw(truth(a["state"], a["question"], len(a["options"])), rng)]} for a in asked]
    # The decisions reach the database behind the answers (in order): the last one's outcome is taken once it is there.
    probe = wait_for(lambda: (r := client.post("/v1/outcomes", json={"outcomes": outcomes[-1:]})).status_code != 404 and r,
                     LOGGED_TIMEOUT_S, "the last answer's decision never reached the database")
    assert probe.status_code == 200, probe.text
    posted = client.post("/v1/outcomes", json={"outcomes": outcomes})
    assert posted.status_code == 200, posted.text
    found = client.get("/calibration/report", params={"model_group": GROUP})
    assert found.status_code == 200, found.text
    return found.json()


def site_of(report: dict, question: str) -> dict:
    (found,) = [s for s in report["sites"] if s["question"] == question]
    return found


def figure(value: float) -> str:
    return f"{value:.3f}"  # the page's figure(): toFixed(3)


def site_row(ui, site: str):
    return ui.page.locator(f'#page-calibration .sites-host tbody tr[data-site="{site}"]')


def open_site(ui, question: str, site: str, group: str = GROUP):
    from playwright.sync_api import expect

    ui.open("calibration")
    ui.page.get_by_label("Model group").select_option(group)
    row = site_row(ui, site)
    row.get_by_role("button", name=question, exact=True).click()
    expect(row).to_have_class(re.compile(r"\bselected\b"))
    expect(ui.page.locator('section[aria-labelledby="reliability-title"]')).to_have_attribute("data-site", site)
    return row


def no_sideways_scroll(ui) -> bool:
    return ui.page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")


def test_the_page_shows_a_sites_measures_and_diagram_then_fits_and_rolls_back(ui, report, client):
    from playwright.sync_api import expect

    tone = site_of(report, "tone")
    raw = tone["raw"]
    assert raw["n"] == ASKED and tone["calibrated"]["n"] == ASKED and tone["kind"] == "choice"
    ui.sign_in()
    page = ui.page
    expect(page.locator("#nav a", has_text="Calibration")).to_have_count(1)
    ui.open("calibration")
    expect(page.get_by_label("Model group").locator("option")).to_have_text([GROUP, OTHER_GROUP])

    # The other group: its one site, with its own n.
    elsewhere = open_site(ui, "tone", tone["site"], OTHER_GROUP)
    expect(elsewhere.locator('[data-label="n"]')).to_have_text(str(ELSEWHERE))
    expect(page.locator("#page-calibration .sites-host tbody tr")).to_have_count(1)

    row = open_site(ui, "tone", tone["site"])
    expect(page.locator("#page-calibration .sites-host tbody tr")).to_have_count(2)
    expect(row.locator('[data-label="n"]')).to_have_text(str(ASKED))
    expect(row.locator('[data-label="Kind"]')).to_have_text("choice")
    ece = row.locator('[data-label="ECE"]')
    expect(ece.locator('[data-series="raw"] .figure')).to_have_text(figure(raw["ece"]))
    low, high = raw["ece_interval"]
    expect(ece.locator('[data-series="raw"] .ci')).to_have_text(f" ({figure(low)}–{figure(high)})")
    expect(ece.locator('[data-series="calibrated"] .figure')).to_have_text(figure(tone["calibrated"]["ece"]))
    expect(row.locator('[data-label="Brier"] [data-series="raw"] .figure')).to_have_text(figure(raw["brier"]))
    expect(row.locator('[data-label="Log loss"] [data-series="raw"] .figure')).to_have_text(figure(raw["log_loss"]))
    expect(row.locator('[data-label="Accuracy"] [data-series="raw"] .figure')).to_have_text(f"{raw['accuracy'] * 100:.1f}%")

    chart = page.locator('[data-chart="Reliability diagram"]')
    points = chart.locator('.reliability-plot [data-series="raw"]')
    expect(points).to_have_count(len(raw["bins"]))
    assert len(raw["bins"]) > 3
    assert [float(n) for n in points.evaluate_all("(els) => els.map((el) => el.dataset.n)")] == [b["n"] for b in raw["bins"]]
    assert [float(a) for a in points.evaluate_all("(els) => els.map((el) => el.dataset.accuracy)")] == pytest.approx(
        [b["accuracy"] for b in raw["bins"]])
    top = raw["bins"][-1]
    assert f"n {top['n']:g}," in points.last.locator("title").text_content()
    expect(chart.locator('.reliability-plot [data-series="calibrated"]')).to_have_count(len(tone["calibrated"]["bins"]))
    expect(chart.locator(".reliability-plot svg .diagonal")).to_have_count(1)
    expect(chart.locator(".legend li")).to_have_text(["Raw", "Calibrated", "Ideal (confidence = accuracy)"])

    # Measures over time: 7 days, each as the report answers for that day.
    days = page.locator(".over-time-host tbody tr")
    expect(days).to_have_count(7)
    today = days.last.get_attribute("data-day")
    shown = client.get("/calibration/report", params={"model_group": GROUP, "site": tone["site"],
                                                      "start": f"{today}T00:00:00Z"}).json()["sites"]
    expect(days.last.locator('[data-label="n"]')).to_have_text(str(round(shown[0]["raw"]["n"])))
    expect(days.last.locator('[data-label="ECE"] [data-series="raw"] .figure')).to_have_text(figure(shown[0]["raw"]["ece"]))
    expect(days.first.locator('[data-label="ECE"] [data-series="raw"] .figure')).to_have_text("–")

    expect(page.locator(".calibrators-host")).to_contain_text("No calibrator has been fitted")
    ui.width(1400)
    ui.shot("calibration-1400")

    with page.expect_response(lambda r: r.url.endswith("/calibration/fit") and r.request.method == "POST") as sent:
        page.get_by_role("button", name="Fit", exact=True).click()
    assert sent.value.status == 200
    fitted = sent.value.json()
    before, after = fitted["held_out"]["before"], fitted["held_out"]["after"]
    assert fitted["temperature"] > 1 and fitted["calibrator"]["version"] == 1  # softening an overconfident upstream
    version = page.locator('.calibrators-host tr[data-calibrator="1"]')
    expect(version.locator('[data-label="Status"]')).to_have_text("Active")
    expect(version.locator('[data-label="Version"]')).to_have_text("v1")
    expect(version.locator('[data-label="Method"]')).to_have_text("temperature")
    expect(version.locator('[data-label="Parameters"]')).to_have_text(f"T = {figure(fitted['temperature'])}")
    expect(version.locator('[data-label="Held-out ECE"]')).to_have_text(f"{figure(before['ece'])} → {figure(after['ece'])}")
    expect(version.locator('[data-label="Held-out log loss"]')).to_have_text(
        f"{figure(before['log_loss'])} → {figure(after['log_loss'])}")
    ui.shot("calibration-fitted-1400")

    ui.width(600)
    page.wait_for_function("() => window.innerWidth === 600")
    assert no_sideways_scroll(ui), page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert page.evaluate(UNNAMED) == [], "controls without an accessible name"
    ui.shot("calibration-fitted-600")
    ui.width(390)
    page.wait_for_function("() => window.innerWidth === 390")
    assert no_sideways_scroll(ui), page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")

    version.get_by_role("button", name="Roll back version 1").click()
    expect(version.locator('[data-label="Status"]')).to_have_text("Inactive")
    expect(page.locator(".calibrators-host").get_by_role("button", name=re.compile("Roll back"))).to_have_count(0)
    listed = client.get("/calibration/calibrators", params={"model_group": GROUP, "site": tone["site"]}).json()
    assert [(c["version"], c["active"]) for c in listed["calibrators"]] == [(1, False)]
    ui.check_clean()


def test_a_site_with_too_few_outcomes_is_refused_with_the_servers_sentence(ui, report):
    from playwright.sync_api import expect

    topic = site_of(report, "topic")
    assert topic["raw"]["n"] == FEW
    ui.sign_in()
    ui.refusals.add("/calibration/fit")  # the refusal is the point
    row = open_site(ui, "topic", topic["site"])
    expect(row.locator('[data-label="n"]')).to_have_text(str(FEW))
    ui.page.get_by_role("button", name="Fit", exact=True).click()
    refused = ui.page.locator('section[aria-labelledby="calibrators-title"] .error-box')
    expect(refused).to_have_text(f"site {topic['site']} has {FEW} outcomes; a fit needs at least 50.")
    expect(refused).to_have_attribute("role", "alert")
    expect(ui.page.locator(".calibrators-host")).to_contain_text("No calibrator has been fitted")
    ui.check_clean()


def test_a_reading_role_sees_the_measures_without_fit_or_roll_back(ui, report, client):
    from playwright.sync_api import expect

    user = f"cal-viewer-{uuid.uuid4().hex[:8]}"
    made = client.post("/user/new", json={"user_id": user, "user_role": "proxy_admin_viewer"})
    assert made.status_code == 200, made.text
    tone = site_of(report, "tone")
    ui.sign_in(made.json()["key"])
    row = open_site(ui, "tone", tone["site"])
    expect(row.locator('[data-label="ECE"] [data-series="raw"] .figure')).to_have_text(figure(tone["raw"]["ece"]))
    calibrators = ui.page.locator('section[aria-labelledby="calibrators-title"]')
    expect(calibrators).to_contain_text("Proxy admins fit and roll back calibrators.")
    expect(calibrators.get_by_role("button")).to_have_count(0)
    ui.check_clean()
