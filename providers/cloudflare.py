"""Cloudflare Workers AI Clef (``cloudflare/clef``, ``cloudflare/clef-flash``).

``POST https://api.cloudflare.com/client/v4/accounts/{account}/ai/run/@cf/cloudflare/{model}``.
The account comes from the deployment's ``account_id`` or ``CLOUDFLARE_ACCOUNT_ID``; an
``api_base`` ending in ``/ai/run`` or ``/ai/v1`` is also accepted. The body's ``model`` is the last
path segment (``clef``); images go as top-level ``images`` data URLs (at most 4). Answers come
inside ``{"result": ..., "success": true}``; errors as ``{"success": false, "errors": [{code, message}]}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.base import Deployment, Limits, UpstreamResponse, first_env
from providers.http_json import HttpJsonProvider
from providers.upstream_errors import decode_body, upstream_error
from translators.content import without_refs
from translators.errors import DecisionError, UpstreamError
from translators.images import data_url
from translators.ir import DecisionRequest, DecisionResult

DEFAULT_BASE = "https://api.cloudflare.com/client/v4/accounts/{account}/ai/run"
MODEL_PREFIX = "@cf/cloudflare/"

# Cloudflare error code -> (caller status, retryable); the HTTP status decides when a code is unknown.
ERROR_CODES: dict[int, tuple[int, bool]] = {
    10000: (401, False),  # bad token
    5006: (400, False),  # no questions / unknown type
    7000: (400, False),  # bad model path
    6003: (400, False),  # body is not JSON
    5021: (413, False),  # body too large
    3040: (429, True),  # out of capacity: retry later
    4006: (429, False),  # daily free allocation used up: retrying today does not help
}


def expand_model(model: str) -> str:
    return model if model.startswith("@cf/") else MODEL_PREFIX + model


class CloudflareProvider(HttpJsonProvider):
    name = "cloudflare"
    label = "Cloudflare Workers AI"
    default_api_base = None
    api_key_envs = ("CLOUDFLARE_API_KEY", "CLOUDFLARE_API_TOKEN")
    api_base_envs = ("CLOUDFLARE_API_BASE",)
    known_params = frozenset({"account_id"})
    limits = Limits(
        max_questions=64, min_options=2, max_options=255, min_levels=2, max_levels=10,
        max_images=4, image_formats=("png", "jpeg", "webp"), max_context_tokens=65_536, box=False,
    )

    def resolve_credentials(self, dep: Deployment, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
        api_key, api_base = super().resolve_credentials(dep, environ)
        if not api_base:
            account = (dep.params or {}).get("account_id") or first_env(environ, ("CLOUDFLARE_ACCOUNT_ID",))
            if account:
                api_base = DEFAULT_BASE.format(account=account)
        return api_key, api_base

    def require_base(self, dep: Deployment) -> str:
        if dep.api_base:
            return dep.api_base
        account = (dep.params or {}).get("account_id")
        if account:
            return DEFAULT_BASE.format(account=account)
        raise DecisionError(
            status=400, loc=("model",), type="invalid_request_error", code="missing_api_base",
            message="Cloudflare needs an account: set CLOUDFLARE_ACCOUNT_ID (or the deployment's account_id) "
                    "or CLOUDFLARE_API_BASE.",
        )

    def url(self, dep: Deployment) -> str:
        base = self.require_base(dep).rstrip("/")
        model = expand_model(dep.model)
        if base.endswith("/ai/v1"):
            return base[: -len("/v1")] + "/run/" + model
        if base.endswith("/ai/run"):
            return f"{base}/{model}"
        return f"{base}/ai/run/{model}"

    def upstream_model(self, dep: Deployment) -> str:
        return expand_model(dep.model).rsplit("/", 1)[-1]

    def place_images(self, body: dict[str, Any], req: DecisionRequest, dep: Deployment) -> dict[str, Any]:
        body.pop("assets", None)
        body["state"] = without_refs(body.get("state"), set(req.input.images))
        body["images"] = [data_url(image) for image in req.input.images.values()]
        return body

    def unwrap(self, payload: Any) -> Any:
        if isinstance(payload, dict) and "answers" not in payload and isinstance(payload.get("result"), dict):
            return payload["result"]
        return payload

    def error(self, resp: UpstreamResponse, dep: Deployment) -> UpstreamError:
        payload = decode_body(resp.body)
        code = _first_code(payload)
        status, retryable = None, None
        if code in ERROR_CODES:
            status, retryable = ERROR_CODES[code]
        elif code == 5012 and resp.status == 529:  # "Clef inference failed": unavailable for now
            status = 503
        return upstream_error(self.name, resp, label=self.label, secrets=self.secrets(dep), payload=payload,
                              status=status, code=str(code) if code is not None else None, retryable=retryable)

    def parse_response(self, resp: UpstreamResponse, req: DecisionRequest, dep: Deployment) -> DecisionResult:
        if 200 <= resp.status < 300:
            payload = decode_body(resp.body)
            if isinstance(payload, dict) and payload.get("success") is False:
                raise self.error(UpstreamResponse(502, resp.headers, resp.body), dep)
        return super().parse_response(resp, req, dep)


def _first_code(payload: Any) -> int | None:
    if isinstance(payload, dict) and isinstance(payload.get("errors"), list):
        for item in payload["errors"]:
            code = item.get("code") if isinstance(item, dict) else None
            if isinstance(code, int):
                return code
    return None
