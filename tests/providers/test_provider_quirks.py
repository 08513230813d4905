"""Per-provider behaviour beyond the shared suite: addressing rules, envelopes, usage, quirks."""

from __future__ import annotations

import base64
from dataclasses import replace

import pytest

from providers.base import Deployment
from providers.registry import PROVIDERS, get_provider, resolve, split_model
from tests.fakes import answers
from tests.providers import helpers as h
from tests.providers.cases import BY_NAME
from translators.errors import RequestInvalid, Unsupported

# ---- registry ------------------------------------------------------------------------------------


def test_split_model_and_unknown_prefixes():
    assert split_model("typesafe/jev-latest") == ("typesafe", "jev-latest")
    assert split_model("openrouter/typesafe/jev-1.13") == ("openrouter", "typesafe/jev-1.13")
    for bad in ("nope/x", "jev-latest", "typesafe/"):
        with pytest.raises(RequestInvalid) as caught:
            split_model(bad)
        assert "openai" in caught.value.message and "cloudflare" in caught.value.message


def test_registry_names_every_provider_lazily():
    assert {"openai", "typesafe", "perplexity", "openrouter", "cloudflare", "strands_decider", "laya", "bespoke",
            "systemone", "sglang", "local"} <= set(PROVIDERS)
    assert PROVIDERS["typesafe"].__name__ == "TypeSafeProvider"
    assert get_provider("perplexity").name == "perplexity"


@pytest.mark.parametrize("provider, env, want_key, want_base", [
    ("openai", {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://o/v1"}, "k", "http://o/v1"),
    ("openai", {"OPENAI_API_KEY": "k"}, "k", "https://api.openai.com"),
    ("typesafe", {"TYPESAFE_API_KEY": "t"}, "t", "https://api.typesafe.ai"),
    ("perplexity", {"PERPLEXITYAI_API_KEY": "a", "PERPLEXITY_API_KEY": "b"}, "a", "https://api.perplexity.ai"),
    ("perplexity", {"PERPLEXITY_API_KEY": "b", "PERPLEXITYAI_API_KEY": ""}, "b", "https://api.perplexity.ai"),
    ("openrouter", {"OPENROUTER_API_KEY": "r"}, "r", "https://openrouter.ai/api"),
    ("cloudflare", {"CLOUDFLARE_API_KEY": "c", "CLOUDFLARE_ACCOUNT_ID": "acc"}, "c",
     "https://api.cloudflare.com/client/v4/accounts/acc/ai/run"),
    ("strands_decider", {"STRANDS_DECIDER_API_BASE": "http://s:8000"}, None, "http://s:8000"),
    ("laya", {"LAYA_API_BASE": "http://l", "LAYA_API_KEY": "lk"}, "lk", "http://l"),
])
def test_resolve_reads_the_provider_environment(provider, env, want_key, want_base):
    dep = resolve(Deployment("m", provider, "x"), env)
    assert (dep.api_key, dep.api_base) == (want_key, want_base)


def test_explicit_values_win_and_self_hosted_keys_stay_with_their_base():
    dep = resolve(Deployment("m", "typesafe", "x", api_key="mine", api_base="http://mine"), {"TYPESAFE_API_KEY": "e"})
    assert (dep.api_key, dep.api_base) == ("mine", "http://mine")
    elsewhere = resolve(Deployment("m", "laya", "x", api_base="http://attacker"),
                        {"LAYA_API_BASE": "http://l", "LAYA_API_KEY": "lk"})
    assert elsewhere.api_key is None


# ---- addressing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("base", ["https://api.openai.com", "https://api.openai.com/v1", "https://api.openai.com/v1/"])
def test_openai_base_with_or_without_v1(base):
    dep = Deployment("m", "openai", "gpt-6-luna", api_key="k", api_base=base)
    assert get_provider("openai").build_request(h.openai_request(), dep).url == "https://api.openai.com/v1/decisions"


@pytest.mark.parametrize("base, model, url", [
    ("https://cf/client/v4/accounts/a/ai/run", "clef", "https://cf/client/v4/accounts/a/ai/run/@cf/cloudflare/clef"),
    ("https://cf/client/v4/accounts/a/ai/v1", "clef-flash",
     "https://cf/client/v4/accounts/a/ai/run/@cf/cloudflare/clef-flash"),
    ("https://cf/client/v4/accounts/a", "@cf/cloudflare/clef", "https://cf/client/v4/accounts/a/ai/run/@cf/cloudflare/clef"),
])
def test_cloudflare_urls(base, model, url):
    dep = Deployment("m", "cloudflare", model, api_key="k", api_base=base)
    request = get_provider("cloudflare").build_request(h.s1_request(), dep)
    assert request.url == url
    assert request.json["model"] == url.rsplit("/", 1)[-1]


def test_cloudflare_account_from_the_deployment_and_missing_account():
    provider = get_provider("cloudflare")
    dep = Deployment("m", "cloudflare", "clef", api_key="k", params={"account_id": "acc9"})
    assert provider.build_request(h.s1_request(), dep).url.startswith(
        "https://api.cloudflare.com/client/v4/accounts/acc9/ai/run/@cf/cloudflare/clef")
    with pytest.raises(Exception) as caught:
        provider.build_request(h.s1_request(), Deployment("m", "cloudflare", "clef", api_key="k"))
    assert "CLOUDFLARE_ACCOUNT_ID" in str(caught.value)


def test_danger_zone_headers_go_to_typesafe_only():
    req = replace(h.s1_request(), headers={"TypeSafe-Danger-Zone-Long-Context": "true"})
    ts = get_provider("typesafe").build_request(req, Deployment("m", "typesafe", "jev-latest", api_key="k",
                                                                 api_base="http://t"))
    assert ts.headers["TypeSafe-Danger-Zone-Long-Context"] == "true"
    for name in ("perplexity", "openrouter", "openai"):
        other = get_provider(name).build_request(req, Deployment("m", name, "x", api_key="k", api_base="http://o"))
        assert not any(k.lower().startswith("typesafe-danger-zone") for k in other.headers)


def test_deployment_headers_and_openrouter_routing():
    dep = Deployment("m", "openrouter", "perplexity/pplx-decider-v1.2", api_key="k", api_base="http://o/api",
                     params={"provider": {"order": ["Perplexity"]}, "http_referer": "https://me", "app_title": "Me",
                             "extra_headers": {"X-Team": "blue", "Authorization": "Bearer stolen"}})
    request = get_provider("openrouter").build_request(h.s1_request(), dep)
    assert request.json["provider"] == {"order": ["Perplexity"]}
    assert request.json["model"] == "perplexity/pplx-decider-v1.2"  # no tilde for a pinned model
    assert (request.headers["HTTP-Referer"], request.headers["X-Title"], request.headers["X-Team"]) == (
        "https://me", "Me", "blue")
    assert request.headers["Authorization"] == "Bearer k"


# ---- usage, confidence, quirks through the fakes -------------------------------------------------


async def test_openrouter_cost_and_cached_tokens(fake_for):
    case = BY_NAME["openrouter"]
    fake = fake_for(case)
    decided = await h.decide(case.deployment(fake), h.s1_request())
    tokens = answers.token_count(fake.last.body)
    assert decided.result.usage.cost == pytest.approx(tokens * 1e-7)
    assert decided.result.usage.cached_tokens == tokens // 4
    team = {a.question_id: a for a in decided.result.answers}["team"]
    assert team.confidence is not None  # synthesised: OpenRouter sent none


async def test_openai_cached_tokens_kept(fake_for):
    case = BY_NAME["openai"]
    fake = fake_for(case)
    req = replace(h.openai_request(), prompt_cache_key="tenant-1")
    decided = await h.decide(case.deployment(fake), req)
    assert fake.last.json["prompt_cache_key"] == "tenant-1"
    assert decided.result.usage.cached_tokens == decided.result.usage.input_tokens // 2 > 0


async def test_laya_confidence_is_the_jev_value_and_extras_are_gone(fake_for):
    case = BY_NAME["laya"]
    fake = fake_for(case)
    decided = await h.decide(case.deployment(fake), h.s1_request())
    expected = fake.expected_answers(fake.last)
    by_id = {a.question_id: a for a in decided.result.answers}
    assert by_id["team"].confidence == pytest.approx(expected["team"]["confidence"])
    assert by_id["urgency"].confidence == pytest.approx(expected["urgency"]["confidence"])
    for answer in decided.result.answers:
        assert not {"answer_confidence", "action", "x_jev_confidence", "confidence"} & set(answer.extra)
    assert "routing" not in decided.result.extra


async def test_strands_latency_is_dropped(fake_for):
    case = BY_NAME["strands_decider"]
    fake = fake_for(case)
    decided = await h.decide(case.deployment(fake), h.s1_request())
    assert "latency_ms" not in decided.result.extra


async def test_typesafe_multipart_assets(fake_for):
    case = BY_NAME["typesafe"]
    fake = fake_for(case)
    req = h.openai_request(questions=[{"type": "predicate", "name": "red", "instructions": "Red?"}],
                           input=[{"role": "user", "content": [{"type": "input_image", "image_url": h.PNG_DATA_URL}]}])
    [ref] = list(req.input.images)
    dep = case.deployment(fake, params={"asset_transport": "multipart"})
    decided = await h.decide(dep, req)
    rec = fake.last
    assert rec.header("content-type").startswith("multipart/form-data; boundary=")
    assert rec.header("typesafe-danger-zone-images") == "true"
    assert fake.parts["asset-0"] == ("image/png", base64.b64decode(h.PNG_DATA_URL.split(",", 1)[1]))
    assert decided.result.answers[0].kind == "yes_no"
    assert rec.body.count(b'"part":"asset-0"') == 1 and ref.encode() in rec.body


async def test_typesafe_box_question_sets_the_gate(fake_for):
    case = BY_NAME["typesafe"]
    fake = fake_for(case)
    decided = await h.decide(case.deployment(fake), h.s1_request({"dog": {"type": "box", "instructions": "The dog"}}))
    assert fake.last.header("typesafe-danger-zone-images") == "true"
    assert set(decided.result.answers[0].box) == {"top", "bottom", "left", "right"}


@pytest.mark.parametrize("provider, count, image_url, phrase", [
    ("cloudflare", 5, h.PNG_DATA_URL, "at most 4 images"),
    ("typesafe", 1, "https://example.com/cat.png", "inline images only"),
    ("typesafe", 1, "data:image/gif;base64,R0lGODlhAQABAAAAACw=", "png, jpeg"),
])
async def test_image_limits(provider, count, image_url, phrase, fake_for):
    case = BY_NAME[provider]
    fake = fake_for(case)
    content = []
    for i in range(count):
        content += [{"type": "input_text", "text": f"picture {i}"},
                    {"type": "input_image", "image_url": image_url if count == 1 else
                     "data:image/png;base64," + base64.b64encode(h.PNG + bytes([i])).decode()}]
    req = h.openai_request(questions=[{"type": "predicate", "name": "p", "instructions": "?"}],
                           input=[{"role": "user", "content": content}])
    with pytest.raises(Unsupported) as caught:
        await h.decide(case.deployment(fake), req)
    assert phrase in caught.value.message and provider in caught.value.message
    assert fake.requests == []


# ---- deployment params the config accepts reach the provider ------------------------------------


def test_limit_overrides_from_litellm_params_model_info_and_limits():
    from providers.limits import limits_for

    base = get_provider("cloudflare").limits
    dep = Deployment("m", "cloudflare", "clef", params={"max_questions": 32, "max_levels": "5", "supports_images": False})
    limits = limits_for(base, dep)
    assert (limits.max_questions, limits.max_levels, limits.max_images) == (32, 5, 0)
    ranked = Deployment("m", "cloudflare", "clef", params={"max_questions": 32, "limits": {"max_questions": 8}},
                        model_info={"max_questions": 16})
    assert limits_for(base, ranked).max_questions == 8  # litellm_params < model_info < litellm_params.limits
    unusable = Deployment("m", "cloudflare", "clef", model_info={"max_questions": 0, "max_levels": "ten",
                                                                 "max_options": True})
    assert limits_for(base, unusable) == base  # ignored, not a 500 on every request
    assert limits_for(base, Deployment("m", "cloudflare", "clef", model_info={"max_questions": None})).max_questions \
        is None


async def test_litellm_params_question_limit_splits(fake_for):
    case = BY_NAME["typesafe"]
    fake = fake_for(case)
    dep = case.deployment(fake, params={"max_questions": 2})
    decided = await h.decide(dep, h.s1_request(h.noul_questions(3)))
    assert sorted(len(r.json["questions"]) for r in fake.requests) == [1, 2]
    assert len(decided.result.answers) == 3


async def test_perplexity_integration_header(fake_for):
    case = BY_NAME["perplexity"]
    fake = fake_for(case)
    await h.decide(case.deployment(fake, params={"integration": "acme-bot"}), h.s1_request())
    assert fake.last.header("x-pplx-integration") == "acme-bot"
    await h.decide(case.deployment(fake), h.s1_request())
    assert fake.last.header("x-pplx-integration") is None


async def test_nimble_modal_headers_sent_and_kept_out_of_errors(fake_for):
    from translators.errors import UpstreamError

    case = BY_NAME["bespoke"]
    fake = fake_for(case)
    dep = case.deployment(fake, params={"modal_key": "wk-modal-key-1", "modal_secret": "ws-modal-secret-2"})
    await h.decide(dep, h.s1_request())
    assert (fake.last.header("modal-key"), fake.last.header("modal-secret")) == ("wk-modal-key-1", "ws-modal-secret-2")
    fake.fail_next(401, "bad Modal credentials wk-modal-key-1 / ws-modal-secret-2")
    with pytest.raises(UpstreamError) as caught:
        await h.decide(dep, h.s1_request())
    assert "wk-modal-key-1" not in caught.value.message and "ws-modal-secret-2" not in caught.value.message
    assert "[redacted]" in caught.value.message


async def test_typesafe_danger_zone_from_the_deployment_lifts_the_limit(fake_for):
    case = BY_NAME["typesafe"]
    fake = fake_for(case)
    long_state = "word " * 60_000
    for danger_zone in (["long-context"], {"long_context": True}, "long-context"):
        fake.reset()
        decided = await h.decide(case.deployment(fake, params={"danger_zone": danger_zone}),
                                 h.s1_request(state=long_state))
        assert fake.last.header("typesafe-danger-zone-long-context") == "true"
        assert len(decided.result.answers) == 3
    fake.reset()
    dep = case.deployment(fake, params={"extra_headers": {"TypeSafe-Danger-Zone-Long-Context": "true"}})
    await h.decide(dep, h.s1_request(state=long_state))
    assert fake.last.header("typesafe-danger-zone-long-context") == "true"
    other = Deployment("m", "perplexity", "pplx-decider-v1-27b", api_key="k", api_base="http://p",
                       params={"danger_zone": ["long-context"]})
    assert not any(k.lower().startswith("typesafe-danger-zone")
                   for k in get_provider("perplexity").build_request(h.s1_request(), other).headers)
