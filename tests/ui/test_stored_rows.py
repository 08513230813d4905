"""The Keys and Teams pages in Chromium with a stored row the API would refuse today (issue 19, item 8): a key and
a team whose metadata holds a lone surrogate, written straight into the database (as a row stored before the
refusal, or by hand, would be). Both pages list them, without an error."""

from __future__ import annotations

import sqlite3

import httpx

from tests.ui.conftest import MASTER


def api(ui, method: str, path: str, **kwargs) -> httpx.Response:
    return httpx.request(method, ui.url + path, headers={"Authorization": f"Bearer {MASTER}"}, timeout=60, **kwargs)


def test_the_keys_and_teams_pages_list_a_stored_row_holding_a_lone_surrogate(ui, ui_gateway):
    assert api(ui, "POST", "/team/new", json={"team_id": "ui-stored", "team_alias": "Stored team"}).status_code == 200
    key = api(ui, "POST", "/key/generate", json={"key_alias": "ui-stored-key", "team_id": "ui-stored"})
    assert key.status_code == 200, key.text
    url = ui_gateway.state.config.general_settings["database_url"]
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        conn.execute("UPDATE teams SET metadata = ? WHERE team_id = ?", ('{"note": "\\ud800"}', "ui-stored"))
        conn.execute("UPDATE verification_tokens SET metadata = ? WHERE token = ?",
                     ('{"note": "\\udfff"}', key.json()["token"]))
    listed = api(ui, "GET", "/key/list", params={"return_full_object": "true", "size": 100})
    assert listed.status_code == 200, listed.text

    ui.sign_in()
    ui.open("keys")
    ui.page.locator("tbody tr", has_text="ui-stored-key").wait_for()
    ui.open("teams")
    ui.page.locator("tbody tr", has_text="ui-stored").wait_for()
    ui.check_clean()
