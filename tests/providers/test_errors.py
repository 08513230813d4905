"""Every provider's failures become ``UpstreamError`` naming the provider, with the right status,
Retry-After kept on 429, and never an API key in the message; capability limits answer 400 before
any upstream call with the phrase benchmark runners look for."""

from __future__ import annotations

import pytest

from providers.registry import get_provider
from tests.providers import helpers as h
from tests.providers.cases import BY_NAME, CASES
from translators import systemone as systemone_wire
from translators.errors import DecisionError, RequestInvalid, Unsupported, UpstreamError

IDS = [c.provider for c in CASES]
CALLER_STATUS = {400: 400, 401: 401, 403: 403, 404: 404, 408: 408, 413: 413, 422: 422, 429: 429,
                 500: 502, 502: 502, 503: 503, 504: 504}


@pytest.mark.parametrize("status", sorted(CALLER_STATUS))
@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_upstream_error_statuses(case, status, fake_for):
    fake = fake_for(case)
    headers = {"Retry-After": "7", "retry-after-ms": "7000"} if status == 429 else None
    fake.fail_next(status, f"scripted failure {status}", headers=headers)
    with pytest.raises(UpstreamError) as caught:
        await h.decide(case.deployment(fake), h.s1_request())
    err = caught.value
    assert err.status == CALLER_STATUS[status]
    assert err.provider == case.provider and get_provider(case.provider).label in err.message
    assert f"HTTP {status}" in err.message and f"scripted failure {status}" in err.message
    if status == 429:
        assert err.headers == {"Retry-After": "7", "retry-after-ms": "7000"}
        assert err.retryable
    if status >= 500:
        assert err.retryable
    if case.api_key:
        assert case.api_key not in err.message
    assert len(fake.requests) == 1


@pytest.mark.parametrize("case", [c for c in CASES if c.api_key], ids=lambda c: c.provider)
async def test_wrong_key_is_an_auth_error_without_the_key(case, fake_for):
    fake = fake_for(case)
    wrong = "wrong-secret-key-123456"
    with pytest.raises(UpstreamError) as caught:
        await h.decide(case.deployment(fake, api_key=wrong), h.s1_request())
    assert caught.value.status in (401, 403)
    assert wrong not in caught.value.message and wrong not in str(caught.value)


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_timeout_is_504(case, fake_for):
    fake = fake_for(case)
    fake.queue(200, json={"answers": {}}, delay=1.0)
    with pytest.raises(UpstreamError) as caught:
        await h.decide(case.deployment(fake, timeout=0.2), h.s1_request())
    assert caught.value.status == 504 and caught.value.provider == case.provider
    assert case.provider in caught.value.message


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_connection_failure_is_502(case, fake_for):
    fake = fake_for(case)
    dead = case.deployment(fake, api_base=case.base(fake).replace(f":{fake.port}", ":9"))
    with pytest.raises(UpstreamError) as caught:
        await h.decide(dead, h.s1_request())
    assert caught.value.status == 502 and caught.value.provider == case.provider
    assert case.provider in caught.value.message


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_non_json_200_is_502(case, fake_for):
    fake = fake_for(case)
    fake.queue(200, body="<html>gateway hiccup</html>", headers={"Content-Type": "text/html"})
    with pytest.raises(UpstreamError) as caught:
        await h.decide(case.deployment(fake), h.s1_request())
    assert caught.value.status == 502 and caught.value.provider == case.provider
    assert "JSON" in caught.value.message


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_non_json_error_page_keeps_its_status(case, fake_for):
    fake = fake_for(case)
    fake.queue(504, body="<html><h1>504 Gateway Time-out</h1></html>", headers={"Content-Type": "text/html"})
    with pytest.raises(UpstreamError) as caught:
        await h.decide(case.deployment(fake), h.s1_request())
    assert caught.value.status == 504 and "non-JSON" in caught.value.message
    assert caught.value.provider == case.provider


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_missing_answer_is_502_never_a_made_up_probability(case, fake_for):
    fake = fake_for(case)
    if case.wire == "openai":
        body = {"model": case.body_model, "answers": [{"type": "predicate", "name": "refund", "probability": 0.5}],
                "usage": {"input_tokens": 3, "output_tokens": 0}}
    else:
        body = {"model": case.body_model, "answers": {"refund": {"type": "noul", "noul": 0.5}},
                "usage": {"input_tokens": 3, "output_tokens": 0}}
        if case.provider == "cloudflare":
            body = {"result": body, "success": True, "errors": [], "messages": []}
    fake.queue(200, json=body)
    with pytest.raises(UpstreamError) as caught:
        await h.decide(case.deployment(fake), h.s1_request())
    assert caught.value.status == 502


async def test_missing_key_fails_before_any_call(fake_for):
    case = BY_NAME["typesafe"]
    fake = fake_for(case)
    with pytest.raises(DecisionError) as caught:
        await h.decide(case.deployment(fake, api_key=None), h.s1_request())
    assert caught.value.status == 401 and "TYPESAFE_API_KEY" in caught.value.message
    assert fake.requests == []


async def test_strands_without_a_base_names_the_setting():
    from providers.base import Deployment

    dep = Deployment("s", "strands_decider", "hobson")
    with pytest.raises(DecisionError) as caught:
        await h.decide(dep, h.s1_request())
    assert caught.value.status == 400 and "STRANDS_DECIDER_API_BASE" in caught.value.message


async def test_cloudflare_error_codes(fake_for):
    case = BY_NAME["cloudflare"]
    fake = fake_for(case)
    for status, code, want, retryable in ((429, 3040, 429, True), (429, 4006, 429, False), (401, 10000, 401, False),
                                          (413, 5021, 413, False), (529, 5012, 503, True)):
        fake.fail_next(status, "cloudflare says no", code=code)
        with pytest.raises(UpstreamError) as caught:
            await h.decide(case.deployment(fake), h.s1_request())
        assert (caught.value.status, caught.value.code, caught.value.retryable) == (want, str(code), retryable)


async def test_typesafe_token_refusal_without_message(fake_for):
    case = BY_NAME["typesafe"]
    fake = fake_for(case)
    fake.queue(400, json={"detail": {"error_type": "max_tokens_exceeded"}})
    with pytest.raises(UpstreamError) as caught:
        await h.decide(case.deployment(fake), h.s1_request())
    assert caught.value.status == 400 and caught.value.code == "max_tokens_exceeded"
    assert "max_tokens_exceeded" in caught.value.message


# ---- capacity: 400 before any call, with the phrase ---------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_levels_over_the_limit(case, fake_for):
    fake = fake_for(case)
    questions = {"u": {"type": "score", "instructions": "How urgent?", "criteria": list("abcdef")}}
    with pytest.raises(Unsupported) as caught:
        await h.decide(case.deployment(fake, model_info={"max_levels": 5}), h.s1_request(questions))
    assert caught.value.status == 400 and "a score takes" in caught.value.message
    assert "to 5 levels" in caught.value.message and case.provider in caught.value.message
    assert systemone_wire.locate(caught.value.loc) == ("body", "questions", "u", "criteria")
    assert fake.requests == []


async def test_options_over_the_nimble_limit(fake_for):
    case = BY_NAME["bespoke"]
    fake = fake_for(case)
    questions = {"letter": {"type": "choice", "instructions": "Which?", "criteria": {f"o{i}": None for i in range(27)}}}
    with pytest.raises(Unsupported) as caught:
        await h.decide(case.deployment(fake), h.s1_request(questions))
    assert "options per choice" in caught.value.message and "2 to 26" in caught.value.message
    assert fake.requests == []


async def test_cloudflare_single_option_choice(fake_for):
    case = BY_NAME["cloudflare"]
    fake = fake_for(case)
    questions = {"only": {"type": "choice", "instructions": "Which?", "criteria": {"one": None}}}
    with pytest.raises(Unsupported) as caught:
        await h.decide(case.deployment(fake), h.s1_request(questions))
    assert "options per choice" in caught.value.message
    assert fake.requests == []


async def test_context_length(fake_for):
    case = BY_NAME["typesafe"]
    fake = fake_for(case)
    with pytest.raises(Unsupported) as caught:
        await h.decide(case.deployment(fake), h.s1_request(state="word " * 60_000))
    assert "maximum context length" in caught.value.message
    assert fake.requests == []


async def test_long_context_header_lifts_the_typesafe_limit(fake_for):
    from dataclasses import replace

    case = BY_NAME["typesafe"]
    fake = fake_for(case)
    req = replace(h.s1_request(state="word " * 60_000), headers={"TypeSafe-Danger-Zone-Long-Context": "true"})
    decided = await h.decide(case.deployment(fake), req)
    assert fake.last.header("typesafe-danger-zone-long-context") == "true"
    assert len(decided.result.answers) == 3


@pytest.mark.parametrize("case", [c for c in CASES if c.provider != "typesafe"], ids=lambda c: c.provider)
async def test_box_questions_only_where_supported(case, fake_for):
    fake = fake_for(case)
    questions = {"where": {"type": "box", "instructions": "The dog"}}
    with pytest.raises(Unsupported) as caught:
        await h.decide(case.deployment(fake), h.s1_request(questions))
    assert "box questions" in caught.value.message
    assert fake.requests == []


async def test_unknown_model_lists_the_configured_names():
    from gateway.config.registry import ModelRegistry
    from gateway.pipeline import decide_once
    from providers.base import Deployment
    from translators import openai as openai_wire

    deps = [Deployment("jev", "typesafe", "jev-latest", api_key="k"), Deployment("luna", "openai", "gpt-6-luna",
                                                                                 api_key="k")]
    registry = ModelRegistry(deps, environ={})
    with pytest.raises(RequestInvalid) as caught:
        await decide_once(registry, None, h.s1_request(), "nope")
    assert openai_wire.locate(caught.value.loc) == ("model",) and "jev, luna" in caught.value.message
    with pytest.raises(RequestInvalid):
        await decide_once(registry, None, h.s1_request(), "typesafe/jev-latest")  # ad hoc names only when allowed
    adhoc = ModelRegistry(deps, environ={"TYPESAFE_API_KEY": "env-key"}, allow_adhoc=True)
    dep = adhoc.deployment_for("typesafe/jev-latest")
    assert (dep.provider, dep.model, dep.api_key, dep.api_base) == ("typesafe", "jev-latest", "env-key",
                                                                    "https://api.typesafe.ai")
