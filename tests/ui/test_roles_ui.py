"""The admin UI per role (issue 20 item 2), in Chromium: the UI signs in with any key, asks the gateway
who it is (GET /user/info's "caller") and shows what that role may do, and no button for a call the
server would refuse.

- the master key: every page, the Users page included, with every action;
- a proxy_admin_viewer user's key: every page, nothing to create, edit or delete;
- an internal user's key: its own keys (made and deleted here) and its own spend, no teams or users;
  an internal_user_viewer's the same, read-only;
- a team admin's key: its team (members shown), the team's keys (made, edited, deleted) and the team's
  spend, and not another team's;
- a master makes a user with a role in the UI, adds it to a team as its admin, and that user's key
  then signs in showing that role and that team.

Setup goes through the public admin API with the master key; every check is on the page.
"""

from __future__ import annotations

import uuid

import httpx

from tests.ui.conftest import MASTER

ALL_PAGES = ["Playground", "My usage", "Keys", "Teams", "Users", "Spend", "Models", "Calibration"]


def api(ui, method: str, path: str, key: str = MASTER, **kwargs) -> dict:
    answer = httpx.request(method, ui.url + path, headers={"Authorization": f"Bearer {key}"}, timeout=60, **kwargs)
    assert answer.status_code == 200, (path, answer.status_code, answer.text)
    return answer.json()


def tag() -> str:
    return uuid.uuid4().hex[:8]


def new_user(ui, user_id: str, role: str, teams: dict[str, str] | None = None) -> str:
    """A user with ``role`` and its first key (/user/new makes one), a member of ``teams`` (team -> its
    role there): the key."""
    made = api(ui, "POST", "/user/new", json={"user_id": user_id, "user_alias": user_id, "user_role": role,
                                              "key_alias": f"{user_id}-first"})
    assert made["user_id"] == user_id and made["key"].startswith("sk-")
    for team_id, team_role in (teams or {}).items():
        api(ui, "POST", "/team/member_add", json={"team_id": team_id, "member": {"user_id": user_id, "role": team_role}})
    return made["key"]


def new_team(ui, team_id: str) -> None:
    api(ui, "POST", "/team/new", json={"team_id": team_id, "team_alias": team_id})


def rows(ui, text: str):
    return ui.page.locator("tbody tr", has_text=text)


def nav(ui):
    return ui.page.locator("#nav a")


def make_key(ui, alias: str) -> None:
    """A key made on the open keys page (its form as the caller may fill it): shown once, then in the list."""
    page = ui.page
    form = page.get_by_role("form", name="New key")
    if not form.is_visible():  # the test may have opened it to look at it first
        page.get_by_text("New key", exact=True).click()
    form.get_by_label("Name").fill(alias)
    form.get_by_role("button", name="Create key").click()
    page.locator(".secret .new-key").wait_for()


def delete_key(ui, alias: str) -> None:
    rows(ui, alias).get_by_role("button", name=f"Delete key {alias}").click()
    ui.page.get_by_role("dialog").get_by_role("button", name="Delete key").click()


def test_the_master_key_sees_every_page_and_the_users_page_with_its_actions(ui):
    from playwright.sync_api import expect

    t = tag()
    new_user(ui, f"viewer-{t}", "proxy_admin_viewer")
    ui.sign_in()
    expect(nav(ui)).to_have_text(["Playground", "Keys", "Teams", "Users", "Spend", "Models", "Calibration"])
    expect(ui.page.locator("#who-label")).to_have_text("Master key")
    ui.open("users")
    user = rows(ui, f"viewer-{t}")
    expect(user.locator('[data-label="Role"]')).to_have_text("Proxy admin viewer")
    expect(user.locator('[data-label="Keys"]')).to_have_text("1")
    for action in ("Edit", "Delete"):
        expect(user.get_by_role("button", name=f"{action} user viewer-{t}")).to_have_count(1)
    expect(ui.page.get_by_text("New user", exact=True)).to_have_count(1)
    ui.shot("roles-master-users-1280")


def test_a_proxy_admin_viewer_reads_every_page_and_changes_nothing(ui):
    from playwright.sync_api import expect

    t = tag()
    new_team(ui, f"vt-{t}")
    other = new_user(ui, f"someone-{t}", "internal_user", teams={f"vt-{t}": "user"})
    assert other
    key = new_user(ui, f"viewer-{t}", "proxy_admin_viewer")
    ui.sign_in(key)
    page = ui.page
    expect(nav(ui)).to_have_text(ALL_PAGES)
    expect(page.locator("#who-label")).to_contain_text("Proxy admin viewer")

    ui.open("keys")
    expect(rows(ui, f"someone-{t}-first")).to_have_count(1)  # every key, another user's included
    expect(rows(ui, f"someone-{t}-first").locator('[data-label="User"]')).to_have_text(f"someone-{t}")
    expect(page.get_by_text("New key", exact=True)).to_have_count(0)
    expect(page.locator("#page-keys tbody button")).to_have_count(0)

    ui.open("teams")
    expect(rows(ui, f"vt-{t}").locator('[data-label="Members"]')).to_contain_text(f"someone-{t}")
    expect(page.get_by_text("New team", exact=True)).to_have_count(0)
    expect(page.locator("#page-teams tbody button")).to_have_count(0)

    ui.open("users")
    expect(rows(ui, f"someone-{t}").locator('[data-label="Role"]')).to_have_text("Internal user")
    expect(page.get_by_text("New user", exact=True)).to_have_count(0)
    expect(page.locator("#page-users tbody button")).to_have_count(0)

    ui.open("spend")
    expect(page.locator('[data-total="requests"] .value')).to_have_count(1)
    ui.open("models")
    ui.shot("roles-viewer-models-1280")


def test_an_internal_user_sees_and_changes_its_own_keys_and_spend_only(ui):
    from playwright.sync_api import expect

    t = tag()
    new_user(ui, f"stranger-{t}", "internal_user")
    key = new_user(ui, f"intern-{t}", "internal_user")
    ui.sign_in(key)
    page = ui.page
    expect(nav(ui)).to_have_text(["Playground", "My usage", "Keys", "Spend"])
    expect(page.locator("#who-label")).to_contain_text("Internal user")

    ui.open("keys")
    expect(rows(ui, f"intern-{t}-first")).to_have_count(1)
    expect(page.locator("#page-keys tbody tr")).to_have_count(1)  # its own key only, never the stranger's
    page.get_by_text("New key", exact=True).click()
    expect(page.get_by_role("form", name="New key").get_by_label("User")).to_have_count(0)  # no key for another user
    make_key(ui, f"intern-{t}-second")
    second = rows(ui, f"intern-{t}-second")
    expect(second.locator('[data-label="User"]')).to_have_text(f"intern-{t}")
    expect(page.locator("#page-keys tbody tr")).to_have_count(2)
    delete_key(ui, f"intern-{t}-second")
    expect(second).to_have_count(0)
    expect(page.locator("#page-keys tbody tr")).to_have_count(1)

    ui.open("spend")
    expect(page.locator('[data-total="spend"] .value')).to_have_text("$0")
    expect(page.locator('[data-chart="By key"] rect.hbar')).to_have_count(1)
    for hidden in ("teams", "users"):  # not its pages: back to the playground
        page.goto(f"{ui.url}/ui/#/{hidden}")
        page.wait_for_function("() => location.hash === '#/playground'")
    ui.shot("roles-internal-user-1280")


def test_an_internal_user_viewer_reads_its_own_keys_without_buttons(ui):
    from playwright.sync_api import expect

    t = tag()
    key = new_user(ui, f"watcher-{t}", "internal_user_viewer")
    ui.sign_in(key)
    page = ui.page
    expect(nav(ui)).to_have_text(["Playground", "My usage", "Keys", "Spend"])
    expect(page.locator("#who-label")).to_contain_text("Internal user viewer")
    ui.open("keys")
    expect(rows(ui, f"watcher-{t}-first")).to_have_count(1)
    expect(page.get_by_text("New key", exact=True)).to_have_count(0)
    expect(page.locator("#page-keys tbody button")).to_have_count(0)


def test_a_team_admin_manages_its_teams_keys_and_sees_its_spend(ui):
    from playwright.sync_api import expect

    t = tag()
    ours, theirs = f"ours-{t}", f"theirs-{t}"
    new_team(ui, ours)
    new_team(ui, theirs)
    api(ui, "POST", "/key/generate", json={"key_alias": f"{ours}-shared", "team_id": ours})
    api(ui, "POST", "/key/generate", json={"key_alias": f"{theirs}-shared", "team_id": theirs})
    key = new_user(ui, f"lead-{t}", "internal_user_viewer", teams={ours: "admin"})
    ui.sign_in(key)
    page = ui.page
    expect(nav(ui)).to_have_text(["Playground", "My usage", "Keys", "Teams", "Spend"])
    expect(page.locator("#who-label")).to_contain_text(f"team admin of {ours}")

    ui.open("teams")
    expect(page.locator("#page-teams tbody tr")).to_have_count(1)
    expect(rows(ui, ours).locator('[data-label="Members"]')).to_contain_text(f"lead-{t}")
    expect(page.locator("#page-teams tbody button")).to_have_count(0)  # members and the team: proxy admins only

    ui.open("keys")
    shared = rows(ui, f"{ours}-shared")
    expect(shared).to_have_count(1)
    expect(rows(ui, f"{theirs}-shared")).to_have_count(0)
    own = rows(ui, f"lead-{t}-first")  # a viewer's own key: shown, not changed
    expect(own.get_by_role("button")).to_have_count(0)
    shared.get_by_role("button", name=f"Edit key {ours}-shared").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Requests per minute").fill("42")
    dialog.get_by_role("button", name="Save").click()
    expect(shared.locator('[data-label="Limits"]')).to_have_text("42 rpm")

    page.get_by_text("New key", exact=True).click()
    options = page.get_by_role("form", name="New key").get_by_label("Team").locator("option")
    expect(options).to_have_text([ours])  # no "No team", no other team
    make_key(ui, f"{ours}-new")
    made = rows(ui, f"{ours}-new")
    expect(made.locator('[data-label="Team"]')).to_have_text(ours)
    delete_key(ui, f"{ours}-new")
    expect(made).to_have_count(0)

    ui.open("spend")
    expect(page.locator('[data-total="requests"] .value')).to_have_count(1)
    expect(page.locator('[data-chart="By team"]')).to_have_count(0)
    ui.shot("roles-team-admin-spend-1280")


def test_a_master_makes_a_user_adds_it_to_a_team_and_its_key_signs_in_with_that_role(ui):
    from playwright.sync_api import expect

    t = tag()
    team = f"crew-{t}"
    new_team(ui, team)
    ui.sign_in()
    page = ui.page
    ui.open("users")
    page.get_by_text("New user", exact=True).click()
    form = page.get_by_role("form", name="New user")
    form.get_by_label("User id").fill(f"made-{t}")
    form.get_by_label("Name").fill(f"Made {t}")
    form.get_by_label("Role").select_option("internal_user")
    form.get_by_role("button", name="Create user").click()
    key = page.locator(".secret .new-key")
    key.wait_for()
    made_key = key.inner_text()
    assert made_key.startswith("sk-")
    user = rows(ui, f"made-{t}")
    expect(user.locator('[data-label="Role"]')).to_have_text("Internal user")

    user.get_by_role("button", name=f"Edit user Made {t}").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Budget (USD)").fill("3")
    dialog.get_by_role("button", name="Save").click()
    expect(user.locator('[data-label="Budget"]')).to_have_text("$3")

    ui.open("teams")
    crew = rows(ui, team)
    crew.get_by_role("button", name=f"Members of team {team}").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("User").select_option(f"made-{t}")
    dialog.get_by_label("Role in the team").select_option("admin")
    dialog.get_by_role("button", name="Add member").click()
    expect(crew.locator(f'[data-label="Members"] [data-member="made-{t}"]')).to_contain_text("admin")
    ui.shot("roles-master-members-1280")

    ui.sign_out()
    ui.sign_in(made_key)
    expect(page.locator("#who-label")).to_contain_text("Internal user")
    expect(page.locator("#who-label")).to_contain_text(f"team admin of {team}")
    expect(nav(ui)).to_have_text(["Playground", "My usage", "Keys", "Teams", "Spend"])

    # A member removed by the master: its key's next sign-in shows no team.
    ui.sign_out()
    ui.sign_in()
    ui.open("teams")
    crew.get_by_role("button", name=f"Members of team {team}").click()
    page.get_by_role("dialog").get_by_role("button", name=f"Remove made-{t} from team {team}").click()
    page.get_by_role("dialog").get_by_role("button", name="Remove member").click()
    expect(crew.locator(f'[data-label="Members"] [data-member="made-{t}"]')).to_have_count(0)

    ui.open("users")
    user.get_by_role("button", name=f"Delete user Made {t}").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete user").click()
    expect(user).to_have_count(0)
