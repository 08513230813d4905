"""The router's pure parts: choosing among candidates, what an error means, LiteLLM's settings."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from gateway.config.errors import ConfigError
from gateway.config.loader import build_config
from gateway.router import policy
from gateway.router.settings import router_settings
from gateway.router.strategies import Candidate, choose, narrow
from providers.base import Deployment
from translators.errors import UpstreamError


def dep(name: str, **fields) -> Deployment:
    params = fields.pop("params", {})
    return Deployment("g", "typesafe", name, id=name, params=params, **fields)


def picks(strategy: str, candidates: list[Candidate], n: int = 2000, **kw) -> Counter:
    rng = random.Random(1)
    return Counter(choose(strategy, candidates, rng, **kw).dep.model for _ in range(n))


def test_simple_shuffle_follows_weight_then_rpm_then_tpm():
    by_weight = picks("simple-shuffle", [Candidate(dep("a", params={"weight": 9})), Candidate(dep("b", params={"weight": 1}))])
    assert 0.85 < by_weight["a"] / 2000 < 0.95
    by_rpm = picks("simple-shuffle", [Candidate(dep("a", rpm=100)), Candidate(dep("b", rpm=300))])
    assert 0.7 < by_rpm["b"] / 2000 < 0.8
    equal = picks("simple-shuffle", [Candidate(dep("a")), Candidate(dep("b"))])
    assert 0.4 < equal["a"] / 2000 < 0.6


def test_least_busy_latency_usage_and_cost():
    assert picks("least-busy", [Candidate(dep("a"), in_flight=3), Candidate(dep("b"), in_flight=1)]) == {"b": 2000}
    latency = [Candidate(dep("a"), latency_ms=100.0), Candidate(dep("b"), latency_ms=105.0),
               Candidate(dep("c"), latency_ms=300.0)]
    assert picks("latency-based-routing", latency) == {"a": 2000}
    buffered = picks("latency-based-routing", latency, lowest_latency_buffer=0.1)
    assert set(buffered) == {"a", "b"}
    unmeasured = [Candidate(dep("a"), latency_ms=1.0), Candidate(dep("b"))]
    assert picks("latency-based-routing", unmeasured) == {"b": 2000}
    usage = [Candidate(dep("a"), tpm_used=500), Candidate(dep("b"), tpm_used=50)]
    assert picks("usage-based-routing-v2", usage) == {"b": 2000}
    cost = [Candidate(dep("a"), price=2e-8), Candidate(dep("b"), price=1e-8), Candidate(dep("c"))]
    assert picks("cost-based-routing", cost) == {"b": 2000}


def test_a_capped_cooling_or_tried_deployment_is_skipped_while_another_is_free():
    capped = [Candidate(dep("a", rpm=10), rpm_used=10), Candidate(dep("b"))]
    assert picks("simple-shuffle", capped) == {"b": 2000}
    tpm_capped = [Candidate(dep("a", tpm=1000), tpm_used=1200), Candidate(dep("b"))]
    assert picks("least-busy", tpm_capped) == {"b": 2000}
    cooling = [Candidate(dep("a"), cooling=True), Candidate(dep("b"), in_flight=50)]
    assert picks("least-busy", cooling) == {"b": 2000}
    tried = [Candidate(dep("a"), tried=True), Candidate(dep("b"))]
    assert picks("simple-shuffle", tried) == {"b": 2000}
    # nothing else left: the cooling (or capped, or tried) one still gets the request
    assert [c.dep.model for c in narrow([Candidate(dep("a"), cooling=True)])] == ["a"]
    assert [c.dep.model for c in narrow([Candidate(dep("a", rpm=1), rpm_used=5, tried=True)])] == ["a"]


@pytest.mark.parametrize("status, retried, cls", [
    (400, False, "bad_request"), (401, False, "authentication"), (403, False, "authentication"),
    (404, False, "bad_request"), (422, False, "bad_request"), (408, True, "timeout"), (429, True, "rate_limit"),
    (500, True, "internal"), (502, True, "internal"), (503, True, "internal"), (504, True, "timeout"),
])
def test_which_failures_are_retried(status, retried, cls):
    err = UpstreamError(status, "x")
    assert policy.retryable(err) is retried and policy.error_class(err) == cls


def test_retry_after_in_seconds_milliseconds_or_a_date():
    assert policy.retry_after_s(UpstreamError(429, "x", headers={"Retry-After": "3"})) == 3
    assert policy.retry_after_s(UpstreamError(429, "x", headers={"retry-after-ms": "1500", "Retry-After": "9"})) == 1.5
    date = UpstreamError(429, "x", headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert policy.retry_after_s(date, now=1445412470.0) == pytest.approx(10.0)
    assert policy.retry_after_s(UpstreamError(429, "x", headers={"Retry-After": "soon"})) is None
    assert policy.retry_after_s(UpstreamError(429, "x", headers={"Retry-After": "99999"})) == policy.MAX_RETRY_AFTER_S


def test_settings_per_group_override_the_router_defaults():
    groups = {"jev": [dep("a", model_info={"hedge_after_ms": 250})], "luna": [dep("b")], "pplx": [dep("c")]}
    settings = router_settings(
        {"routing_strategy": "least-busy", "num_retries": 1, "cooldown_time": 9, "fallbacks": [{"jev": ["luna"]}],
         "default_fallbacks": ["pplx"], "context_window_fallbacks": [{"luna": ["pplx"]}],
         "retry_policy": {"RateLimitErrorRetries": 4},
         "model_group_settings": {"luna": {"routing_strategy": "latency-based-routing", "num_retries": 0,
                                           "deadline_ms": 800, "routing_strategy_args": {"ttl": 60,
                                                                                         "lowest_latency_buffer": 0.2}}}},
        {"allowed_fails": 7}, groups)
    jev, luna, pplx = settings.policy("jev"), settings.policy("luna"), settings.policy("pplx")
    assert (jev.strategy, jev.num_retries, jev.cooldown_time_s, jev.allowed_fails) == ("least-busy", 1, 9.0, 7)
    assert jev.retry_policy == {"rate_limit": 4} and jev.hedge_after_ms == 250 and jev.fallbacks == ("luna",)
    assert (luna.strategy, luna.num_retries, luna.deadline_ms, luna.latency_ttl_s, luna.lowest_latency_buffer) == (
        "latency-based-routing", 0, 800, 60, 0.2)
    assert luna.fallbacks == ("pplx",) and luna.capacity_fallbacks == ("pplx",) and pplx.fallbacks == ()
    assert settings.max_fallbacks == 5


@pytest.mark.parametrize("router, words", [
    ({"routing_strategy": "fastest"}, "router_settings.routing_strategy: 'fastest' is not one of"),
    ({"fallbacks": [{"jev": ["nope"]}]}, "'nope' is not a model_name"),
    ({"num_retries": -1}, "num_retries: must be an integer of at least 0"),
    ({"retry_policy": {"TeapotErrorRetries": 1}}, "unknown key 'TeapotErrorRetries'"),
    ({"model_group_settings": {"jev": {"hedge_after_ms": 0}}}, "hedge_after_ms: must be a positive number"),
])
def test_unusable_router_settings_stop_the_start(router, words):
    with pytest.raises(ConfigError) as caught:
        build_config({"model_list": [{"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest",
                                                                               "api_key": "k"}}],
                      "router_settings": router}, {})
    assert words in str(caught.value)
