"""Provider names -> provider classes, model-name splitting, and credential resolution.

Providers are imported lazily (by dotted path), so the registry works before every provider
module exists and ``import providers.registry`` stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import replace
from functools import cache
from typing import Any

from providers.base import Deployment, Provider
from translators.errors import RequestInvalid

# name -> "module:Class"; the order is the order error messages list them in.
PROVIDER_PATHS: dict[str, str] = {
    "openai": "providers.openai:OpenAIProvider",
    "typesafe": "providers.typesafe:TypeSafeProvider",
    "perplexity": "providers.perplexity:PerplexityProvider",
    "openrouter": "providers.openrouter:OpenRouterProvider",
    "cloudflare": "providers.cloudflare:CloudflareProvider",
    "strands_decider": "providers.strands:StrandsDeciderProvider",
    "laya": "providers.selfhosted:LayaProvider",
    "bespoke": "providers.selfhosted:BespokeProvider",
    "systemone": "providers.generic:GenericSystemOneProvider",
    "sglang": "providers.sglang:SGLangProvider",
    "local": "providers.local:LocalProvider",
}


class _LazyProviders(Mapping[str, "type[Provider]"]):
    """``PROVIDERS[name]`` imports the provider class on first use."""

    def __getitem__(self, name: str) -> type[Provider]:
        if name not in PROVIDER_PATHS:
            raise KeyError(name)
        return _load_class(name)

    def __iter__(self) -> Iterator[str]:
        return iter(PROVIDER_PATHS)

    def __len__(self) -> int:
        return len(PROVIDER_PATHS)

    def __contains__(self, name: object) -> bool:
        return name in PROVIDER_PATHS


PROVIDERS: Mapping[str, type[Provider]] = _LazyProviders()


@cache
def _load_class(name: str) -> type[Provider]:
    module_name, _, class_name = PROVIDER_PATHS[name].partition(":")
    cls: type[Provider] = getattr(importlib.import_module(module_name), class_name)
    return cls


def known_providers() -> str:
    return ", ".join(PROVIDER_PATHS)


@cache
def get_provider(name: str) -> Provider:
    """The provider instance for a name (one shared, stateless instance per name)."""
    if name not in PROVIDER_PATHS:
        raise RequestInvalid(
            f"Unknown provider '{name}': the known providers are {known_providers()}.", loc=("model",)
        )
    return _load_class(name)()


def split_model(model: str) -> tuple[str, str]:
    """``"typesafe/jev-latest"`` -> ``("typesafe", "jev-latest")``; the rest may hold more slashes."""
    provider, sep, rest = (model or "").partition("/")
    if not sep or not rest:
        raise RequestInvalid(
            f"Model '{model}' has no provider prefix: write it as provider/model, where provider is one of "
            f"{known_providers()}.",
            loc=("model",),
        )
    if provider not in PROVIDER_PATHS:
        raise RequestInvalid(
            f"Model '{model}' names an unknown provider '{provider}': the known providers are {known_providers()}.",
            loc=("model",),
        )
    return provider, rest


def adhoc_deployment(model: str, **overrides: Any) -> Deployment:
    """A deployment for an ad-hoc ``provider/model`` (the Python API, or an unconfigured name)."""
    provider, upstream_model = split_model(model)
    return Deployment(model_name=model, provider=provider, model=upstream_model, **overrides)


def resolve(dep: Deployment, environ: Mapping[str, str]) -> Deployment:
    """Fill ``api_key`` / ``api_base`` from the provider's environment variables and default base.

    Explicit values win; empty environment values are ignored. Each provider says how
    (``resolve_credentials``), e.g. a self-hosted server's key is used only with its own base.
    """
    try:
        provider = get_provider(dep.provider)
    except ImportError:  # a provider module not installed yet (sglang/local come from the backend)
        return dep
    api_key, api_base = provider.resolve_credentials(dep, environ)
    if api_key == dep.api_key and api_base == dep.api_base:
        return dep
    return replace(dep, api_key=api_key, api_base=api_base)
