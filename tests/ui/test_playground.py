"""The playground in Chromium: a request on each tab answered by the bundled model, the bars showing
the server's own numbers, the server's validation sentence at the field it names, the form and the
JSON editor in step, and the "copy as" snippets run as they are against the gateway."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from tests.shared_state.conftest import SETTLE_TIMEOUT_S
from tests.ui.conftest import MASTER, MODEL_ANSWER_TIMEOUT_MS

READ_CARDS = """() => [...document.querySelectorAll('.answer-card')].map((card) => ({
  question: card.dataset.question, kind: card.dataset.kind,
  headline: card.querySelector('.headline') ? card.querySelector('.headline').textContent : null,
  confidence: card.querySelector('[data-confidence]') ? Number(card.querySelector('[data-confidence]').dataset.confidence) : null,
  labelMass: card.querySelector('[data-label-mass]') ? Number(card.querySelector('[data-label-mass]').dataset.labelMass) : null,
  rows: [...card.querySelectorAll('.bar')].map((bar) => ({option: bar.dataset.option,
    probability: Number(bar.dataset.probability), text: bar.querySelector('.bar-value').textContent,
    label: bar.querySelector('.bar-label').textContent, top: bar.classList.contains('top')})),
}))"""


def percent(p: float) -> str:
    return f"{p * 100:.1f}%"


def send(ui, path: str):
    """Click Send; the response the server returned, and the cards the page drew from it."""
    with ui.page.expect_response(lambda r: r.url.endswith(path) and r.request.method == "POST",
                                 timeout=MODEL_ANSWER_TIMEOUT_MS) as answer:
        ui.page.get_by_role("button", name="Send request").click()
    response = answer.value
    ui.page.wait_for_selector(".request-card", timeout=MODEL_ANSWER_TIMEOUT_MS)
    return response, ui.page.evaluate(READ_CARDS)


def expected_rows(wire: str, answer: dict) -> list[tuple[str, float]]:
    """(option, probability) of one answer, as the server sent it."""
    kind = answer["type"]
    if kind in ("noul", "predicate"):
        p = answer["noul" if kind == "noul" else "probability"]
        return [("true", p), ("false", 1 - p)]
    probabilities = answer["probabilities"]
    if wire == "systemone":
        return list(probabilities.items())
    return [(value_text(row["value"]), row["probability"]) for row in probabilities]


def value_text(value) -> str:
    """How the page names a typed choice value: a string as it is, true and false as JSON writes them."""
    return value if isinstance(value, str) else json.dumps(value)


def check_cards(wire: str, cards: list[dict], body: dict) -> None:
    """Each card: the options with the server's probabilities, highest first, each written as the
    server's number in percent; the chosen option, the score, confidence and label mass as sent."""
    answers = body["answers"]
    pairs = list(answers.items()) if wire == "systemone" else [(a["name"], a) for a in answers]
    assert [c["question"] for c in cards] == [name for name, _ in pairs]
    for card, (_, answer) in zip(cards, pairs):
        rows = card["rows"]
        assert dict((r["option"], r["probability"]) for r in rows) == pytest.approx(dict(expected_rows(wire, answer)),
                                                                                   abs=1e-12)
        assert [r["probability"] for r in rows] == sorted((r["probability"] for r in rows), reverse=True)
        assert all(r["text"] == percent(r["probability"]) for r in rows)
        if answer["type"] == "choice":
            assert [r["option"] for r in rows if r["top"]] == [value_text(answer["choice"])]
        if answer["type"] in ("choice", "score"):
            assert card["confidence"] == pytest.approx(answer["confidence"], abs=1e-12)
        if answer["type"] == "score":
            assert card["headline"].startswith(f"{answer['score']:.2f}")
        if "x_label_mass" in answer:
            assert card["labelMass"] == pytest.approx(answer["x_label_mass"], abs=1e-12)


def meta(ui, key: str) -> str:
    return ui.page.locator(f'[data-meta="{key}"] dd').inner_text()


@pytest.mark.parametrize("wire,path", [("systemone", "/v1/systemone"), ("decisions", "/v1/decisions")])
def test_a_request_on_each_tab_shows_the_servers_numbers(ui, wire, path):
    ui.sign_in()
    ui.page.locator(f"#tab-{wire}").click()
    ui.page.locator('[data-preset="support"]').click()
    ui.page.wait_for_selector(".status-line.good")
    response, cards = send(ui, path)
    assert response.status == 200
    body = response.json()
    check_cards(wire, cards, body)
    assert len(cards) == 3
    headers = response.headers
    assert meta(ui, "deployment") == headers["x-decisions-model"] == "local/smollm2"
    assert meta(ui, "retries") == headers["x-decisions-attempted-retries"]
    assert meta(ui, "fallbacks") == headers["x-decisions-attempted-fallbacks"]
    cost = float(headers["x-decisions-response-cost"])
    assert cost > 0 and meta(ui, "cost").startswith("$")
    assert float(meta(ui, "cost").lstrip("$")) == pytest.approx(cost, rel=0.05)
    raw = ui.page.locator(".raw-json").text_content()
    assert json.loads(raw) == body  # the page's own copy of the answer is the server's
    assert meta(ui, "model-group") == headers["x-decisions-model-group"] == "smollm2"
    ui.shot(f"playground-{wire}-1280")
    ui.width(390)
    assert ui.page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    ui.shot(f"playground-{wire}-answered-390")


def test_a_validation_error_is_shown_at_its_field_on_each_wire(ui):
    from playwright.sync_api import expect

    ui.sign_in()
    page = ui.page
    page.locator("#tab-systemone").click()
    page.locator('[data-preset="triage"]').click()
    page.wait_for_selector(".status-line.good")
    choices = page.locator('[data-loc="questions.area.criteria"]')
    for _ in range(3):
        choices.get_by_role("button", name="Remove choice").first.click()
    # The check that finds the problem: one of an earlier removal's body may still answer (200) first.
    with page.expect_response(lambda r: r.url.endswith("/v1/systemone/validate") and r.status != 200) as checked:
        choices.get_by_role("button", name="Remove choice").first.click()
    detail = checked.value.json()["detail"]
    assert checked.value.status == 422 and detail[0]["loc"][:4] == ["body", "questions", "area", "choice"]
    shown = page.locator('[data-loc="questions.area.criteria"] > .server-error')
    expect(shown).to_have_text(detail[0]["msg"])
    expect(page.locator(".status-line")).to_contain_text("1 issue to fix")
    ui.shot("playground-validation-systemone-1280")

    page.locator("#tab-decisions").click()
    page.locator('[data-preset="triage"]').click()
    page.wait_for_selector(".status-line.good")
    choices = page.locator('[data-loc="questions.0.choices"]')
    for _ in range(2):
        choices.get_by_role("button", name="Remove choice 1").click()
    # The check that finds the problem: one of an earlier removal's body may still answer (200) first.
    with page.expect_response(lambda r: r.url.endswith("/v1/decisions/validate") and r.status != 200) as checked:
        choices.get_by_role("button", name="Remove choice 1").click()
    error = checked.value.json()["error"]
    assert checked.value.status == 400 and error["param"] == "questions[0].choices"
    shown = page.locator('[data-loc="questions.0.choices"] > .server-error')
    expect(shown).to_have_text(error["message"])
    # The field is marked for a screen reader too.
    described = page.locator('[data-loc="questions.0.choices"]').locator("input, select, textarea").first.get_attribute(
        "aria-describedby")
    assert described and "err-0" in described
    # The problem is listed above the form; choosing it puts the focus in that field.
    page.locator(".issues button").first.click()
    assert page.evaluate("document.activeElement.closest('[data-loc]').dataset.loc").startswith("questions.0.choices")


def test_the_form_and_the_json_editor_stay_in_step(ui):
    from playwright.sync_api import expect

    ui.sign_in()
    page = ui.page
    page.locator("#tab-decisions").click()
    page.locator('[data-preset="moderate"]').click()
    page.locator('[data-loc="questions.0.instructions"] textarea').fill("Is the comment polite?")
    page.get_by_role("button", name="JSON", exact=True).click()
    body = json.loads(page.get_by_label("Request JSON").input_value())
    assert body["questions"][0]["instructions"] == "Is the comment polite?"
    body["questions"][1]["choices"].append({"value": False, "description": "Not a comment"})
    body["input"] = "Thanks, that helped a lot!"
    page.get_by_label("Request JSON").fill(json.dumps(body, indent=2))
    page.get_by_role("button", name="Form", exact=True).click()
    expect(page.locator('[data-loc="input"] textarea')).to_have_value("Thanks, that helped a lot!")
    last = len(body["questions"][1]["choices"]) - 1
    expect(page.locator(f'[data-loc="questions.1.choices.{last}.type"] select')).to_have_value("false")
    page.wait_for_selector(".status-line.good")

    page.locator("#tab-systemone").click()
    page.locator('[data-preset="lead"]').click()
    page.locator('[data-loc="questions.fit.id"] input').fill("lead_fit")
    page.get_by_role("button", name="JSON", exact=True).click()
    s1 = json.loads(page.get_by_label("Request JSON").input_value())
    assert list(s1["questions"])[0] == "lead_fit"  # renamed in place, the order kept
    page.get_by_role("button", name="Form", exact=True).click()


SNIPPETS = [("systemone", "typesafe", "lead"), ("systemone", "requests", "lead"), ("systemone", "curl", "lead"),
            ("decisions", "openai", "triage"), ("decisions", "requests", "triage")]


@pytest.mark.parametrize("wire,kind,preset", SNIPPETS, ids=[f"{w}-{k}" for w, k, _ in SNIPPETS])
def test_copy_as_code_runs_as_it_is(ui, tmp_path, wire, kind, preset):
    ui.sign_in()
    page = ui.page
    page.locator(f"#tab-{wire}").click()
    page.locator(f'[data-preset="{preset}"]').click()
    page.locator(f'.snippet [data-kind="{kind}"]').click()
    code = page.locator(".snippet-code").inner_text()
    assert MASTER not in code and "DECISIONS_API_KEY" in code
    ui.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=ui.url)
    page.get_by_role("button", name="Copy", exact=True).click()
    assert page.evaluate("() => navigator.clipboard.readText()") == code
    env = {**os.environ, "DECISIONS_API_KEY": MASTER}
    if kind == "curl":
        run = subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=120, env=env)
    else:
        script = tmp_path / "snippet.py"
        script.write_text(code)
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    names = ("fit", "stage", "has_budget") if preset == "lead" else ("area", "has_repro_steps", "severity")
    assert all(name in run.stdout for name in names), run.stdout


def pick_model(ui, name: str) -> None:
    ui.page.get_by_label("Model", exact=True).select_option(name)


def test_cache_hits_and_the_cost_saved_are_shown(ui):
    ui.sign_in()
    page = ui.page
    page.locator("#tab-systemone").click()
    page.locator('[data-preset="moderate"]').click()
    pick_model(ui, "smollm2-cached")
    page.locator('[data-loc="state"] textarea').fill("Cache me: the food was cold but the staff were lovely.")
    page.wait_for_selector(".status-line.good")
    first, _ = send(ui, "/v1/systemone")
    assert first.status == 200
    paid = float(first.headers["x-decisions-response-cost"])
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:  # the answers may be stored behind the first response
        second, cards = send(ui, "/v1/systemone")
        if second.headers["x-decisions-cache-hits"] != "0":
            break
        assert time.monotonic() < deadline, "the first call's answers never came from the cache"
        time.sleep(0.3)  # between tries
    assert second.headers["x-decisions-cache-hits"] == "3"
    assert meta(ui, "cache-hits") == "3"
    assert float(meta(ui, "cost-saved").lstrip("$")) == pytest.approx(paid, rel=0.05)
    assert float(second.headers["x-decisions-response-cost"]) == 0 and meta(ui, "cost") == "$0"
    check_cards("systemone", cards, second.json())
    ui.shot("playground-cache-hit-1280")


@pytest.mark.parametrize("wire,path", [("systemone", "/v1/systemone"), ("decisions", "/v1/decisions")])
def test_a_refused_question_gets_a_card_saying_so(ui, wire, path):
    ui.sign_in()
    page = ui.page
    page.locator(f"#tab-{wire}").click()
    page.locator('[data-preset="lead"]').click()
    pick_model(ui, "jev-fake")
    first = "questions.fit.instructions" if wire == "systemone" else "questions.0.instructions"
    page.locator(f'[data-loc="{first}"] textarea').fill("REFUSE to score this lead.")
    page.wait_for_selector(".status-line.good")
    response, cards = send(ui, path)
    assert response.status == 200
    assert [c["kind"] for c in cards] == ["refusal", "choice", "noul" if wire == "systemone" else "predicate"]
    assert "declined" in page.locator('.answer-card[data-kind="refusal"]').inner_text()
    check_cards(wire, cards[1:], {**response.json(), "answers": (
        {k: v for k, v in response.json()["answers"].items()} if wire == "systemone"
        else [a for a in response.json()["answers"] if a["type"] != "refusal"])})


def png_bytes() -> bytes:
    """A 1x1 PNG, made here."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x80\x00"))
            + chunk(b"IEND", b""))


@pytest.mark.parametrize("wire,where", [("decisions", "input"), ("systemone", "assets")])
def test_an_image_goes_into_the_request_and_the_server_says_what_the_model_takes(ui, tmp_path, wire, where):
    from playwright.sync_api import expect

    image = tmp_path / "photo.png"
    image.write_bytes(png_bytes())
    ui.sign_in()
    page = ui.page
    page.locator(f"#tab-{wire}").click()
    page.locator('[data-preset="triage"]').click()
    page.wait_for_selector(".status-line.good")
    label = "Image file" if wire == "decisions" else "Image (sent as an asset; its reference goes into the state)"
    path = "/v1/decisions/validate" if wire == "decisions" else "/v1/systemone/validate"
    sent_image = "input_image" if wire == "decisions" else "data_base64"  # the check of the body with the image
    with page.expect_response(lambda r: r.url.endswith(path) and sent_image in (r.request.post_data or "")) as checked:
        page.get_by_label(label).set_input_files(str(image))
    page.get_by_role("button", name="JSON", exact=True).click()
    body = json.loads(page.get_by_label("Request JSON").input_value())
    if wire == "decisions":
        text, part = body["input"][0]["content"]
        assert text["type"] == "input_text" and part["type"] == "input_image"
        assert part["image_url"].startswith("data:image/png;base64,")
    else:
        (ref, asset), = body["assets"].items()
        assert asset["format"] == "png" and asset["data_base64"] and ref in body["state"]
    page.get_by_role("button", name="Form", exact=True).click()
    answer = checked.value.json()
    message = answer["error"]["message"] if wire == "decisions" else answer["detail"]["message"]
    assert checked.value.status == 400 and "image" in message.lower()
    shown = page.locator(f'[data-loc="{where}"] > .server-error')
    expect(shown).to_have_text(message)
    expect(page.locator(".image-item img.thumb")).to_have_count(1)
    ui.shot(f"playground-image-{wire}-1280")


def test_a_box_answer_is_drawn_on_the_image(ui, tmp_path):
    image = tmp_path / "photo.png"
    image.write_bytes(png_bytes())
    ui.sign_in()
    page = ui.page
    page.locator("#tab-systemone").click()
    page.locator('[data-preset="moderate"]').click()
    pick_model(ui, "jev-fake")
    page.get_by_label("Image (sent as an asset; its reference goes into the state)").set_input_files(str(image))
    page.locator(".image-item img.thumb").wait_for()  # the file is read and the form drawn anew with it
    page.get_by_label("Type of the new question").select_option("box")
    page.get_by_role("button", name="Add question").click()
    page.locator('[data-loc="questions.question_1.instructions"] textarea').fill("The part of the photo that shows the comment")
    page.wait_for_selector(".status-line.good")
    response, cards = send(ui, "/v1/systemone")
    assert response.status == 200, response.text()
    box = response.json()["answers"]["question_1"]["box"]
    card = page.locator('.answer-card[data-question="question_1"]')
    assert card.get_attribute("data-kind") == "box"
    assert card.locator(".box-view img").count() == 1
    style = card.locator(".box-rect").get_attribute("style")
    drawn = {k: float(v) for k, v in re.findall(r"(top|left|height|width): ([0-9.e-]+)%", style)}
    assert drawn == pytest.approx({"top": box["top"] * 100, "left": box["left"] * 100,
                                   "height": (box["bottom"] - box["top"]) * 100,
                                   "width": (box["right"] - box["left"]) * 100}, abs=0.01)
    ui.shot("playground-box-1280")


def test_the_json_editor_indents_with_tab_and_lets_the_keyboard_out(ui):
    ui.sign_in()
    page = ui.page
    page.get_by_role("button", name="JSON", exact=True).click()
    editor = page.get_by_label("Request JSON")
    editor.focus()
    page.keyboard.press("Control+End")
    before = editor.input_value()
    page.keyboard.press("Tab")
    assert editor.input_value() == before + "  "  # Tab indents inside the editor
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")  # after Escape, Tab moves on
    assert page.evaluate("() => document.activeElement.getAttribute('aria-label') || document.activeElement.textContent") \
        != editor.get_attribute("aria-label")
    assert page.evaluate("() => document.activeElement.tagName") != "TEXTAREA"
