"""OpenRouter alpha Decisions: System One at ``https://openrouter.ai/api/alpha/decisions``.

``-latest`` aliases need OpenRouter's tilde (``typesafe/jev-latest`` -> ``~typesafe/jev-latest``).
Images go as base64 ``assets``; the call's price is the response's ``usage.cost``. A deployment's
``provider`` routing preferences and attribution (``http_referer``, ``app_title``) are passed on.
"""

from __future__ import annotations

from typing import Any

from providers.base import Deployment, Limits
from providers.http_json import HttpJsonProvider
from translators.ir import DecisionRequest


class OpenRouterProvider(HttpJsonProvider):
    name = "openrouter"
    label = "OpenRouter"
    path = "/alpha/decisions"
    default_api_base = "https://openrouter.ai/api"
    api_key_envs = ("OPENROUTER_API_KEY",)
    api_base_envs = ("OPENROUTER_API_BASE",)
    known_params = frozenset({"provider", "http_referer", "app_title"})
    limits = Limits(
        max_questions=None, min_options=1, max_options=255, min_levels=1, max_levels=None,
        max_images=None, image_formats=("png", "jpeg"), max_context_tokens=None, box=False,
    )

    def upstream_model(self, dep: Deployment) -> str:
        model = dep.model
        if model.endswith("-latest") and "/" in model and not model.startswith("~"):
            return "~" + model
        return model

    def request_headers(self, req: DecisionRequest, dep: Deployment) -> dict[str, str]:
        params = dep.params or {}
        headers = {}
        if params.get("http_referer"):
            headers["HTTP-Referer"] = str(params["http_referer"])
        if params.get("app_title"):
            headers["X-Title"] = str(params["app_title"])
        return headers

    def body(self, req: DecisionRequest, dep: Deployment) -> dict[str, Any]:
        body = super().body(req, dep)
        routing = (dep.params or {}).get("provider")
        if isinstance(routing, dict):
            body["provider"] = routing
        return body

