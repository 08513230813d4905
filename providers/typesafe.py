"""TypeSafe Jev (``typesafe/jev-latest``): System One at ``https://api.typesafe.ai/v1/systemone``.

Images (``assets``) and ``box`` questions need ``TypeSafe-Danger-Zone-Images: true``, which is sent
whenever the request has either. Client ``TypeSafe-Danger-Zone-*`` headers are forwarded here only.
Assets go as base64 JSON by default, or as multipart parts (typesafe-sdk's form) when the
deployment sets ``asset_transport: multipart``.
"""

from __future__ import annotations

from dataclasses import replace

from providers import images as image_shapes
from providers import multipart
from providers.base import Deployment, Limits, UpstreamRequest
from providers.systemone_base import SystemOneProvider
from translators.ir import DecisionRequest

DANGER_ZONE_PREFIX = "typesafe-danger-zone-"
IMAGES_HEADER = "TypeSafe-Danger-Zone-Images"
LONG_CONTEXT_HEADER = "typesafe-danger-zone-long-context"
LONG_CONTEXT_TOKENS = 262_144


def danger_zone_headers(req: DecisionRequest) -> dict[str, str]:
    return {k: v for k, v in (req.headers or {}).items() if k.lower().startswith(DANGER_ZONE_PREFIX)}


class TypeSafeProvider(SystemOneProvider):
    name = "typesafe"
    label = "TypeSafe"
    default_api_base = "https://api.typesafe.ai"
    api_key_envs = ("TYPESAFE_API_KEY",)
    api_base_envs = ("TYPESAFE_API_BASE", "TYPESAFE_BASE_URL")
    limits = Limits(
        max_questions=None, min_options=1, max_options=None, min_levels=1, max_levels=None,
        max_images=None, image_formats=("png", "jpeg"), max_context_tokens=65_536, box=True,
    )

    def request_limits(self, limits: Limits, req: DecisionRequest) -> Limits:
        """The long-context header lifts the request token limit."""
        asked = {k.lower(): v for k, v in danger_zone_headers(req).items()}
        if str(asked.get(LONG_CONTEXT_HEADER, "")).lower() == "true" and limits.max_context_tokens:
            return replace(limits, max_context_tokens=max(limits.max_context_tokens, LONG_CONTEXT_TOKENS))
        return limits

    def request_headers(self, req: DecisionRequest, dep: Deployment) -> dict[str, str]:
        headers = danger_zone_headers(req)
        needs_gate = bool(req.input.images) or any(q.kind == "box" for q in req.questions)
        if needs_gate and not any(k.lower() == IMAGES_HEADER.lower() for k in headers):
            headers[IMAGES_HEADER] = "true"
        return headers

    def place_images(self, body: dict, req: DecisionRequest, dep: Deployment) -> dict:
        body["assets"] = image_shapes.base64_assets(req)
        return body

    def build_request(self, req: DecisionRequest, dep: Deployment) -> UpstreamRequest:
        request = super().build_request(req, dep)
        if not req.input.images or (dep.params or {}).get("asset_transport") != "multipart":
            return request
        body = dict(request.json)
        parts: dict[str, tuple[str, bytes]] = {}
        assets: dict[str, dict] = {}
        for i, (ref, image) in enumerate(req.input.images.items()):
            part = f"asset-{i}"
            parts[part] = (image.media_type, image.data or b"")
            assets[ref] = {"type": "image", "part": part}
        body["assets"] = assets
        content, content_type = multipart.encode(body, parts)
        headers = {**request.headers, "Content-Type": content_type}
        return replace(request, headers=headers, json=None, content=content)
