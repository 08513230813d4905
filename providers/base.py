"""What a provider is: a description of one upstream. It builds requests and reads responses; no I/O.

The gateway's upstream layer sends an ``UpstreamRequest`` (one shared HTTP client, or the
in-process backend for ``local/``) and hands the ``UpstreamResponse`` back to the provider.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from translators.errors import DecisionError
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
    model_info: dict[str, Any] = field(default_factory=dict)
    # the other litellm_params (account_id, headers, limits overrides, ...)
    params: dict[str, Any] = field(default_factory=dict)
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
    """Every hook the gateway calls on a provider. ``ProviderBase`` gives each one a default."""

    name: ClassVar[str]  # the prefix of ``provider/model``
    label: ClassVar[str]  # how messages name the upstream ("TypeSafe", "OpenAI", ...)
    limits: Limits  # what the upstream accepts, before a deployment's overrides
    inline_images_only: ClassVar[bool]  # public image URLs are refused (the gateway downloads nothing)
    known_params: ClassVar[frozenset[str]]  # litellm_params this provider reads beyond the shared ones

    def resolve_credentials(self, dep: Deployment, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
        """(api_key, api_base) for a deployment: its own values, else the environment's, else the default base."""
        ...

    def request_limits(self, limits: Limits, req: DecisionRequest, dep: Deployment) -> Limits:
        """The deployment's ``limits`` as they apply to this request (a header may lift one)."""
        ...

    def build_request(self, req: DecisionRequest, dep: Deployment) -> UpstreamRequest: ...

    def parse_response(self, resp: UpstreamResponse, req: DecisionRequest, dep: Deployment) -> DecisionResult: ...


def first_env(environ: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    """The first of ``names`` set to a non-blank value in ``environ``, stripped."""
    for name in names:
        value = (environ.get(name) or "").strip()
        if value:
            return value
    return None


class ProviderBase(ABC):
    """The defaults of every ``Provider`` hook; a provider sets class attributes and overrides what differs.

    Credentials: the deployment's ``api_key`` / ``api_base`` win, then the first set variable of
    ``api_key_envs`` / ``api_base_envs``, then ``default_api_base``. A self-hosted server
    (``env_key_for_env_base_only``) gets the environment's key only when it is called at the
    environment's own base, so a caller-supplied ``api_base`` cannot collect it.
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    limits: Limits = Limits()
    inline_images_only: ClassVar[bool] = True
    known_params: ClassVar[frozenset[str]] = frozenset()
    default_api_base: ClassVar[str | None] = None
    api_key_envs: ClassVar[tuple[str, ...]] = ()
    api_base_envs: ClassVar[tuple[str, ...]] = ()
    env_key_for_env_base_only: ClassVar[bool] = False

    def resolve_credentials(self, dep: Deployment, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
        env_base = first_env(environ, self.api_base_envs)
        api_base = dep.api_base or env_base or self.default_api_base
        if not self.env_key_for_env_base_only:
            return dep.api_key or first_env(environ, self.api_key_envs), api_base
        api_key = dep.api_key
        if api_key is None and api_base and env_base and api_base.rstrip("/") == env_base.rstrip("/"):
            api_key = first_env(environ, self.api_key_envs)
        return api_key, api_base

    def request_limits(self, limits: Limits, req: DecisionRequest, dep: Deployment) -> Limits:
        return limits

    def require_base(self, dep: Deployment) -> str:
        """The deployment's ``api_base``, or a 400 naming the settings that give one."""
        if not dep.api_base:
            names = " or ".join(self.api_base_envs) or "api_base"
            raise DecisionError(
                status=400,
                message=f"{self.label} needs a server address: set {names} or the deployment's api_base.",
                loc=("model",), type="invalid_request_error", code="missing_api_base",
            )
        return dep.api_base

    @abstractmethod
    def build_request(self, req: DecisionRequest, dep: Deployment) -> UpstreamRequest: ...

    @abstractmethod
    def parse_response(self, resp: UpstreamResponse, req: DecisionRequest, dep: Deployment) -> DecisionResult: ...
