"""The price of one decision call in USD, sent as ``x-decisions-response-cost``.

cost = (input - cached - cache_write) x input price + cached x cache-read price
       + cache_write x cache-write price + output x output price + per-request price

A provider-reported price (OpenRouter's ``usage.cost``) wins. Prices come from the deployment
(``input_cost_per_token``, ``output_cost_per_token``, ``cache_read_input_token_cost``,
``cache_creation_input_token_cost`` in ``litellm_params``) and otherwise from the small built-in
table below (LiteLLM's bundled map for decision models; decisions output is free).

A per-request price comes from ``litellm_params.cost_per_request`` (or LiteLLM's
``input_cost_per_query``; a non-negative number) or from a built-in row's ``per_request``. It is added
once per upstream call, which is how providers bill: a request the router splits into several chunks
pays it once per chunk (the router sums ``response_cost`` over the chunks).

Shown (headers, JSON answers, log lines), a cost has at most 12 significant digits (``shown_cost``):
sums of float prices carry noise in their last bits, which is dropped there, not where it is stored.

A cost is never made up: a model with no price anywhere, or an upstream that reported no token
counts, has an unknown cost (``None``), and the header is left out rather than saying $0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from providers.base import Deployment
from translators.ir import Usage


@dataclass(frozen=True)
class Price:
    input: float = 0.0  # USD per input token
    output: float = 0.0  # USD per output token
    cache_read: float | None = None  # None: cached tokens cost the input price
    cache_write: float | None = None  # None: cache writes cost the input price
    per_request: float = 0.0  # USD per upstream call, whatever its tokens
    # (threshold, price): a call with more input tokens than the threshold is priced wholly at that price
    long_context: tuple[int, Price] | None = None


_JEV = Price(input=4.2e-8)
_PPLX = Price(input=2e-8)
_PPLX_FLASH = Price(input=1e-8)
_FREE = Price()

# provider/model -> price (litellm-reference.md section 7.2).
BUILTIN_PRICES: dict[str, Price] = {
    # 7.2: above 272k input tokens: input 2e-7, cache read 2e-8, cache write 2.5e-7 (decisions output 0).
    "openai/gpt-6-luna": Price(input=1e-7, output=0.0, cache_read=1e-8, cache_write=1.25e-7,
                               long_context=(272_000, Price(input=2e-7, cache_read=2e-8, cache_write=2.5e-7))),
    **{f"typesafe/{m}": _JEV for m in ("jev-1.13.0", "jev-1.14.0", "jev-latest", "jev-preview")},
    **{f"perplexity/{m}": _PPLX for m in ("pplx-decider-v1-27b", "pplx-decider-v1.1-27b", "pplx-decider-v1.2",
                                          "pplx-decider-latest")},
    **{f"perplexity/{m}": _PPLX_FLASH for m in ("pplx-decider-flash-v1.2", "pplx-decider-flash-latest")},
    "cloudflare/clef": Price(input=2.4e-7),
    "cloudflare/@cf/cloudflare/clef": Price(input=2.4e-7),
    "cloudflare/clef-flash": Price(input=9e-8),
    "cloudflare/@cf/cloudflare/clef-flash": Price(input=9e-8),
    "cloudflare/clef-omni": Price(input=1.5e-7),
    "strands_decider/strands-decider-2B-hobson-v19": _FREE,
    **{f"laya/{m}": _FREE for m in ("english", "multilingual", "typed-decisions")},
    **{f"bespoke/{m}": _FREE for m in ("nimble-latest", "nimble", "bespokelabs/Bespoke-Nimble-9B")},
    "fireworks_ai/rune": Price(input=4.2e-8, cache_read=8.4e-9),
    "azure_ai/Microsoft-Decision-1": Price(input=4.2e-8),
    "databricks/databricks-openjev-qwen35-4b": Price(input=4.2e-8),
    # 7.1 and 7.2 "Others", section 6 parallel_ai row: $0.001 per query (no provider here yet).
    "parallel_ai/decision": Price(per_request=1e-3),
}
# Not priced, as in the spec: openrouter/* (OpenRouter reports usage.cost; 7.2 "not in map"),
# eu_jev/eu-jeff-*, nace/drex-* and baseten/* (7.2 gives no model names, or only a range).

# Providers that are free whatever the model (self-hosted or bundled).
FREE_PROVIDERS = frozenset({"local", "strands_decider", "laya", "bespoke", "nimble", "sglang", "max"})


def price_for(dep: Deployment, response_model: str | None = None) -> Price | None:
    """The deployment's configured prices over the built-in row for provider/<model>; None if unpriced
    (or if the deployment's per-request price is not a non-negative number: a cost is never made up)."""
    base = _builtin(dep.provider, response_model) or _builtin(dep.provider, dep.model)
    try:
        per_request = _per_request(dep)
    except (TypeError, ValueError):
        return None
    if base is None and dep.input_cost_per_token is None and per_request is None:
        return None
    base = base or _FREE
    overrides: dict[str, Any] = {}
    if dep.input_cost_per_token is not None:
        overrides["input"] = float(dep.input_cost_per_token)
        if per_request is None:
            per_request = 0.0  # 7.1: a per-query price applies unless token prices are set
    if dep.output_cost_per_token is not None:
        overrides["output"] = float(dep.output_cost_per_token)
    if dep.params.get("cache_read_input_token_cost") is not None:
        overrides["cache_read"] = float(dep.params["cache_read_input_token_cost"])
    if dep.params.get("cache_creation_input_token_cost") is not None:
        overrides["cache_write"] = float(dep.params["cache_creation_input_token_cost"])
    if overrides:
        overrides["long_context"] = None  # the deployment's own token prices replace the built-in tier
    if per_request is not None:
        overrides["per_request"] = per_request
    return replace(base, **overrides) if overrides else base


def response_cost(usage: Usage, dep: Deployment, response_model: str | None = None) -> float | None:
    """USD for one upstream call, or None when it is unknown (no price, or no token counts from the
    upstream). The per-request price is added once per call: a request the router splits into chunks
    pays it once per chunk, as providers bill. A provider-reported cost wins over every price."""
    if usage.cost is not None:
        return float(usage.cost)
    price = price_for(dep, response_model)
    if price is None or usage.input_tokens is None:
        return None
    if price.long_context is not None and usage.input_tokens > price.long_context[0]:
        price = replace(price.long_context[1], per_request=price.per_request)
    cached = usage.cached_tokens or 0
    written = usage.cache_write_tokens or 0
    fresh = max((usage.input_tokens or 0) - cached - written, 0)
    cache_read = price.input if price.cache_read is None else price.cache_read
    cache_write = price.input if price.cache_write is None else price.cache_write
    return (fresh * price.input + cached * cache_read + written * cache_write
            + (usage.output_tokens or 0) * price.output + price.per_request)


COST_DIGITS = 12  # significant digits of a cost as shown (headers, JSON answers, log lines)


def shown_cost(cost: float) -> float:
    """A cost as the gateway shows it: rounded to ``COST_DIGITS`` significant digits, which drops the
    last-bit noise of float arithmetic (``0.0007800000000000001`` -> ``0.00078``; 3 x $0.00026) and
    nothing a price can mean (a relative change under 5e-13). What is stored and summed is unchanged."""
    cost = float(cost)
    return float(f"{cost:.{COST_DIGITS}g}") if math.isfinite(cost) else cost


def format_cost(cost: float) -> str:
    """Header text: the shown cost's shortest repr, e.g. ``8.2e-05``, ``0.00078`` or ``0.0``."""
    return repr(shown_cost(cost))


def _per_request(dep: Deployment) -> float | None:
    """``cost_per_request`` (else ``input_cost_per_query``) from litellm_params; None when neither is
    set; TypeError or ValueError when it is not a non-negative finite number."""
    for key in ("cost_per_request", "input_cost_per_query"):
        value = dep.params.get(key)
        if value is None:
            continue
        number = float("nan") if isinstance(value, bool) else float(value)
        if not (math.isfinite(number) and number >= 0):
            raise ValueError(f"litellm_params.{key} must be a non-negative number, got {value!r}")
        return number
    return None


def _builtin(provider: str, model: str | None) -> Price | None:
    if not model:
        return None
    if provider in FREE_PROVIDERS:
        return _FREE
    return BUILTIN_PRICES.get(f"{provider}/{model}")


# A pass-through's tokens are estimated from its body's size (gateway/passthrough/admit.py); its worst
# case counts twice that, so a budget reservation is rarely smaller than the true cost.
WORST_CASE_TOKEN_FACTOR = 2


def cost_bound(tokens: int, dep: Deployment) -> float | None:
    """What a call of ``tokens`` input tokens may cost on ``dep`` at most (None when it is unpriced:
    its cost cannot be bounded)."""
    price = price_for(dep)
    if price is None:
        return None
    if price.long_context is not None and tokens > price.long_context[0]:
        price = replace(price.long_context[1], per_request=price.per_request)
    per_token = max(price.input, price.cache_write if price.cache_write is not None else 0.0)
    return tokens * per_token + price.output + price.per_request


def worst_case_cost(estimated_tokens: int, deployments) -> float | None:
    """What a request of about ``estimated_tokens`` input tokens may cost on the dearest of
    ``deployments``, at ``WORST_CASE_TOKEN_FACTOR`` times the estimate (None when one of them is
    unpriced)."""
    worst = 0.0
    for dep in deployments:
        bound = cost_bound(estimated_tokens * WORST_CASE_TOKEN_FACTOR, dep)
        if bound is None:
            return None
        worst = max(worst, bound)
    return worst
