"""TypeSafe Jev (``typesafe/jev-latest``): System One at ``https://api.typesafe.ai/v1/systemone``.

Images (``assets``) and ``box`` questions need ``TypeSafe-Danger-Zone-Images: true``, which is sent
whenever the request has either. Client ``TypeSafe-Danger-Zone-*`` headers are forwarded here only.
A deployment may always send some of them with ``danger_zone: [long-context]`` (or a mapping
``{long-context: true}``) or its ``extra_headers``; ``long-context`` lifts the token limit.
Assets go as base64 JSON by default, or as multipart parts (typesafe-sdk's form) when the
deployment sets ``asset_transport: multipart``.
"""

from __future__ import annotations

from dataclasses import replace

from providers import multipart
from providers.base import Deployment, Limits, UpstreamRequest
from providers.http_json import DANGER_ZONE_PREFIX, HttpJsonProvider
from translators.ir import DecisionRequest

IMAGES_HEADER = "TypeSafe-Danger-Zone-Images"
LONG_CONTEXT_HEADER = "typesafe-danger-zone-long-context"
LONG_CONTEXT_TOKENS = 262_144


def danger_zone_headers(req: DecisionRequest) -> dict[str, str]:
    return {k: v for k, v in (req.headers or {}).items() if k.lower().startswith(DANGER_ZONE_PREFIX)}


def configured_danger_zone(dep: Deployment | None) -> dict[str, str]:
    """The deployment's ``danger_zone`` param as headers: ``[long-context]`` or ``{long-context: true}``."""
    raw = (dep.params or {}).get("danger_zone") if dep is not None else None
    if isinstance(raw, str):
        raw = [raw]
    if isinstance(raw, (list, tuple)):
        raw = {name: True for name in raw}
    if not isinstance(raw, dict):
        return {}
    out = {}
    for name, value in raw.items():
        if value is None or value is False:
            continue
        words = str(name).lower().removeprefix(DANGER_ZONE_PREFIX).replace("_", "-").split("-")
        header = "TypeSafe-Danger-Zone-" + "-".join(w.capitalize() for w in words if w)
        out[header] = "true" if value is True else str(value).lower()
    return out


class TypeSafeProvider(HttpJsonProvider):
    name = "typesafe"
    label = "TypeSafe"
    default_api_base = "https://api.typesafe.ai"
    api_key_envs = ("TYPESAFE_API_KEY",)
    api_base_envs = ("TYPESAFE_API_BASE", "TYPESAFE_BASE_URL")
    takes_danger_zone_headers = True
    known_params = frozenset({"danger_zone", "asset_transport"})
    limits = Limits(
        max_questions=None, min_options=1, max_options=None, min_levels=1, max_levels=None,
        max_images=None, image_formats=("png", "jpeg"), max_context_tokens=65_536, box=True,
    )

    def request_limits(self, limits: Limits, req: DecisionRequest, dep: Deployment) -> Limits:
        """The long-context header (the caller's or the deployment's) lifts the request token limit."""
        sent = {**self.configured_headers(dep), **configured_danger_zone(dep), **danger_zone_headers(req)}
        asked = {k.lower(): v for k, v in sent.items()}
        if str(asked.get(LONG_CONTEXT_HEADER, "")).lower() == "true" and limits.max_context_tokens:
            return replace(limits, max_context_tokens=max(limits.max_context_tokens, LONG_CONTEXT_TOKENS))
        return limits

    def request_headers(self, req: DecisionRequest, dep: Deployment) -> dict[str, str]:
        headers = {**configured_danger_zone(dep), **danger_zone_headers(req)}
        needs_gate = bool(req.input.images) or any(q.kind == "box" for q in req.questions)
        if needs_gate and not any(k.lower() == IMAGES_HEADER.lower() for k in headers):
            headers[IMAGES_HEADER] = "true"
        return headers


    def build_request(self, req: DecisionRequest, dep: Deployment) -> UpstreamRequest:
        request = super().build_request(req, dep)
        if not req.input.images or (dep.params or {}).get("asset_transport") != "multipart":
            return request
        body = dict(request.json)
        parts: dict[str, tuple[str, bytes]] = {}
        assets: dict[str, dict[str, str]] = {}
        for i, (ref, image) in enumerate(req.input.images.items()):
            part = f"asset-{i}"
            parts[part] = (image.media_type, image.data or b"")
            assets[ref] = {"type": "image", "part": part}
        body["assets"] = assets
        content, content_type = multipart.encode(body, parts)
        headers = {**request.headers, "Content-Type": content_type}
        return replace(request, headers=headers, json=None, content=content)
