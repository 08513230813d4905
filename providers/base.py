"""What a provider is: a description of one upstream. It builds requests and reads responses; no I/O.

The gateway's upstream layer sends an ``UpstreamRequest`` (one shared HTTP client, or the
in-process backend for ``local/``) and hands the ``UpstreamResponse`` back to the provider.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from translators.ir import DecisionRequest, DecisionResult


@dataclass(frozen=True)
class Limits:
    """What an upstream accepts. ``None`` means no known limit."""

    max_questions: int | None = None
    min_options: int = 1
    max_options: int | None = None
    min_levels: int = 1
    max_levels: int | None = None
    max_images: int | None = 0  # 0: no images at all
    image_formats: tuple[str, ...] = ("png", "jpeg", "webp")
    max_context_tokens: int | None = None
    box: bool = False  # accepts box questions

    @property
    def images(self) -> bool:
        return self.max_images is None or self.max_images > 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "max_questions": self.max_questions,
            "options": [self.min_options, self.max_options],
            "levels": [self.min_levels, self.max_levels],
            "max_images": self.max_images,
            "image_formats": list(self.image_formats) if self.images else [],
            "max_context_tokens": self.max_context_tokens,
            "box": self.box,
        }


@dataclass(frozen=True)
class Deployment:
    """One configured upstream model (a ``model_list`` entry, or an ad-hoc ``provider/model``)."""

    model_name: str  # the proxy model name callers use (the model group)
    provider: str  # "openai", "typesafe", ...
    model: str  # the upstream model name, without the provider prefix
    api_key: str | None = None
    api_base: str | None = None
    timeout: float = 60.0
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    rpm: int | None = None
    tpm: int | None = None
    model_info: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)  # other litellm_params (account_id, headers, limits overrides, ...)
    id: str = ""  # stable deployment id (hash of the entry)


@dataclass(frozen=True)
class UpstreamRequest:
    method: str
    url: str
    headers: dict[str, str]
    json: Any = None  # a JSON body, or ...
    content: bytes | None = None  # ... raw bytes (multipart, pass-through), with Content-Type in headers
    timeout: float = 60.0


@dataclass(frozen=True)
class UpstreamResponse:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes
    elapsed_ms: float = 0.0

    def json(self) -> Any:
        import json

        return json.loads(self.body)


class Provider(Protocol):
    name: ClassVar[str]
    limits: Limits

    def build_request(self, req: DecisionRequest, dep: Deployment) -> UpstreamRequest: ...

    def parse_response(self, resp: UpstreamResponse, req: DecisionRequest, dep: Deployment) -> DecisionResult: ...
