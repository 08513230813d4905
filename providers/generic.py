"""Any other server that speaks System One at an ``api_base`` (MAX, vLLM, Ollama, LocalAI, ...).

``systemone/<model>`` with ``api_base`` (or ``SYSTEMONE_API_BASE``); the key is optional.
Such servers' limits are unknown, so none are assumed; set them per deployment in ``model_info``.
"""

from __future__ import annotations

from providers.base import Limits
from providers.http_json import HttpJsonProvider


class GenericSystemOneProvider(HttpJsonProvider):
    name = "systemone"
    label = "System One server"
    api_key_envs = ("SYSTEMONE_API_KEY",)
    api_base_envs = ("SYSTEMONE_API_BASE",)
    api_key_required = False
    limits = Limits(max_questions=None, max_images=0, box=False)
