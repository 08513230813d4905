"""OpenAI Decisions (``openai/gpt-6-luna``): ``POST {base}/v1/decisions`` with the OpenAI body.

``api_base`` may be given with or without ``/v1`` (``https://api.openai.com`` or
``https://api.openai.com/v1``); it is never doubled. Images go as ``input_image`` parts, data
URLs or public URLs. Errors arrive in OpenAI's ``{"error": {...}}`` envelope.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from providers.base import Deployment, Limits, UpstreamResponse
from providers.systemone_base import SystemOneProvider
from providers.upstream_errors import decode_body, unusable_body
from translators.errors import UpstreamError
from translators.ir import DecisionRequest, DecisionResult


class OpenAIProvider(SystemOneProvider):
    """Shares configuration, auth and error mapping with the System One base; the body is OpenAI's."""

    name = "openai"
    label = "OpenAI"
    path = "/v1/decisions"
    default_api_base = "https://api.openai.com"
    api_key_envs = ("OPENAI_API_KEY",)
    api_base_envs = ("OPENAI_BASE_URL", "OPENAI_API_BASE")
    inline_images_only = False
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

    def body(self, req: DecisionRequest, dep: Deployment) -> dict:
        from translators import openai as openai_wire

        body = openai_wire.render_request(req, self.upstream_model(dep))
        body["model"] = self.upstream_model(dep)
        return body

    def parse_response(self, resp: UpstreamResponse, req: DecisionRequest, dep: Deployment) -> DecisionResult:
        if not 200 <= resp.status < 300:
            raise self.error(resp, dep)
        payload = decode_body(resp.body)
        if not isinstance(payload, dict):
            raise unusable_body(self.name, "the body is not a JSON object", label=self.label)
        if not isinstance(payload.get("answers"), list):
            raise unusable_body(self.name, "no 'answers' list in the body", label=self.label)
        from translators import openai as openai_wire

        try:
            result = openai_wire.parse_response(payload, req)
        except UpstreamError as err:
            raise UpstreamError(err.status, f"{self.label}: {err.message}", provider=self.name,
                                type=err.type, code=err.code, headers=err.headers) from None
        return self.adjust(result, payload)

    def adjust(self, result: DecisionResult, payload: dict) -> DecisionResult:
        usage = payload.get("usage")
        if not isinstance(usage, dict):
            return result
        details = usage.get("input_tokens_details") or {}
        out_details = usage.get("output_tokens_details") or {}
        changes: dict[str, Any] = {}
        for field, value in (("cached_tokens", details.get("cached_tokens")),
                             ("cache_write_tokens", details.get("cache_write_tokens")),
                             ("reasoning_tokens", out_details.get("reasoning_tokens"))):
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
                    and getattr(result.usage, field) != value:
                changes[field] = value
        return replace(result, usage=replace(result.usage, **changes)) if changes else result


__all__ = ["OpenAIProvider"]
