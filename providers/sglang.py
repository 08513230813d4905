"""``sglang/<model>``: any server with SGLang's ``/v1/decisions`` wire (SGLang, MAX, our bundled backend).

``POST {api_base}/v1/decisions`` with ``prompt_format_version`` pinned (deployment param
``prompt_format_version``, default 1), so a server with other wording refuses (400) instead of
answering differently. ``label_mass`` is carried into ``Answer.label_mass``. A 400 keeps the server's
message (it names the question) behind the provider's name.
"""

from __future__ import annotations

from typing import Any, ClassVar

from providers.base import Deployment, Limits, ProviderBase, UpstreamRequest, UpstreamResponse
from providers.http_json import join_url
from providers.upstream_errors import decode_body, unusable_body, upstream_error
from translators import sglang as wire
from translators.errors import DecisionError, UpstreamError
from translators.ir import DecisionRequest, DecisionResult


class SGLangProvider(ProviderBase):
    name: ClassVar[str] = "sglang"
    label: ClassVar[str] = "SGLang"
    path: ClassVar[str] = "/v1/decisions"
    api_key_envs: ClassVar[tuple[str, ...]] = ("SGLANG_API_KEY",)
    api_base_envs: ClassVar[tuple[str, ...]] = ("SGLANG_API_BASE",)
    env_key_for_env_base_only: ClassVar[bool] = True  # a self-hosted server: the env key goes only to the env's base
    known_params: ClassVar[frozenset[str]] = frozenset({"prompt_format_version"})
    default_prompt_format_version: ClassVar[int | None] = 1
    # SGLang's wire: 2..26 options, 2..10 levels, text only; MAX takes at most 64 questions.
    limits: Limits = Limits(max_questions=64, min_options=2, max_options=26, min_levels=2, max_levels=10,
                            max_images=0, box=False)

    def prompt_format_version(self, dep: Deployment) -> int | None:
        value = dep.params.get("prompt_format_version", self.default_prompt_format_version)
        if value is None:
            return None
        try:
            return int(value)
        except (TypeError, ValueError):
            raise DecisionError(status=400, message=f"{self.label} deployment param prompt_format_version must be "
                                f"an integer, not {value!r}", loc=("model",), code="invalid_deployment") from None

    def url(self, dep: Deployment) -> str:
        return join_url(self.require_base(dep), self.path)

    def headers(self, dep: Deployment) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if dep.api_key:
            headers["Authorization"] = f"Bearer {dep.api_key}"
        return headers

    def build_request(self, req: DecisionRequest, dep: Deployment) -> UpstreamRequest:
        body = wire.render_request(req, dep.model, self.prompt_format_version(dep))
        return UpstreamRequest(method="POST", url=self.url(dep), headers=self.headers(dep), json=body,
                               timeout=dep.timeout)

    def parse_response(self, resp: UpstreamResponse, req: DecisionRequest, dep: Deployment) -> DecisionResult:
        payload: Any = decode_body(resp.body)
        if resp.status != 200:
            raise upstream_error(self.name, resp, label=self.label, secrets=(dep.api_key,), payload=payload)
        if not isinstance(payload, dict):
            raise unusable_body(self.name, "the body is not a JSON object", label=self.label)
        try:
            return wire.parse_response(payload, req)
        except UpstreamError as err:
            raise unusable_body(self.name, err.message.removeprefix("the /v1/decisions upstream answered "),
                                label=self.label) from None
