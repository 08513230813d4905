"""Property tests: any valid request and result survives wire -> IR -> wire unchanged in meaning,
on each wire and across them (System One -> IR -> OpenAI -> IR -> System One)."""

from __future__ import annotations

import base64
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.translators.helpers import assert_nimble_accepts
from translators import openai, systemone
from translators.content import json_text
from translators.errors import Unsupported
from translators.ir import option_key
from translators.normalize import normalise_result
from translators.wire_types import folded

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=10)
text = words.filter(lambda s: bool(s.strip()))
keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789-", min_size=1, max_size=8)
leaf = st.none() | st.booleans() | st.integers(-5, 5) | text
json_value = st.recursive(leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
                          max_leaves=6)
content = text | st.dictionaries(keys, json_value, min_size=1, max_size=3) | st.lists(json_value, min_size=1, max_size=3)
# Choice labels: one line, distinct after trimming and case folding (both wires refuse anything else).
labels = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
                 min_size=1, max_size=10).filter(lambda s: bool(s.strip()))


@st.composite
def s1_question(draw) -> dict:
    kind = draw(st.sampled_from(["noul", "noul-criteria", "choice", "score"]))
    question: dict[str, Any]
    if kind == "noul":
        question = {"type": "noul", "instructions": draw(content)}
    elif kind == "noul-criteria":
        yes, no = draw(st.one_of(st.tuples(content, content | st.none()), st.tuples(st.none(), content)))
        question = {"type": "noul", "criteria": {"true": yes, "false": no}}
    elif kind == "choice":
        question = {"type": "choice",
                    "criteria": dict(draw(st.lists(st.tuples(labels, content | st.none()), min_size=1, max_size=5,
                                                   unique_by=lambda item: folded(item[0]))))}
    else:
        question = {"type": "score", "criteria": draw(st.lists(content, min_size=1, max_size=6))}
    if kind in ("choice", "score") and draw(st.booleans()):
        question["instructions"] = draw(content)
    return question


s1_bodies = st.fixed_dictionaries({
    "model": st.just("jev-latest"),
    "state": content,
    "questions": st.dictionaries(keys, s1_question(), min_size=1, max_size=5),
})


@st.composite
def oa_question(draw) -> dict:
    kind = draw(st.sampled_from(["predicate", "choice", "score"]))
    question: dict[str, Any] = {"type": kind, "instructions": draw(text | st.lists(
        st.builds(lambda t: {"type": "input_text", "text": t}, text), min_size=1, max_size=2))}
    if kind == "choice":
        values = draw(st.lists(labels | st.booleans(), min_size=2, max_size=6,
                               unique_by=lambda v: folded(option_key(v))))
        question["choices"] = [{"value": v, **({"description": d} if (d := draw(st.none() | text)) else {})}
                               for v in values]
    elif kind == "score":
        question["levels"] = [{"label": draw(text), **({"description": d} if (d := draw(st.none() | text)) else {})}
                              for _ in range(draw(st.integers(2, 6)))]
    if draw(st.integers(0, 3)):
        question["name"] = draw(keys)
    return question


image_urls = st.binary(min_size=1, max_size=24).map(
    lambda data: "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + data).decode())
user_parts = st.lists(st.one_of(
    st.builds(lambda t: {"type": "input_text", "text": t}, text),
    st.builds(lambda u: {"type": "input_image", "image_url": u}, image_urls),
    st.builds(lambda d: {"type": "input_json", "data": d}, st.dictionaries(keys, json_value, max_size=3)),
), min_size=1, max_size=4).filter(lambda parts: any(p["type"] != "input_text" or p["text"].strip() for p in parts))
messages = st.lists(st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "developer", "system"]), "content": text}),
    st.fixed_dictionaries({"role": st.just("user"), "content": user_parts}),
), min_size=1, max_size=3)
oa_bodies = st.fixed_dictionaries({
    "model": st.just("gpt-6-luna"),
    "input": text | messages,
    "questions": st.lists(oa_question(), min_size=1, max_size=5),
})


def close(a: Any, b: Any, tol: float = 1e-9) -> bool:
    """JSON equality with numbers compared within ``tol``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, abs_tol=tol)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(close(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    return a == b


# ----------------------------------------------------------------------------------- requests


@SETTINGS
@given(s1_bodies)
def test_system_one_request_survives_ir(body):
    req = systemone.parse_request(body, None)
    assert systemone.render_request(req, "jev-latest") == body


@SETTINGS
@given(oa_bodies)
def test_openai_request_survives_ir(body):
    req = openai.parse_request(body, None)
    again = openai.render_request(req, "gpt-6-luna")
    # names go back as the caller wrote them, unnamed and repeated ones included (ids may be positions)
    assert again == body


@SETTINGS
@given(s1_bodies)
def test_system_one_through_openai_and_back(body):
    req = systemone.parse_request(body, None)
    if any(q.kind in ("choice", "score") and q.size < 2 for q in req.questions):
        try:
            openai.render_request(req, "gpt")
        except Unsupported as exc:
            assert exc.status == 400
            return
        raise AssertionError("a one-option question must be Unsupported on OpenAI")
    oa_body = openai.render_request(req, "gpt")
    req2 = openai.parse_request(oa_body, None)
    back = systemone.render_request(req2, "jev-latest")
    assert back["state"] == json_text(body["state"])
    assert list(back["questions"]) == list(body["questions"])
    for qid, original in body["questions"].items():
        again = back["questions"][qid]
        assert again["type"] == original["type"]
        if original["type"] == "choice":
            assert list(again["criteria"]) == list(original["criteria"])
            assert all(again["criteria"][k] == (None if v is None else json_text(v))
                       for k, v in original["criteria"].items())
        elif original["type"] == "score":
            assert again["criteria"] == [json_text(level) for level in original["criteria"]]
        if original["type"] == "noul":
            for rule in [original.get("instructions"), *original.get("criteria", {}).values()]:
                if rule is not None:
                    assert json_text(rule) in again["instructions"]
    # and the IR questions agree on everything both wires can say
    for q1, q2 in zip(req.questions, req2.questions):
        assert (q1.id, q1.kind, q1.size) == (q2.id, q2.kind, q2.size) and q2.name == q1.id
        assert [o.key for o in q1.options] == [o.key for o in q2.options]


@SETTINGS
@given(oa_bodies)
def test_openai_through_system_one_and_back(body):
    req = openai.parse_request(body, None)
    s1_body = systemone.render_request(req, "jev-latest")
    req2 = systemone.parse_request(s1_body, None)
    back = openai.render_request(req2, "gpt")
    assert req2.input.state == req.input.state
    sent_images = [p["image_url"] for m in (body["input"] if isinstance(body["input"], list) else [])
                   if isinstance(m["content"], list) for p in m["content"] if p["type"] == "input_image"]
    back_images = [p["image_url"] for p in (back["input"][0]["content"] if isinstance(back["input"], list) else [])
                   if p["type"] == "input_image"]
    assert sorted(set(back_images)) == sorted(set(sent_images))
    for question, original, again in zip(req.questions, body["questions"], back["questions"]):
        assert again["type"] == original["type"] and again["name"] == question.id
        if original["type"] == "choice":
            assert [c["value"] for c in again["choices"]] == [option_key(c["value"]) for c in original["choices"]]
        if original["type"] == "score":
            assert [lv["label"] for lv in again["levels"]] == [
                lv["label"] + (f": {lv['description']}" if "description" in lv else "") for lv in original["levels"]]


# ----------------------------------------------------------------------------------- results


@st.composite
def s1_case(draw):
    """A System One request whose questions OpenAI can also ask, and an upstream answer with rounded numbers."""
    body = draw(s1_bodies)
    for question in body["questions"].values():
        if question["type"] == "choice" and len(question["criteria"]) < 2:
            question["criteria"]["zz-extra"] = None
        if question["type"] == "score" and len(question["criteria"]) < 2:
            question["criteria"].append("top")
    digits = draw(st.sampled_from([2, 4, 12]))
    probability = st.floats(0, 1).map(lambda p: round(p, digits))
    answers = {}
    for qid, question in body["questions"].items():
        if question["type"] == "noul":
            answers[qid] = {"type": "noul", "noul": draw(probability)}
            continue
        labels = list(question["criteria"]) if question["type"] == "choice" else [
            str(i) for i in range(len(question["criteria"]))]
        answer = {"type": question["type"], "probabilities": {label: draw(probability) for label in labels}}
        if draw(st.booleans()):
            answer["confidence"] = draw(st.floats(0, 1))
        answers[qid] = answer
    return body, {"model": "jev-1.13-20260917", "answers": answers,
                  "usage": {"input_tokens": draw(st.integers(0, 10**6)), "output_tokens": 0}}


@SETTINGS
@given(s1_case())
def test_system_one_result_survives_ir_and_satisfies_strict_clients(case):
    body, upstream = case
    req = systemone.parse_request(body, None)
    result = normalise_result(systemone.parse_response(upstream, req), req)
    for answer in result.answers:
        assert abs(math.fsum(answer.probabilities) - 1.0) <= 1e-9
    rendered = systemone.render_response(result, req)
    assert_nimble_accepts(rendered, body)
    again = normalise_result(systemone.parse_response(rendered, req), req)
    assert close(systemone.render_response(again, req), rendered)


@SETTINGS
@given(s1_case(), st.data())
def test_result_survives_the_openai_wire(case, data):
    body, upstream = case
    req = systemone.parse_request(body, None)
    req2 = openai.parse_request(openai.render_request(req, "gpt"), None)
    result = normalise_result(systemone.parse_response(upstream, req), req)
    refused = data.draw(st.sets(st.sampled_from([q.id for q in req.questions])))
    result = result.__class__(result.model, tuple(a if a.question_id not in refused else
                                                  a.__class__(a.question_id, "refusal") for a in result.answers),
                              result.usage)
    oa_rendered = openai.render_response(result, req2)
    assert [a["name"] for a in oa_rendered["answers"]] == [q.id for q in req.questions]
    back = normalise_result(openai.parse_response(oa_rendered, req2), req2)
    s1_direct = systemone.render_response(result, req)
    s1_via_openai = systemone.render_response(back, req)
    assert close(s1_via_openai["answers"], s1_direct["answers"])
    assert s1_via_openai.get("refusals", []) == s1_direct.get("refusals", []) == [
        q.id for q in req.questions if q.id in refused]
    assert_nimble_accepts(s1_via_openai, body)
