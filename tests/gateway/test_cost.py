"""Response cost: usage x prices, cached tokens at the cache price, provider-reported cost wins."""

from __future__ import annotations

import pytest

from gateway.spend.cost import format_cost, price_for, response_cost
from providers.base import Deployment
from translators.ir import Usage


def dep(provider: str, model: str, **kw) -> Deployment:
    return Deployment(model_name="m", provider=provider, model=model, **kw)


def test_litellm_reference_example_for_gpt_6_luna():
    # 1000 input tokens (200 cached) and 10 output tokens: 800 x 1e-7 + 200 x 1e-8 + 10 x 0.
    usage = Usage(input_tokens=1000, output_tokens=10, cached_tokens=200)
    assert response_cost(usage, dep("openai", "gpt-6-luna")) == pytest.approx(8.2e-5, rel=1e-12)


def test_cache_writes_use_the_cache_write_price():
    usage = Usage(input_tokens=1000, output_tokens=0, cache_write_tokens=100)
    assert response_cost(usage, dep("openai", "gpt-6-luna")) == pytest.approx(900e-7 + 100 * 1.25e-7)


def test_response_model_row_is_looked_up_first():
    usage = Usage(input_tokens=1_000_000, output_tokens=5)
    assert response_cost(usage, dep("typesafe", "jev-latest"), "jev-1.14.0") == pytest.approx(0.042)
    assert response_cost(usage, dep("perplexity", "pplx-decider-v1-27b")) == pytest.approx(0.02)
    assert response_cost(usage, dep("cloudflare", "clef-flash")) == pytest.approx(0.09)


def test_config_prices_override_the_built_in_table():
    d = dep("typesafe", "jev-latest", input_cost_per_token=1e-6, output_cost_per_token=2e-6,
            params={"cache_read_input_token_cost": 1e-7})
    usage = Usage(input_tokens=100, output_tokens=10, cached_tokens=50)
    assert response_cost(usage, d) == pytest.approx(50 * 1e-6 + 50 * 1e-7 + 10 * 2e-6)
    assert price_for(d).input == 1e-6


def test_provider_reported_cost_wins():
    usage = Usage(input_tokens=70, output_tokens=0, cost=0.000003)
    assert response_cost(usage, dep("openrouter", "typesafe/jev-1.14", input_cost_per_token=1.0)) == 0.000003


def test_unknown_and_local_models_cost_nothing_and_missing_usage_counts_zero():
    assert response_cost(Usage(input_tokens=10, output_tokens=1), dep("local", "smollm2")) == 0.0
    # Never a made-up $0: an unpriced model, or an upstream that reported no tokens, has no cost.
    assert response_cost(Usage(input_tokens=10), dep("openrouter", "some/model")) is None
    assert response_cost(Usage(), dep("openai", "gpt-6-luna")) is None
    assert price_for(dep("typesafe", "jev-9.9")) is None
    assert format_cost(8.2e-05) == "8.2e-05" and format_cost(0) == "0.0"
