"""The fake upstreams behave as the spec documents (wire-formats.md sections 1, 4 and 6):
path, auth, envelope, limits, rounding, error codes and bodies, 429 with Retry-After."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from tests.fakes import answers
from tests.fakes.cloudflare import FakeCloudflare
from tests.fakes.harness import FakeServer
from tests.fakes.openai import FakeOpenAI
from tests.fakes.openrouter import FakeOpenRouter
from tests.fakes.perplexity import FakePerplexity
from tests.fakes.selfhosted import FakeLaya, FakeNimble
from tests.fakes.strands import FakeStrands
from tests.fakes.typesafe import FakeTypeSafe

Q = {"a": {"type": "noul", "instructions": "Is it urgent?"},
     "b": {"type": "choice", "criteria": {"x": None, "y": "why", "z": None}},
     "c": {"type": "score", "criteria": ["lo", "mid", "hi"]}}


def many(n: int) -> dict:
    return {f"q{i}": {"type": "noul", "instructions": f"q{i}?"} for i in range(n)}


def post(url: str, body=None, key: str | None = None, headers: dict | None = None, **kw) -> httpx.Response:
    all_headers = dict(headers or {})
    if key is not None:
        all_headers["Authorization"] = f"Bearer {key}"
    return httpx.post(url, json=body, headers=all_headers, timeout=10, **kw)


def decimals_of(x: float) -> int:
    text = repr(x)
    return len(text.split(".", 1)[1]) if "." in text else 0


def test_harness_records_and_scripts():
    with FakeServer() as fake:
        fake.queue(201, json={"ok": True}, headers={"X-One": "1"})
        r = httpx.post(fake.url + "/p?x=1", content=b'{"a": 1}', headers={"X-Test": "yes"})
        assert (r.status_code, r.json(), r.headers["x-one"]) == (201, {"ok": True}, "1")
        assert httpx.get(fake.url + "/other").status_code == 404  # queue used up: the default handler
        first = fake.requests[0]
        assert (first.method, first.path, first.query, first.json, first.body) == ("POST", "/p", {"x": ["1"]},
                                                                                  {"a": 1}, b'{"a": 1}')
        assert first.header("x-test") == "yes"


class TestTypeSafe:
    def test_auth_403_without_header_401_with_bad_key(self):
        with FakeTypeSafe("k1") as fake:
            url = fake.url + "/v1/systemone"
            body = {"model": "jev-latest", "state": "s", "questions": Q}
            assert post(url, body).status_code == 403
            bad = post(url, body, key="nope")
            assert bad.status_code == 401 and bad.json()["detail"]["error_type"] == "authentication_error"

    def test_answers_dated_model_rounding_and_request_id(self):
        with FakeTypeSafe("k1") as fake:
            r = post(fake.url + "/v1/systemone", {"model": "jev-latest", "state": "s", "questions": Q}, key="k1")
            assert r.status_code == 200 and r.headers["x-typesafe-request-id"]
            data = r.json()
            assert data["model"] == "jev-1.13-20260917"
            assert data["answers"] == fake.expected_answers(fake.last)
            assert data["answers"]["c"]["legend"] == {"0": "lo", "1": "mid", "2": "hi"}
            for p in [data["answers"]["a"]["noul"], *data["answers"]["b"]["probabilities"].values()]:
                assert decimals_of(p) <= 2
            assert isinstance(data["usage"]["input_tokens"], int)
            seed = answers.seed_for("s", "a", Q["a"])
            assert data["answers"]["a"]["noul"] == answers.yes_probability(seed, 2)

    def test_schema_errors_are_422_detail_lists(self):
        with FakeTypeSafe("k1") as fake:
            r = post(fake.url + "/v1/systemone", {"state": "s", "questions": {"a": {"type": "unknown"}}}, key="k1")
            assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "questions", "a"]
            assert post(fake.url + "/v1/systemone", {"state": "s", "questions": {}}, key="k1").status_code == 422

    def test_assets_and_box_need_the_danger_zone_header(self):
        with FakeTypeSafe("k1") as fake:
            asset = {"type": "image", "format": "png", "data_base64": base64.b64encode(b"png").decode()}
            body = {"state": "see img-1", "questions": {"d": {"type": "box", "instructions": "dog"}},
                    "assets": {"img-1": asset}}
            assert post(fake.url + "/v1/systemone", body, key="k1").status_code == 400
            gated = {"TypeSafe-Danger-Zone-Images": "true"}
            r = post(fake.url + "/v1/systemone", body, key="k1", headers=gated)
            assert r.status_code == 200 and set(r.json()["answers"]["d"]["box"]) == {"top", "bottom", "left", "right"}
            unreferenced = {**body, "state": "no mention"}
            assert post(fake.url + "/v1/systemone", unreferenced, key="k1", headers=gated).status_code == 422
            gif = {**body, "assets": {"img-1": {**asset, "format": "gif"}}}
            assert post(fake.url + "/v1/systemone", gif, key="k1", headers=gated).status_code == 422

    def test_multipart_body(self):
        with FakeTypeSafe("k1") as fake:
            from providers import multipart

            request = {"state": "see img-1", "questions": {"d": {"type": "noul", "instructions": "damaged?"}},
                       "assets": {"img-1": {"type": "image", "part": "asset-0"}}}
            content, content_type = multipart.encode(request, {"asset-0": ("image/png", b"\x89PNG...")})
            r = httpx.post(fake.url + "/v1/systemone", content=content, timeout=10,
                           headers={"Authorization": "Bearer k1", "Content-Type": content_type,
                                    "TypeSafe-Danger-Zone-Images": "true"})
            assert r.status_code == 200, r.text
            assert fake.parts["asset-0"] == ("image/png", b"\x89PNG...")

    def test_token_limit_without_the_long_context_header(self):
        with FakeTypeSafe("k1") as fake:
            body = {"state": "x" * 300_000, "questions": {"a": Q["a"]}}
            r = post(fake.url + "/v1/systemone", body, key="k1")
            assert r.status_code == 400 and r.json() == {"detail": {"error_type": "max_tokens_exceeded"}}
            lifted = post(fake.url + "/v1/systemone", body, key="k1",
                          headers={"TypeSafe-Danger-Zone-Long-Context": "true"})
            assert lifted.status_code == 200

    def test_models_and_scripted_429(self):
        with FakeTypeSafe("k1") as fake:
            models = httpx.get(fake.url + "/v1/models", headers={"Authorization": "Bearer k1"}).json()
            assert models["models"][0]["name"] == "jev-latest"
            fake.fail_next(429, "slow down", headers={"Retry-After": "2"})
            r = post(fake.url + "/v1/systemone", {"state": "s", "questions": Q}, key="k1")
            assert r.status_code == 429 and r.headers["retry-after"] == "2"
            assert r.json()["detail"]["message"] == "slow down"


class TestOpenAI:
    def test_auth_model_and_validation(self):
        with FakeOpenAI("sk-1") as fake:
            url = fake.url + "/v1/decisions"
            good = {"model": "gpt-6-luna", "input": "hi",
                    "questions": [{"type": "predicate", "name": "p", "instructions": "yes?"}]}
            assert post(url, good).status_code == 401
            wrong = post(url, good, key="sk-wrong")
            assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_api_key"
            assert post(url, {**good, "model": "gpt-5"}, key="sk-1").status_code == 404
            one_choice = {**good, "questions": [{"type": "choice", "instructions": "?", "choices": [{"value": "a"}]}]}
            r = post(url, one_choice, key="sk-1")
            assert r.status_code == 400 and r.json()["error"]["param"] == "questions[0].choices"
            too_many = {**good, "questions": [good["questions"][0]] * 401}
            assert post(url, too_many, key="sk-1").status_code == 400

    def test_answers_in_order_with_names_usage_and_refusal(self):
        with FakeOpenAI("sk-1") as fake:
            body = {"model": "gpt-6-luna", "input": "hi", "prompt_cache_key": "k", "questions": [
                {"type": "choice", "name": "c", "instructions": "?", "choices": [{"value": True}, {"value": "no"}]},
                {"type": "predicate", "instructions": "REFUSE this"},
                {"type": "score", "name": "s", "instructions": "?", "levels": [{"label": "a"}, {"label": "b"}]}]}
            r = post(fake.url + "/v1/decisions", body, key="sk-1")
            data = r.json()
            assert r.headers["x-request-id"]
            assert [a["type"] for a in data["answers"]] == ["choice", "refusal", "score"]
            assert [a["name"] for a in data["answers"]] == ["c", None, "s"]
            assert data["answers"][0]["probabilities"][0]["value"] is True
            assert data["answers"] == fake.expected_answers(fake.last)
            usage = data["usage"]
            assert usage["input_tokens_details"]["cached_tokens"] == usage["input_tokens"] // 2
            assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


class TestPerplexity:
    def test_path_model_and_128_question_limit(self):
        with FakePerplexity("p1") as fake:
            url = fake.url + "/v1/decisions"
            assert post(url, {"model": "pplx-decider-v1-27b", "state": "s", "questions": many(128)}, key="p1").status_code == 200
            r = post(url, {"model": "pplx-decider-v1-27b", "state": "s", "questions": many(129)}, key="p1")
            assert r.status_code == 400 and "128" in r.json()["error"]["message"]
            assert post(url, {"model": "pplx-unknown", "state": "s", "questions": Q}, key="p1").status_code == 400
            assert post(url, {"model": "pplx-decider-v1-27b", "state": "s", "questions": Q}).status_code == 401
            assert post(fake.url + "/v1/systemone", {"state": "s", "questions": Q}, key="p1").status_code == 404

    def test_images_in_state_and_rate_limit(self):
        with FakePerplexity("p1") as fake:
            url = fake.url + "/v1/decisions"
            part = {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}}
            body = {"model": "pplx-decider-v1-27b", "state": ["look", part], "questions": {"a": Q["a"]}}
            assert post(url, body, key="p1").status_code == 400
            part["image_url"]["url"] = "data:image/png;base64,AAAA"
            assert post(url, body, key="p1").status_code == 200
            assert post(url, {**body, "images": []}, key="p1").status_code == 400  # unknown top-level field
            fake.fail_next(429, "Rate limit exceeded")
            r = post(url, body, key="p1")
            assert r.status_code == 429 and r.headers["retry-after"] == "1"
            assert r.json()["error"]["message"] == "Rate limit exceeded"


class TestOpenRouter:
    def test_tilde_cost_and_optional_confidence(self):
        with FakeOpenRouter("o1") as fake:
            url = fake.url + "/api/alpha/decisions"
            assert post(url, {"model": "typesafe/jev-latest", "state": "s", "questions": Q}, key="o1").status_code == 400
            r = post(url, {"model": "~typesafe/jev-latest", "state": "s", "questions": Q}, key="o1")
            data = r.json()
            assert data["model"] == "typesafe/jev-1.14" and data["provider"] == "TypeSafe" and data["id"]
            assert "confidence" not in data["answers"]["b"] and "legend" not in data["answers"]["c"]
            assert data["usage"]["cost"] == pytest.approx(data["usage"]["input_tokens"] * 1e-7)
            bad = post(url, {"model": "x/y", "state": "s", "questions": Q}, key="bad")
            assert bad.status_code == 401 and bad.json()["error"]["code"] == 401


class TestCloudflare:
    def test_path_envelope_and_64_question_limit(self):
        with FakeCloudflare("t1", "acc") as fake:
            url = fake.base() + "/@cf/cloudflare/clef"
            r = post(url, {"model": "clef", "state": "s", "questions": Q}, key="t1")
            data = r.json()
            assert data["success"] is True and data["errors"] == [] and r.headers["cf-ai-req-id"]
            assert data["result"]["answers"] == fake.expected_answers(fake.last)
            assert any(decimals_of(p) > 2 for p in data["result"]["answers"]["b"]["probabilities"].values())
            r = post(url, {"model": "clef", "state": "s", "questions": many(65)}, key="t1")
            assert r.status_code == 422 and r.json()["errors"][0]["code"] == 5012
            assert post(url, {"model": "clef", "state": "s", "questions": many(64)}, key="t1").status_code == 200

    def test_error_codes(self):
        with FakeCloudflare("t1", "acc") as fake:
            url = fake.base() + "/@cf/cloudflare/clef"
            r = post(url, {"model": "clef", "state": "s", "questions": Q}, key="bad")
            assert r.status_code == 401 and r.json()["errors"][0]["code"] == 10000
            r = post(url, {"model": "clef-flash", "state": "s", "questions": Q}, key="t1")
            assert r.status_code == 400 and r.json()["errors"][0]["code"] == 7000
            r = httpx.post(url, content=b"not json", headers={"Authorization": "Bearer t1"})
            assert r.status_code == 400 and r.json()["errors"][0]["code"] == 6003
            five = {"model": "clef", "state": "s", "questions": Q, "images": ["data:image/png;base64,AA"] * 5}
            assert post(url, five, key="t1").status_code == 422
            fake.fail_next(429, "Capacity temporarily exceeded", code=3040)
            r = post(url, {"model": "clef", "state": "s", "questions": Q}, key="t1")
            assert r.status_code == 429 and "retry-after" not in r.headers and r.json()["errors"][0]["code"] == 3040


class TestSelfHosted:
    def test_strands_latency_and_engine_errors(self):
        with FakeStrands() as fake:
            url = fake.url + "/v1/systemone"
            r = post(url, {"state": "s", "questions": Q})
            assert r.status_code == 200 and "latency_ms" in r.json()
            assert r.json()["model"] == "strands-decider-E2B-gemma4-v2-2611"
            one = {"state": "s", "questions": {"s": {"type": "score", "criteria": ["only"]}}}
            r = post(url, one)
            assert r.status_code == 422 and isinstance(r.json()["detail"], str)

    def test_laya_extensions_and_optional_auth(self):
        with FakeLaya("lk") as fake:
            url = fake.url + "/v1/systemone"
            assert post(url, {"state": "s", "questions": Q}).status_code == 401
            data = post(url, {"state": "s", "questions": Q}, key="lk").json()
            assert data["model"] == "laya-rl-agent" and "routing" in data and "truncated" in data["usage"]
            choice = data["answers"]["b"]
            expected = fake.expected_answers(fake.last)["b"]
            assert choice["x_jev_confidence"] == expected["confidence"]
            assert choice["confidence"] != choice["x_jev_confidence"]  # entropy, not Jev
            assert "confidence" in data["answers"]["a"]
            assert post(url, {"state": "s", "questions": many(257)}, key="lk").status_code == 413

    def test_nimble_limits(self):
        with FakeNimble() as fake:
            url = fake.url + "/v1/systemone"
            assert httpx.get(fake.url + "/v1/limits").json()["max_questions"] == 64
            assert post(url, {"state": "s", "questions": many(65)}).status_code == 422
            wide = {"c": {"type": "choice", "criteria": {f"o{i}": None for i in range(27)}}}
            assert post(url, {"state": "s", "questions": wide}).status_code == 422
            assert post(url, {"state": "s", "questions": Q}).status_code == 200
            assert json.loads(fake.last.body)["questions"] == Q


class TestSGLang:
    def test_schema_auth_limits_and_answers(self):
        from tests.fakes.sglang import FakeSGLang

        with FakeSGLang("sg-key") as fake:
            url = fake.url + "/v1/decisions"
            questions = [{"id": "a", "type": "yes_no", "question": "Urgent?"},
                         {"id": "b", "type": "choice", "question": "Team?", "options": [{"name": "x"}, {"name": "y"}]},
                         {"id": "c", "type": "score", "question": "How bad?", "levels": ["lo", "mid", "hi"]}]
            body = {"model": "m", "input": "s", "questions": questions, "prompt_format_version": 1}
            assert post(url, body).status_code == 401
            r = post(url, body, "sg-key")
            assert r.status_code == 200
            out = r.json()
            assert out["object"] == "decisions" and out["usage"]["prompt_tokens"] > 0
            assert "completion_tokens" not in out["usage"]
            assert set(out["answers"]["a"]["probabilities"]) == {"yes", "no"}
            assert out["answers"]["b"]["choice"] in ("x", "y") and set(out["answers"]["c"]["probabilities"]) == {
                "0", "1", "2"}
            assert out["answers"] == fake.expected_answers(fake.last)
            for bad in ({**body, "extra": 1}, {**body, "prompt_format_version": 2}, {**body, "images": ["x"]},
                        {**body, "questions": [{**questions[1], "options": [{"name": "x"}]}]},
                        {**body, "questions": [{"id": f"q{i}", "type": "yes_no", "question": "?"} for i in range(65)]}):
                refused = post(url, bad, "sg-key")
                assert refused.status_code == 400 and refused.json()["object"] == "error"
            fake.fail_next(429, "busy", headers={"Retry-After": "3"})
            limited = post(url, body, "sg-key")
            assert limited.status_code == 429 and limited.headers["retry-after"] == "3"
