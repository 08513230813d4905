"""OpenAI Decisions (``openai/gpt-6-luna``): ``POST {base}/v1/decisions`` with the OpenAI body.

``api_base`` may be given with or without ``/v1`` (``https://api.openai.com`` or
``https://api.openai.com/v1``); it is never doubled. Images go as ``input_image`` parts, data
URLs or public URLs. Errors arrive in OpenAI's ``{"error": {...}}`` envelope.
"""

from __future__ import annotations

from typing import ClassVar

from providers.base import Deployment, Limits
from providers.http_json import HttpJsonProvider
from translators import openai as openai_wire
from translators.ir import DecisionRequest
from translators.wire import WireModule


class OpenAIProvider(HttpJsonProvider):
    """An HTTP JSON upstream on the OpenAI wire: the body carries the images itself."""

    name = "openai"
    label = "OpenAI"
    path = "/v1/decisions"
    wire: ClassVar[WireModule] = openai_wire
    default_api_base = "https://api.openai.com"
    api_key_envs = ("OPENAI_API_KEY",)
    api_base_envs = ("OPENAI_BASE_URL", "OPENAI_API_BASE")
    inline_images_only = False
    known_params = frozenset({"organization", "project"})
    limits = Limits(
        max_questions=400, min_options=2, max_options=255, min_levels=2, max_levels=10,
        max_images=None, image_formats=("png", "jpeg", "webp", "gif"), max_context_tokens=1_050_000, box=False,
    )

    def request_headers(self, req: DecisionRequest, dep: Deployment) -> dict[str, str]:
        headers = {}
        params = dep.params or {}
        if params.get("organization"):
            headers["OpenAI-Organization"] = str(params["organization"])
        if params.get("project"):
            headers["OpenAI-Project"] = str(params["project"])
        return headers


__all__ = ["OpenAIProvider"]
