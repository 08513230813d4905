"""Perplexity (``perplexity/pplx-decider-v1-27b``): a System One body on ``/v1/decisions``.

Images travel inside ``state``: an array holding the caller's state first, then OpenAI-style
``{"type": "image_url", "image_url": {"url": <data URL>}}`` parts (at most 8; no http URLs).
A deployment's ``integration`` param is sent as ``X-Pplx-Integration``.
"""

from __future__ import annotations

from typing import Any

from providers.base import Deployment, Limits
from providers.http_json import HttpJsonProvider
from translators.content import without_refs
from translators.images import data_url
from translators.ir import DecisionRequest


class PerplexityProvider(HttpJsonProvider):
    name = "perplexity"
    label = "Perplexity"
    path = "/v1/decisions"
    default_api_base = "https://api.perplexity.ai"
    api_key_envs = ("PERPLEXITYAI_API_KEY", "PERPLEXITY_API_KEY")
    api_base_envs = ("PERPLEXITY_API_BASE",)
    known_params = frozenset({"integration"})
    limits = Limits(
        max_questions=128, min_options=1, max_options=255, min_levels=1, max_levels=10,
        max_images=8, image_formats=("png", "jpeg", "webp"), max_context_tokens=262_144, box=False,
    )

    def request_headers(self, req: DecisionRequest, dep: Deployment) -> dict[str, str]:
        integration = (dep.params or {}).get("integration")
        return {"X-Pplx-Integration": str(integration)} if integration else {}

    def place_images(self, body: dict[str, Any], req: DecisionRequest, dep: Deployment) -> dict[str, Any]:
        body.pop("assets", None)
        state = without_refs(body.get("state"), set(req.input.images))
        parts = [{"type": "image_url", "image_url": {"url": data_url(image)}} for image in req.input.images.values()]
        body["state"] = [state, *parts]
        return body
