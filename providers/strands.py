"""Strands Decider (self-hosted): System One at ``{STRANDS_DECIDER_API_BASE}/v1/systemone``.

The base is required; the key is optional (sent as Bearer when set, e.g. behind a proxy).
Its top-level ``latency_ms`` is dropped.
"""

from __future__ import annotations

from typing import Any

from providers.base import Limits
from providers.http_json import HttpJsonProvider
from translators.ir import DecisionRequest


class StrandsDeciderProvider(HttpJsonProvider):
    name = "strands_decider"
    label = "Strands Decider"
    api_key_envs = ("STRANDS_DECIDER_API_KEY",)
    api_base_envs = ("STRANDS_DECIDER_API_BASE",)
    api_key_required = False
    limits = Limits(
        max_questions=None, min_options=2, max_options=255, min_levels=2, max_levels=10,
        max_images=0, max_context_tokens=None, box=False,
    )

    def clean(self, payload: dict[str, Any], req: DecisionRequest) -> dict[str, Any]:
        return {k: v for k, v in payload.items() if k != "latency_ms"}
