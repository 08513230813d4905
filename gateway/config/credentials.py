"""Deployments without the API key their provider needs: refused at load, or left unconfigured.

A provider that needs a key (``api_key_required`` on its class: OpenAI, TypeSafe, Perplexity,
OpenRouter, Cloudflare) and a deployment that has none (no ``api_key``, none from the provider's
environment variables, or an ``os.environ/NAME`` reference to a variable that is not set) would
answer every request with the provider's 401, which reads as if the caller's own key were wrong.
So the config refuses it at start, naming the entry and the setting; with
``general_settings.allow_missing_keys: true`` the gateway starts anyway and the config lists the
deployment in ``unconfigured`` (id -> that problem): readiness reports it, the router
(``ModelRegistry.configured``) picks only the group's other deployments, and a request that can only go
to unconfigured ones gets a 503 naming the deployment and the setting (``not_configured``). Neither
message ever holds a key: there is none. Ad-hoc deployments (the Python API) are not checked here:
they keep LiteLLM's 401 from the provider, as ``litellm.decisions`` answers.
"""

from __future__ import annotations

from providers.base import Deployment
from providers.registry import get_provider
from translators.errors import UpstreamError

SETTING = "allow_missing_keys"  # general_settings.allow_missing_keys: start without the keys


def needs_key(provider: str) -> bool:
    """Whether deployments of ``provider`` cannot be called without an API key."""
    try:
        return bool(getattr(get_provider(provider), "api_key_required", False))
    except (ImportError, LookupError, ValueError):  # an unknown or uninstalled provider is refused elsewhere
        return False


def key_setting(dep: Deployment) -> str:
    """Where the deployment's key is set: ``litellm_params.api_key`` or the provider's variables."""
    envs = getattr(get_provider(dep.provider), "api_key_envs", ())
    return "litellm_params.api_key" + (f" (or {' or '.join(envs)})" if envs else "")


def missing_key(dep: Deployment) -> str | None:
    """The setting a deployment lacks (``litellm_params.api_key (or TYPESAFE_API_KEY)``), or None."""
    if dep.api_key or not needs_key(dep.provider):
        return None
    return key_setting(dep)


def label(dep: Deployment) -> str:
    return f"'{dep.provider}/{dep.model}' of model group '{dep.model_name}'"


def not_configured(dep: Deployment, problem: str) -> UpstreamError:
    """The 503 of a request that only an unconfigured deployment could take (never the provider's 401).
    ``problem``: the config's own sentence (the entry, the setting, the variable not set)."""
    return UpstreamError(
        503, f"Deployment {label(dep)} is not configured: {problem}. The gateway started without it "
             f"(general_settings.{SETTING}: true); set it and reload the config. This is not about the key "
             "this request was sent with.",
        provider=dep.provider, type="service_unavailable", code="deployment_not_configured", retryable=False)
