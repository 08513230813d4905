"""The admin pages in Chromium: a key created and shown once (gone after a reload), edited, blocked,
unblocked; signing in with it shows only the playground and its own usage; the spend page counts
calls in its charts and its table; teams made, edited and deleted; the models page."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from tests.ui.conftest import MASTER, MODEL_ANSWER_TIMEOUT_MS, PRICE_PER_TOKEN

CALL = {"model": "smollm2", "state": "The invoice total is wrong.",
        "questions": {"billing": {"type": "noul", "instructions": "Is this about billing?"}}}


def api(ui, method: str, path: str, key: str = MASTER, **kwargs) -> httpx.Response:
    return httpx.request(method, ui.url + path, headers={"Authorization": f"Bearer {key}"}, timeout=300, **kwargs)


def create_key(ui, alias: str, *, rpm: str = "", budget: str = "") -> str:
    page = ui.page
    ui.open("keys")
    page.get_by_text("New key", exact=True).click()
    form = page.get_by_role("form", name="New key")
    form.get_by_label("Name").fill(alias)
    form.get_by_role("checkbox", name="smollm2", exact=True).check()
    if rpm:
        form.get_by_label("Requests per minute").fill(rpm)
    if budget:
        form.get_by_label("Budget (USD)").fill(budget)
    form.get_by_role("button", name="Create key").click()
    shown = page.locator(".secret .new-key")
    shown.wait_for()
    return shown.inner_text()


def row(ui, alias: str):
    return ui.page.locator("tbody tr", has_text=alias)


def test_a_new_key_is_shown_once_then_edited_blocked_and_unblocked(ui):
    from playwright.sync_api import expect

    ui.sign_in()
    key = create_key(ui, "ui-once", rpm="100", budget="2.5")
    assert key.startswith("sk-")
    page = ui.page
    ui.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=ui.url)
    page.get_by_role("button", name="Copy key").click()
    page.get_by_text("Key copied.").wait_for()
    assert page.evaluate("() => navigator.clipboard.readText()") == key
    expect(row(ui, "ui-once").locator('[data-label="Limits"]')).to_have_text("100 rpm")
    expect(row(ui, "ui-once").locator('[data-label="Budget"]')).to_have_text("$2.5")
    ui.shot("keys-created-1280")
    assert api(ui, "POST", "/v1/systemone", key=key, json=CALL).status_code == 200  # the key shown works

    page.reload()
    page.wait_for_selector("#page-keys tbody tr")
    assert key not in page.content()  # shown once: gone after a reload
    expect(page.locator(".secret")).to_have_count(0)
    deadline = time.monotonic() + 30
    while (spend := row(ui, "ui-once").locator('[data-label="Spend"]').inner_text()) == "$0":
        assert time.monotonic() < deadline, "the key's call never showed in its spend"
        time.sleep(0.5)  # the spend row drains into the database behind the answer
        page.reload()
        page.wait_for_selector("#page-keys tbody tr")
    logged = api(ui, "GET", "/spend/logs/v2", params={"key_alias": "ui-once"}).json()["data"]
    assert float(spend.lstrip("$")) == pytest.approx(sum(r["spend"] for r in logged), rel=0.05)

    row(ui, "ui-once").get_by_role("button", name="Edit key ui-once").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Requests per minute").fill("50")
    dialog.get_by_label("Budget period").select_option("1d")
    ui.shot("keys-edit-dialog-1280")
    dialog.get_by_role("button", name="Save").click()
    dialog.wait_for(state="detached")
    page.wait_for_function("() => document.querySelector('tbody tr [data-label=\"Limits\"]')?.textContent === '50 rpm'")
    expect(row(ui, "ui-once").locator('[data-label="Budget"]')).to_have_text("$2.5 / 1d")

    row(ui, "ui-once").get_by_role("button", name="Block key ui-once").click()
    row(ui, "ui-once").get_by_text("Blocked").wait_for()
    assert api(ui, "POST", "/v1/systemone", key=key, json=CALL).status_code == 403
    row(ui, "ui-once").get_by_role("button", name="Unblock key ui-once").click()
    row(ui, "ui-once").get_by_text("Active").wait_for()
    assert api(ui, "POST", "/v1/systemone", key=key, json=CALL).status_code == 200

    # A refused edit is shown as the server's sentence at its field.
    ui.refusals.add("/key/update")
    row(ui, "ui-once").get_by_role("button", name="Edit key ui-once").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Requests per minute").fill("-3")
    dialog.get_by_role("button", name="Save").click()
    error = dialog.locator('[data-loc="rpm_limit"] .server-error')
    expect(error).to_contain_text("rpm_limit")
    dialog.get_by_role("button", name="Cancel").click()

    row(ui, "ui-once").get_by_role("button", name="Delete key ui-once").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete key").click()
    page.get_by_text("Key deleted.").wait_for()  # said once the list has been reloaded
    expect(row(ui, "ui-once")).to_have_count(0)
    ui.refusals.add("/v1/systemone")
    assert api(ui, "POST", "/v1/systemone", key=key, json=CALL).status_code == 401


def test_a_virtual_key_sees_only_the_playground_and_its_own_usage(ui):
    from playwright.sync_api import expect

    ui.sign_in()
    key = create_key(ui, "ui-virtual", budget="1")
    ui.sign_out()
    ui.sign_in(key)
    page = ui.page
    expect(page.locator("#nav a")).to_have_text(["Playground", "My usage"])
    expect(page.locator("#who-label")).to_have_text("Virtual key")
    page.goto(f"{ui.url}/ui/#/keys")  # an admin page: back to the playground
    page.wait_for_function("() => location.hash === '#/playground'")
    page.wait_for_selector("#page-playground")

    page.locator('[data-preset="triage"]').click()
    page.wait_for_selector(".status-line.good")
    with page.expect_response(lambda r: r.url.endswith("/v1/systemone") and r.request.method == "POST",
                              timeout=MODEL_ANSWER_TIMEOUT_MS) as sent:
        page.get_by_role("button", name="Send request").click()
    assert sent.value.status == 200
    cost = float(sent.value.headers["x-decisions-response-cost"])
    page.wait_for_selector(".request-card")

    deadline = time.monotonic() + 30
    while True:  # the spend log's row drains into the database behind the answer
        ui.open("usage", reload=True)
        spend = page.locator('[data-total="spend"] .value').inner_text()
        if spend != "$0" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    own = api(ui, "GET", "/key/info", key=key).json()["usage"]
    assert own["total_spend"] == pytest.approx(cost, rel=1e-6) and own["requests"] == 1
    assert float(spend.lstrip("$")) == pytest.approx(cost, rel=0.05)
    expect(page.locator('[data-total="requests"] .value')).to_have_text("1")
    expect(page.locator('[data-total="budget"] .value')).to_have_text("$1")
    assert float(page.locator(".meter").get_attribute("aria-valuenow")) == pytest.approx(cost, rel=1e-6)
    ui.shot("usage-virtual-key-1280")


def test_the_spend_page_counts_the_calls_in_its_charts_and_table(ui):
    from playwright.sync_api import expect

    made = api(ui, "POST", "/key/generate", json={"key_alias": "ui-spend"}).json()["key"]
    ids = []
    for n in range(3):
        answer = api(ui, "POST", "/v1/systemone", key=made, json={**CALL, "state": f"Invoice {n} is wrong."})
        assert answer.status_code == 200
        ids.append(answer.headers["x-request-id"])
    deadline = time.monotonic() + 30
    while api(ui, "GET", "/spend/logs/v2", params={"key_alias": "ui-spend"}).json()["total"] < 3:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    ui.sign_in()
    ui.open("spend")
    page = ui.page
    today = time.strftime("%Y-%m-%d", time.gmtime())
    report = api(ui, "GET", "/global/spend/report", params={"group_by": "day"}).json()
    by_key = api(ui, "GET", "/global/spend/report", params={"group_by": "key"}).json()
    todays = next(e for e in report if str(e["date"]).startswith(today))
    page.wait_for_selector('[data-chart="Requests by day"] rect', state="attached")
    bar = page.locator(f'[data-chart="Requests by day"] rect[data-label="{today}"]')
    assert float(bar.get_attribute("data-value")) == todays["requests"] >= 3
    expect(page.locator('[data-total="requests"] .value')).to_have_text(str(sum(e["requests"] for e in report)))
    ours = next(e for e in by_key if e.get("key_alias") == "ui-spend")
    assert ours["requests"] == 3 and ours["spend"] > 0
    key_bar = page.locator('[data-chart="By key"] rect.hbar[data-label="ui-spend"]')
    assert float(key_bar.get_attribute("data-value")) == pytest.approx(ours["spend"])
    page.get_by_role("button", name="Requests", exact=True).click()
    expect(key_bar).to_have_attribute("data-value", re.compile(r"^3(\.0*)?$"))  # redrawn by requests
    ui.shot("spend-1280")
    page.get_by_role("button", name="7 days").click()
    page.wait_for_function("() => document.querySelectorAll('[data-chart=\"Requests by day\"] rect').length === 7")
    assert float(bar.get_attribute("data-value")) == todays["requests"]

    page.get_by_label("Key name").fill("ui-spend")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_function("() => document.querySelectorAll('.logs-host tbody tr').length === 3")
    shown = page.locator('.logs-host [data-label="Request"] code').all_inner_texts()
    assert sorted(shown) == sorted(ids)
    costs = page.locator('.logs-host [data-label="Cost"]').all_inner_texts()
    assert all(c.startswith("$") and c != "$0" for c in costs)
    tokens = api(ui, "GET", "/spend/logs/v2", params={"request_id": ids[0]}).json()["data"][0]["prompt_tokens"]
    assert tokens * PRICE_PER_TOKEN > 0


def test_teams_are_made_edited_blocked_and_deleted(ui):
    from playwright.sync_api import expect

    ui.sign_in()
    ui.open("teams")
    page = ui.page
    page.get_by_text("New team", exact=True).click()
    form = page.get_by_role("form", name="New team")
    form.get_by_label("Name").fill("Support")
    form.get_by_label("Team id").fill("ui-support")
    form.get_by_label("Tokens per minute").fill("5000")
    form.get_by_role("button", name="Create team").click()
    team = row(ui, "ui-support")
    team.wait_for()
    expect(team.locator('[data-label="Limits"]')).to_have_text("5000 tpm")
    team.get_by_role("button", name="Edit team Support").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Budget (USD)").fill("10")
    dialog.get_by_role("button", name="Save").click()
    dialog.wait_for(state="detached")
    page.wait_for_function("() => [...document.querySelectorAll('tbody tr')].some((r) => r.textContent.includes('$10'))")
    team.get_by_role("button", name="Block team Support").click()
    team.get_by_text("Blocked").wait_for()
    assert api(ui, "GET", "/team/info", params={"team_id": "ui-support"}).json()["team_info"]["blocked"] is True
    ui.shot("teams-1280")
    team.get_by_role("button", name="Delete team Support").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete team").click()
    page.wait_for_function("() => !document.body.textContent.includes('ui-support')")
    assert api(ui, "GET", "/team/info", params={"team_id": "ui-support"}).status_code == 404


def test_the_models_page_lists_deployments_with_health_limits_and_prices(ui, ui_gateway):
    from playwright.sync_api import expect

    ui_gateway.fake.fail_next(429, "slow down")  # a 429 cools the deployment at once
    cooled = api(ui, "POST", "/v1/systemone", json={**CALL, "model": "jev-fake", "state": "Cool me down."})
    assert cooled.status_code == 429
    ui.sign_in()
    ui.open("models")
    page = ui.page
    card = page.locator('[data-group="smollm2"] [data-deployment="local/smollm2"]')
    card.wait_for()
    fake = page.locator('[data-group="jev-fake"] [data-deployment="typesafe/jev-latest"]')
    expect(fake).to_be_visible()
    expect(card.get_by_text("Healthy")).to_be_visible()
    for shown in ("up to 256", "1 to 255", "$2 / 1M tokens"):
        expect(card).to_contain_text(shown)
    expect(fake.locator(".pill")).to_have_text("Cooling down")
    expect(fake).to_contain_text("answered 429")
    expect(fake).to_contain_text(" s left")
    expect(page.locator('[data-group="jev-fake"] .card-head').first).to_contain_text("1 cooling down")
    ui.shot("models-cooling-1280")


def test_a_key_deleted_while_signed_in_signs_the_tab_out_with_the_servers_sentence(ui):
    from playwright.sync_api import expect

    made = api(ui, "POST", "/key/generate", json={"key_alias": "ui-deleted"}).json()
    ui.sign_in(made["key"])
    assert api(ui, "POST", "/key/delete", json={"keys": [made["token"]]}).status_code == 200
    ui.refusals.add("/v1/models")
    deadline = time.monotonic() + 30
    while True:  # every gateway process forgets a deleted key within a second
        ui.page.reload()
        ui.page.wait_for_selector("#sign-in-title, #page-playground")
        if ui.page.locator("#sign-in-title").count():
            break
        assert time.monotonic() < deadline, "a reload never showed the sign-in page"
        time.sleep(0.3)  # between reloads
    expect(ui.page.locator("#sign-in-error")).to_have_text(re.compile(r"^Signed out: \S"))
    assert ui.page.evaluate("() => sessionStorage.length") == 0
