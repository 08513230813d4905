"""The shared base of every HTTP JSON upstream: one POST of a JSON body, one JSON answer.

A subclass sets a few class attributes (``name``, ``label``, ``path``, ``default_api_base``, the key
and base environment variables, ``limits``) and overrides a hook only where its upstream differs.
The defaults are System One's (most upstreams speak it); OpenAI's provider sets ``wire``.

* ``url(dep)`` – base (trailing ``/`` and one ``/v1`` removed) + ``path``;
* ``auth_headers(dep)`` – ``Authorization: Bearer <key>`` when there is a key;
* ``request_headers(req, dep)`` – extra headers (TypeSafe's Danger-Zone ones);
* ``body(req, dep)`` / ``place_images(body, req, dep)`` – the wire's body and where its images go;
* ``unwrap(payload)`` – the response envelope (Cloudflare's ``{"result": ...}``);
* ``clean(payload, req)`` – quirks (Laya's extras, Strands' ``latency_ms``) before parsing;
* ``error(resp, dep)`` – the upstream's error envelope and codes; ``secrets(dep)`` are redacted from it.

The answer's own envelope (an object with ``answers``) is checked once, by the wire's translator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from providers.base import Deployment, ProviderBase, UpstreamRequest, UpstreamResponse
from providers.upstream_errors import decode_body, unusable_body, upstream_error
from translators import systemone
from translators.errors import DecisionError, UpstreamError
from translators.ir import DecisionRequest, DecisionResult
from translators.wire import WireModule

# Caller headers a provider never forwards (it sets them itself).
RESERVED_HEADERS = frozenset({"authorization", "content-type", "content-length", "host"})
# TypeSafe's gates: meaningful to TypeSafe only, so never sent to another upstream.
DANGER_ZONE_PREFIX = "typesafe-danger-zone-"


def join_url(base: str, path: str) -> str:
    """LiteLLM's rule: strip trailing ``/`` and one trailing ``/v1`` from the base, then add the path."""
    base = base.rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return base + path


class HttpJsonProvider(ProviderBase):
    path: ClassVar[str] = "/v1/systemone"
    wire: ClassVar[WireModule] = systemone
    api_key_required: ClassVar[bool] = True
    takes_danger_zone_headers: ClassVar[bool] = False  # TypeSafe-Danger-Zone-* headers (TypeSafe only)

    # ---- configuration ---------------------------------------------------------------------

    def require_key(self, dep: Deployment) -> str | None:
        if self.api_key_required and not dep.api_key:
            names = " or ".join(self.api_key_envs) or "api_key"
            raise DecisionError(
                status=401, type="authentication_error", code="missing_api_key",
                message=f"Missing API key for decisions provider '{self.name}': set {names} or the deployment's "
                        f"api_key.",
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

    def body(self, req: DecisionRequest, dep: Deployment) -> dict[str, Any]:
        body = self.wire.render_request(req, self.upstream_model(dep))
        return self.place_images(body, req, dep) if req.input.images else body

    def place_images(self, body: dict[str, Any], req: DecisionRequest, dep: Deployment) -> dict[str, Any]:
        """Move the request's images where the upstream wants them. By default they stay where the wire
        put them: System One's base64 ``assets``, OpenAI's ``input_image`` parts. (A provider that takes
        no images never gets here: the capability check refuses them first.)"""
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

    def clean(self, payload: dict[str, Any], req: DecisionRequest) -> dict[str, Any]:
        return payload

    def parse_response(self, resp: UpstreamResponse, req: DecisionRequest, dep: Deployment) -> DecisionResult:
        if not 200 <= resp.status < 300:
            raise self.error(resp, dep)
        payload = decode_body(resp.body)
        if payload is None:
            raise unusable_body(self.name, "the body is not JSON", label=self.label)
        payload = self.unwrap(payload)
        if isinstance(payload, dict):  # anything else is the translator's 502, like a missing 'answers'
            payload = self.clean(payload, req)
        try:
            return self.wire.parse_response(payload, req)
        except UpstreamError as err:
            raise UpstreamError(err.status, f"{self.label}: {err.message}", provider=self.name,
                                type=err.type, code=err.code, headers=err.headers) from None


__all__ = ["HttpJsonProvider", "join_url", "DANGER_ZONE_PREFIX", "RESERVED_HEADERS"]
