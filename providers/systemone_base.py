"""The shared base of every System One upstream: path, auth, envelope and error mapping are hooks.

A subclass sets a few class attributes (``name``, ``path``, ``default_api_base``, the key and
base environment variables, ``limits``) and overrides a hook only where its upstream differs:

* ``url(dep)`` – base (trailing ``/`` and one ``/v1`` removed) + ``path``;
* ``auth_headers(dep)`` – ``Authorization: Bearer <key>`` when there is a key;
* ``request_headers(req, dep)`` – extra headers (TypeSafe's Danger-Zone ones);
* ``body(req, dep)`` / ``place_images(body, req, dep)`` – the System One body and its images;
* ``unwrap(payload)`` – the response envelope (Cloudflare's ``{"result": ...}``);
* ``clean(payload, req)`` – quirks (Laya's extras, Strands' ``latency_ms``) before parsing;
* ``adjust(result, payload)`` – what the translator does not read (OpenRouter's ``usage.cost``);
* ``error(resp, dep)`` – the upstream's error envelope and codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

from providers.base import Deployment, Limits, UpstreamRequest, UpstreamResponse
from providers.upstream_errors import decode_body, unusable_body, upstream_error
from translators.errors import DecisionError, UpstreamError
from translators.ir import DecisionRequest, DecisionResult

# Caller headers a provider never forwards (it sets them itself).
RESERVED_HEADERS = frozenset({"authorization", "content-type", "content-length", "host"})
# TypeSafe's gates: meaningful to TypeSafe only, so never sent to another upstream.
DANGER_ZONE_PREFIX = "typesafe-danger-zone-"


def first_env(environ: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = (environ.get(name) or "").strip()
        if value:
            return value
    return None


def join_url(base: str, path: str) -> str:
    """LiteLLM's rule: strip trailing ``/`` and one trailing ``/v1`` from the base, then add the path."""
    base = base.rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return base + path


class SystemOneProvider:
    name: ClassVar[str] = "systemone"
    label: ClassVar[str] = "System One"  # how messages name the upstream
    path: ClassVar[str] = "/v1/systemone"
    default_api_base: ClassVar[str | None] = None
    api_key_envs: ClassVar[tuple[str, ...]] = ()
    api_base_envs: ClassVar[tuple[str, ...]] = ()
    api_key_required: ClassVar[bool] = True
    inline_images_only: ClassVar[bool] = True  # public image URLs are refused (no downloads here)
    takes_danger_zone_headers: ClassVar[bool] = False  # TypeSafe-Danger-Zone-* headers (TypeSafe only)
    limits: Limits = Limits()

    def request_limits(self, limits: Limits, req: DecisionRequest, dep: Deployment | None = None) -> Limits:
        """Limits for this request (a header may lift one); the deployment's limits by default."""
        return limits

    # ---- configuration ---------------------------------------------------------------------

    def resolve_credentials(self, dep: Deployment, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
        api_key = dep.api_key or first_env(environ, self.api_key_envs)
        api_base = dep.api_base or first_env(environ, self.api_base_envs) or self.default_api_base
        return api_key, api_base

    def require_base(self, dep: Deployment) -> str:
        if not dep.api_base:
            names = " or ".join(self.api_base_envs) or "api_base"
            raise DecisionError(
                status=400,
                message=f"{self.label} needs a server address: set {names} or the deployment's api_base.",
                loc=("model",), type="invalid_request_error", code="missing_api_base",
            )
        return dep.api_base

    def require_key(self, dep: Deployment) -> str | None:
        if self.api_key_required and not dep.api_key:
            names = " or ".join(self.api_key_envs) or "api_key"
            raise DecisionError(
                status=401,
                message=f"Missing API key for decisions provider '{self.name}': set {names} or the deployment's api_key.",
                type="authentication_error", code="missing_api_key",
            )
        return dep.api_key

    def upstream_model(self, dep: Deployment) -> str:
        return dep.model

    # ---- request ---------------------------------------------------------------------------

    def url(self, dep: Deployment) -> str:
        return join_url(self.require_base(dep), self.path)

    def auth_headers(self, dep: Deployment) -> dict[str, str]:
        key = self.require_key(dep)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def request_headers(self, req: DecisionRequest, dep: Deployment) -> dict[str, str]:
        return {}

    def configured_headers(self, dep: Deployment) -> dict[str, str]:
        """Headers from the deployment (``extra_headers`` / ``headers``), minus the reserved ones
        (and TypeSafe's Danger-Zone gates, for any other upstream)."""
        out: dict[str, str] = {}
        for key in ("headers", "extra_headers"):
            configured = (dep.params or {}).get(key)
            if not isinstance(configured, Mapping):
                continue
            for name, value in configured.items():
                lower = str(name).lower()
                if lower in RESERVED_HEADERS or value is None or (
                        lower.startswith(DANGER_ZONE_PREFIX) and not self.takes_danger_zone_headers):
                    continue
                out[str(name)] = str(value)
        return out

    def body(self, req: DecisionRequest, dep: Deployment) -> dict:
        from translators import systemone

        body = systemone.render_request(req, self.upstream_model(dep))
        body.pop("assets", None)
        body.pop("images", None)
        body["model"] = self.upstream_model(dep)
        if req.input.images:
            body = self.place_images(body, req, dep)
        return body

    def place_images(self, body: dict, req: DecisionRequest, dep: Deployment) -> dict:
        """Put the request's images into the body. The default upstream takes none."""
        return body

    def build_request(self, req: DecisionRequest, dep: Deployment) -> UpstreamRequest:
        headers = {**self.configured_headers(dep), **self.request_headers(req, dep)}
        headers.update(self.auth_headers(dep))
        headers["Content-Type"] = "application/json"
        headers.setdefault("Accept", "application/json")
        return UpstreamRequest(method="POST", url=self.url(dep), headers=headers,
                               json=self.body(req, dep), timeout=dep.timeout)

    # ---- response --------------------------------------------------------------------------

    def secrets(self, dep: Deployment) -> tuple[str | None, ...]:
        """What must never appear in an error message: the key (and any other credential sent)."""
        return (dep.api_key,)

    def error(self, resp: UpstreamResponse, dep: Deployment) -> UpstreamError:
        return upstream_error(self.name, resp, label=self.label, secrets=self.secrets(dep))

    def unwrap(self, payload: Any) -> Any:
        return payload

    def clean(self, payload: dict, req: DecisionRequest) -> dict:
        return payload

    def adjust(self, result: DecisionResult, payload: dict) -> DecisionResult:
        """Read the usage details the System One translator may not know (cached tokens, cost)."""
        usage = payload.get("usage")
        if not isinstance(usage, dict):
            return result
        details = usage.get("input_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else usage.get("cached_tokens")
        cost = usage.get("cost")
        changes: dict = {}
        if _is_int(cached) and cached != result.usage.cached_tokens:
            changes["cached_tokens"] = cached
        if _is_number(cost) and result.usage.cost is None:
            changes["cost"] = float(cost)
        return replace(result, usage=replace(result.usage, **changes)) if changes else result

    def parse_response(self, resp: UpstreamResponse, req: DecisionRequest, dep: Deployment) -> DecisionResult:
        if not 200 <= resp.status < 300:
            raise self.error(resp, dep)
        payload = decode_body(resp.body)
        if payload is None:
            raise unusable_body(self.name, "the body is not JSON", label=self.label)
        payload = self.unwrap(payload)
        if not isinstance(payload, dict) or not isinstance(payload.get("answers"), dict):
            raise unusable_body(self.name, "no 'answers' object in the body", label=self.label)
        payload = self.clean(payload, req)
        from translators import systemone

        try:
            result = systemone.parse_response(payload, req)
        except UpstreamError as err:
            raise UpstreamError(err.status, f"{self.label}: {err.message}", provider=self.name,
                                type=err.type, code=err.code, headers=err.headers) from None
        return self.adjust(result, payload)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


__all__ = ["SystemOneProvider", "join_url", "first_env"]
