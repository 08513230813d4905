"""The built-in price table against the spec (litellm-reference.md 7.1 and 7.2), and per-request prices."""

from __future__ import annotations

import pytest

from gateway.config.loader import build_config
from gateway.spend.cost import BUILTIN_PRICES, Price, price_for, response_cost, worst_case_cost
from providers.base import Deployment
from translators.ir import Usage


def dep(provider: str, model: str, **kw) -> Deployment:
    return Deployment(model_name="m", provider=provider, model=model, **kw)


# litellm-reference.md 7.2: provider/model -> (input, cache read, cache write, output, per request).
SPEC_PRICES = {
    "openai/gpt-6-luna": (1e-7, 1e-8, 1.25e-7, 0.0, 0.0),
    **{f"typesafe/{m}": (4.2e-8, None, None, 0.0, 0.0)
       for m in ("jev-1.13.0", "jev-1.14.0", "jev-latest", "jev-preview")},
    **{f"perplexity/{m}": (2e-8, None, None, 0.0, 0.0)
       for m in ("pplx-decider-v1-27b", "pplx-decider-v1.1-27b", "pplx-decider-v1.2", "pplx-decider-latest")},
    **{f"perplexity/{m}": (1e-8, None, None, 0.0, 0.0)
       for m in ("pplx-decider-flash-v1.2", "pplx-decider-flash-latest")},
    "cloudflare/clef": (2.4e-7, None, None, 0.0, 0.0),
    "cloudflare/@cf/cloudflare/clef": (2.4e-7, None, None, 0.0, 0.0),
    "cloudflare/clef-flash": (9e-8, None, None, 0.0, 0.0),
    "cloudflare/@cf/cloudflare/clef-flash": (9e-8, None, None, 0.0, 0.0),  # the same model's full name
    "cloudflare/clef-omni": (1.5e-7, None, None, 0.0, 0.0),
    "strands_decider/strands-decider-2B-hobson-v19": (0.0, None, None, 0.0, 0.0),
    **{f"laya/{m}": (0.0, None, None, 0.0, 0.0) for m in ("english", "multilingual", "typed-decisions")},
    **{f"bespoke/{m}": (0.0, None, None, 0.0, 0.0)
       for m in ("nimble-latest", "nimble", "bespokelabs/Bespoke-Nimble-9B")},
    "fireworks_ai/rune": (4.2e-8, 8.4e-9, None, 0.0, 0.0),
    "azure_ai/Microsoft-Decision-1": (4.2e-8, None, None, 0.0, 0.0),
    "databricks/databricks-openjev-qwen35-4b": (4.2e-8, None, None, 0.0, 0.0),
    "parallel_ai/decision": (0.0, None, None, 0.0, 1e-3),  # $0.001 per query
}


@pytest.mark.parametrize("key", sorted(SPEC_PRICES))
def test_every_spec_model_resolves_to_the_spec_price(key):
    provider, model = key.split("/", 1)
    price = price_for(dep(provider, model))
    assert price is not None
    assert (price.input, price.cache_read, price.cache_write, price.output, price.per_request) == SPEC_PRICES[key]


def test_the_table_has_no_row_the_spec_does_not_price():
    assert set(BUILTIN_PRICES) == set(SPEC_PRICES)


def test_gpt_6_luna_above_272k_input_tokens_uses_the_long_context_prices():
    usage = Usage(input_tokens=300_000, output_tokens=10, cached_tokens=100_000, cache_write_tokens=1_000)
    assert response_cost(usage, dep("openai", "gpt-6-luna")) == pytest.approx(
        199_000 * 2e-7 + 100_000 * 2e-8 + 1_000 * 2.5e-7)
    at_threshold = Usage(input_tokens=272_000, output_tokens=0)
    assert response_cost(at_threshold, dep("openai", "gpt-6-luna")) == pytest.approx(272_000 * 1e-7)
    # a deployment's own token price replaces the built-in tier
    own = dep("openai", "gpt-6-luna", input_cost_per_token=3e-7)
    assert response_cost(usage, own) == pytest.approx(199_000 * 3e-7 + 100_000 * 1e-8 + 1_000 * 1.25e-7)


def test_cost_per_request_adds_to_the_token_cost():
    usage = Usage(input_tokens=1_000_000, output_tokens=5)
    d = dep("typesafe", "jev-latest", params={"cost_per_request": 0.002})
    assert response_cost(usage, d) == pytest.approx(0.042 + 0.002)
    priced = dep("typesafe", "jev-9.9", input_cost_per_token=1e-6, params={"cost_per_request": 1})
    assert response_cost(Usage(input_tokens=10, output_tokens=0), priced) == pytest.approx(1 + 10e-6)
    # LiteLLM's input_cost_per_query means the same; cost_per_request wins when both are set
    assert price_for(dep("typesafe", "jev-latest", params={"input_cost_per_query": 0.5})).per_request == 0.5
    both = dep("typesafe", "jev-latest", params={"input_cost_per_query": 0.5, "cost_per_request": 0.25})
    assert price_for(both).per_request == 0.25
    # only a per-request price: that is the whole price
    flat = dep("openrouter", "some/model", params={"cost_per_request": 0.01})
    assert response_cost(Usage(input_tokens=10, output_tokens=0), flat) == pytest.approx(0.01)
    assert worst_case_cost(100, [d]) == pytest.approx(200 * 4.2e-8 + 0.002)


def test_built_in_per_request_price_is_added_once_per_call_and_dropped_for_own_token_prices():
    usage = Usage(input_tokens=100, output_tokens=0)
    assert response_cost(usage, dep("parallel_ai", "decision")) == pytest.approx(1e-3)
    # 7.1: parallel_ai bills per query unless token prices are set
    assert response_cost(usage, dep("parallel_ai", "decision", input_cost_per_token=1e-6)) == pytest.approx(1e-4)
    assert Price().per_request == 0.0


def test_provider_reported_cost_still_wins_over_a_per_request_price():
    usage = Usage(input_tokens=70, output_tokens=0, cost=0.000003)
    assert response_cost(usage, dep("openrouter", "typesafe/jev-1.14", params={"cost_per_request": 1.0})) == 0.000003


@pytest.mark.parametrize("bad", [-0.01, "abc", True, float("nan"), float("inf"), [1]])
def test_a_cost_per_request_that_is_not_a_non_negative_number_leaves_the_cost_unknown(bad):
    assert response_cost(Usage(input_tokens=1, output_tokens=0),
                         dep("typesafe", "jev-latest", params={"cost_per_request": bad})) is None


def test_unpriced_models_stay_none():
    usage = Usage(input_tokens=1000, output_tokens=0)
    # OpenRouter's rows are not in the map (7.2): only its usage.cost prices it
    assert response_cost(usage, dep("openrouter", "typesafe/jev-1.13")) is None
    assert response_cost(usage, dep("openrouter", "openai/gpt-6-luna-decisions")) is None
    assert response_cost(usage, dep("perplexity", "pplx-decider-v9")) is None
    assert price_for(dep("cloudflare", "clef-max")) is None


def test_config_accepts_cost_per_request_into_deployment_params():
    config = build_config({"model_list": [{"model_name": "jev", "litellm_params": {
        "model": "typesafe/jev-latest", "api_key": "k", "cost_per_request": 0.003}}]}, {})
    (d,) = config.deployments
    assert d.params["cost_per_request"] == 0.003
    assert response_cost(Usage(input_tokens=0, output_tokens=0), d) == pytest.approx(0.003)


@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), True, "0.01"])
def test_an_unusable_per_request_price_stops_the_start(value):
    from gateway.config.errors import ConfigError
    from gateway.config.loader import build_config

    with pytest.raises(ConfigError) as caught:
        build_config({"model_list": [{"model_name": "jev", "litellm_params": {
            "model": "typesafe/jev-latest", "api_key": "k", "cost_per_request": value}}]}, {})
    assert "cost_per_request" in str(caught.value)
