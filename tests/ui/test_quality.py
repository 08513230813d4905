"""Every page at 1280x800 and at a 390 px phone width: no sideways scroll, every control named for a
screen reader, the keyboard reaches the controls and shows where it is, and one page load is under
200 KB of our own files. A screenshot of each page at each width goes to artifacts/ui/."""

from __future__ import annotations

import pytest

MASTER_PAGES = ["playground", "keys", "teams", "users", "spend", "models", "calibration"]
MAX_PAGE_BYTES = 200 * 1024

UNNAMED = """() => [...document.querySelectorAll('input, select, textarea, button, a[href], [role=tab]')]
  .filter((el) => el.offsetParent !== null || el.getClientRects().length)
  .filter((el) => {
    const named = (el.labels && el.labels.length) || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby')
      || el.closest('label') || (['BUTTON', 'A'].includes(el.tagName) && el.textContent.trim()) || el.title;
    return !named;
  })
  .map((el) => el.outerHTML.slice(0, 120))"""

OWN_BYTES = """() => {
  const own = (e) => new URL(e.name).pathname.startsWith('/ui');
  const entries = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')].filter(own);
  return {bytes: entries.reduce((sum, e) => sum + e.decodedBodySize, 0), files: entries.map((e) => new URL(e.name).pathname)};
}"""

FOCUS = """() => {
  const el = document.activeElement;
  const style = getComputedStyle(el);
  return {tag: el.tagName, text: (el.textContent || el.getAttribute('aria-label') || el.name || '').trim().slice(0, 40),
          outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2};
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_every_page_fits_names_its_controls_and_is_light(ui, width):
    ui.sign_in()
    ui.width(width)
    for name in MASTER_PAGES:
        ui.open(name, reload=True)  # a fresh load: only this page's files are counted
        ui.page.wait_for_load_state("networkidle")
        scroll = ui.page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert scroll[0] <= scroll[1], f"{name} at {width}px scrolls sideways: {scroll}"
        ui.page.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        assert ui.page.evaluate(UNNAMED) == [], f"{name}: controls without an accessible name"
        assert ui.page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth"), name
        weight = ui.page.evaluate(OWN_BYTES)
        assert 0 < weight["bytes"] < MAX_PAGE_BYTES, (name, weight)
        assert "/ui/app.css" in weight["files"] and "/ui/js/app.js" in weight["files"]
        ui.shot(f"{name}-{width}")


def test_the_keyboard_reaches_every_control_with_a_visible_focus(ui):
    page = ui.page
    page.goto(f"{ui.url}/ui/")
    page.wait_for_selector("#sign-in-title")
    assert page.evaluate("() => document.activeElement.name") == "key"  # the key field has the focus
    ui.shot("sign-in-1280")
    page.keyboard.type("sk-master-ui-tests-0123456789")
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUS) == {"tag": "BUTTON", "text": "Sign in", "outline": True}
    page.keyboard.press("Enter")
    page.wait_for_selector("#page-playground")
    page.locator(".skip-link").focus()  # the first stop of the page
    assert page.evaluate(FOCUS)["outline"]
    seen = []
    for _ in range(40):
        page.keyboard.press("Tab")
        focus = page.evaluate(FOCUS)
        assert focus["outline"] or focus["tag"] == "BODY", f"no visible focus on {focus}"
        seen.append(focus["text"])
    for wanted in ("Playground", "Keys", "Spend", "System One", "Triage a bug report", "Send request"):
        assert any(text.startswith(wanted) for text in seen), (wanted, seen)
    # Arrow keys move between the endpoint tabs.
    page.locator("#tab-systemone").focus()
    page.keyboard.press("ArrowRight")
    assert page.evaluate("() => document.activeElement.id") == "tab-decisions"
    assert page.locator("#tab-decisions").get_attribute("aria-selected") == "true"


def test_a_virtual_key_pages_at_phone_width(ui):
    import httpx

    from tests.ui.conftest import MASTER

    made = httpx.post(f"{ui.url}/key/generate", json={"key_alias": "ui-phone", "max_budget": 5},
                      headers={"Authorization": f"Bearer {MASTER}"}, timeout=30).json()["key"]
    ui.sign_in(made)
    ui.width(390)
    for name in ("playground", "usage"):
        ui.open(name, reload=True)
        ui.page.wait_for_load_state("networkidle")
        assert ui.page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
        ui.shot(f"virtual-{name}-390")


def test_the_key_lives_in_the_tabs_session_storage_only(ui):
    from tests.ui.conftest import MASTER

    page = ui.page
    ui.refusals.add("/v1/models")
    page.goto(f"{ui.url}/ui/")
    page.get_by_label("API key").fill("sk-not-a-key-of-this-gateway")
    page.get_by_role("button", name="Sign in").click()
    error = page.locator("#sign-in-error")
    error.wait_for()
    page.wait_for_function("() => document.getElementById('sign-in-error').textContent.length > 0")
    assert "key" in error.inner_text().lower()  # the server's sentence for an unknown key
    ui.sign_in()
    assert MASTER not in page.url
    assert ui.context.cookies() == []
    assert page.evaluate("() => localStorage.length") == 0
    assert MASTER in page.evaluate("() => Object.values(sessionStorage)")
    other = ui.context.new_page()  # another tab: signed out
    try:
        other.goto(f"{ui.url}/ui/")
        other.wait_for_selector("#sign-in-title")
    finally:
        other.close()
