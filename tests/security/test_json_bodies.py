"""Issue 8 item 3 (and issue 7 item 9): deeply nested JSON and repeated keys.

10,000 nested arrays in ``state`` or ``input`` (a 20 KB body) answered 500 with a RecursionError;
now a 4xx naming the nesting limit (``max_json_depth``, 64), on both routes and in the bundled
backend. A key given twice in one object is refused naming the key and where it is; the last one
used to win silently (a second ``model`` changed the deployment, a repeated question id dropped a
question, a repeated criteria key turned a two-option choice into one option).
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from gateway.decode.body import BodyError, decode_body, parse_json_object
from translators.json_depth import nesting_exceeds

DEEP = "[" * 10_000 + "]" * 10_000
QUESTIONS_S1 = '{"q": {"type": "noul", "instructions": "Billing?"}}'
QUESTIONS_OAI = '[{"type": "predicate", "name": "q", "instructions": "Billing?"}]'


def deep_body(route: str, nested: str = DEEP) -> bytes:
    if "systemone" in route:
        return f'{{"model": "jev", "state": {nested}, "questions": {QUESTIONS_S1}}}'.encode()
    return (f'{{"model": "jev", "input": [{{"role": "user", "content": [{{"type": "input_json", '
            f'"data": {nested}}}]}}], "questions": {QUESTIONS_OAI}}}').encode()


@pytest.mark.parametrize("route", ["/v1/systemone", "/systemone", "/v1/decisions", "/decisions"])
def test_deeply_nested_json_is_a_4xx_naming_the_limit(gateway, hostile_typesafe, route):
    body = deep_body(route)
    assert len(body) < 25_000
    r = httpx.post(gateway.url + route, content=body, headers={"Content-Type": "application/json"}, timeout=10)
    assert r.status_code in (400, 422), r.text
    assert "64" in r.text and "deep" in r.text and "max_json_depth" in r.text
    assert hostile_typesafe.requests == []


@pytest.mark.parametrize("route, body, key", [
    ("/v1/systemone", '{"model": "jev", "model": "luna", "state": "s", "questions": ' + QUESTIONS_S1 + "}", "'model'"),
    ("/v1/systemone", '{"model": "jev", "state": "s", "questions": {"q": {"type": "noul"}, '
                      '"q": {"type": "noul", "instructions": "again"}}}', "'q' more than once in questions"),
    ("/v1/systemone", '{"model": "jev", "state": "s", "questions": {"t": {"type": "choice", '
                      '"criteria": {"calm": null, "calm": "upset"}}}}', "'calm' more than once in questions.t.criteria"),
    ("/v1/decisions", '{"model": "jev", "model": "luna", "input": "s", "questions": ' + QUESTIONS_OAI + "}", "'model'"),
    ("/v1/decisions", '{"model": "jev", "input": "s", "questions": [{"type": "predicate", "name": "q", '
                      '"instructions": "a", "instructions": "b"}]}', "'instructions' more than once in questions[0]"),
])
def test_a_repeated_key_is_refused_naming_it(gateway, hostile_typesafe, hostile_openai, route, body, key):
    r = httpx.post(gateway.url + route, content=body.encode(), headers={"Content-Type": "application/json"},
                   timeout=10)
    assert r.status_code in (400, 422), r.text
    assert key in r.text
    assert hostile_typesafe.requests == [] and hostile_openai.requests == []


# ---- the decoder -----------------------------------------------------------------------------------


def test_nesting_up_to_the_limit_passes_and_one_more_level_is_refused():
    assert decode_body(b'{"s": ' + b"[" * 63 + b"]" * 63 + b"}", "application/json", None).json["s"]
    with pytest.raises(BodyError) as err:
        decode_body(b'{"s": ' + b"[" * 64 + b"]" * 64 + b"}", "application/json", None)
    assert err.value.kind == "json" and "64" in err.value.message


def test_brackets_inside_strings_do_not_count():
    text = json.dumps({"state": "[" * 5000 + '\\"{' * 100, "k[": ["]]]", "[[["]})
    assert parse_json_object(text.encode(), "the request body")["state"].startswith("[[[")


def test_unclosed_and_mixed_nesting_is_refused_not_a_recursion_error():
    for body in (b'{"s": ' + b"[" * 10_000, b'{"s": ' + b'{"a": [' * 5_000 + b"1" + b"]}" * 5_000 + b"}"):
        with pytest.raises(BodyError) as err:
            parse_json_object(body, "the request body")
        assert "64" in err.value.message


def test_the_depth_limit_is_a_setting():
    body = b'{"s": [[[[1]]]]}'
    assert parse_json_object(body, "the body", max_depth=5)
    with pytest.raises(BodyError):
        parse_json_object(body, "the body", max_depth=4)


def test_the_scan_is_cheap_on_big_and_wide_bodies():
    wide = json.dumps({"state": [[i] for i in range(300_000)], "text": "[" * 1_000_000}).encode()
    started = time.perf_counter()
    assert not nesting_exceeds(wide, 64)
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("body, words", [
    (b'{"model": "a", "model": "b"}', "the key 'model' more than once at the top level"),
    (b'{"questions": {"q": {}, "q": {}}}', "the key 'q' more than once in questions"),
    (b'{"x": [1, {"k": 1, "k": 2}]}', "the key 'k' more than once in x[1]"),
])
def test_repeated_keys_name_the_key_and_its_path(body, words):
    with pytest.raises(BodyError) as err:
        parse_json_object(body, "the request body")
    assert err.value.kind == "json" and words in err.value.message


def test_repeated_keys_in_the_multipart_request_part_are_refused():
    content = (b'--b\r\nContent-Disposition: form-data; name="request"\r\n\r\n{"model": "a", "model": "b"}\r\n'
               b"--b--\r\n")
    with pytest.raises(BodyError) as err:
        decode_body(content, "multipart/form-data; boundary=b", None)
    assert "'model'" in err.value.message


def test_the_repeated_key_check_costs_microseconds_on_a_typical_body():
    body = json.dumps({"model": "smollm2", "state": "I was charged twice for order #4411.", "questions": {
        "refund": {"type": "noul", "instructions": "Refund?"},
        "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset"}},
        "urgency": {"type": "score", "instructions": "Urgent?", "criteria": ["later", "this week", "today"]}}}).encode()
    started = time.perf_counter()
    for _ in range(2000):
        parse_json_object(body, "the request body")
    assert (time.perf_counter() - started) / 2000 < 200e-6  # measured ~10 us (json.loads alone: ~5 us)


# ---- the bundled backend's own HTTP app --------------------------------------------------------------


class _NoModel:
    """Enough of a DecisionService for the body to be refused before any model work."""

    class loaded:
        name, device = "stub", "cpu"

    async def handle(self, path, body):  # pragma: no cover - never reached by these bodies
        raise AssertionError("a refused body reached the model")


@pytest.mark.parametrize("path, status", [("/v1/decisions", 400), ("/v1/systemone", 422), ("/v1/score", 400)])
async def test_the_backend_refuses_deep_json_naming_the_limit(path, status):
    from backend.server import create_app

    app = create_app(_NoModel())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://backend") as client:
        r = await client.post(path, content=b'{"input": ' + DEEP.encode() + b"}",
                              headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    assert "64" in r.text and "deep" in r.text
