"""``local/<name-or-path>``: the bundled backend, in process (no HTTP hop, no key, no network).

Same wire as ``sglang/``; the URL ``local://<model-ref>/v1/decisions`` tells the gateway's upstream
layer to call ``backend.inprocess.call``. ``smollm2`` / ``default`` is the bundled SmolLM2-135M; any
other reference is a Hugging Face folder or a ``.gguf`` file. The prompt format is not pinned unless
the deployment sets ``prompt_format_version`` (the backend serves 1, or 2 for a decider checkpoint).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar
from urllib.parse import quote

from providers.base import Deployment, Limits
from providers.sglang import SGLangProvider


class LocalProvider(SGLangProvider):
    name: ClassVar[str] = "local"
    label: ClassVar[str] = "local backend"
    api_key_envs: ClassVar[tuple[str, ...]] = ()
    api_base_envs: ClassVar[tuple[str, ...]] = ()
    default_prompt_format_version: ClassVar[int | None] = None
    limits: Limits = Limits(max_questions=256, min_options=2, max_options=26, min_levels=2, max_levels=10,
                            max_images=0, box=False)

    def resolve_credentials(self, dep: Deployment, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
        return dep.api_key, dep.api_base

    def url(self, dep: Deployment) -> str:
        return f"local://{quote(dep.model or 'default', safe='')}{self.path}"

    def headers(self, dep: Deployment) -> dict[str, str]:
        return {"Content-Type": "application/json"}
