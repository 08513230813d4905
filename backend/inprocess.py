"""The backend without an HTTP hop: the gateway sends ``local://<model-ref>/v1/...`` requests here.

Each model reference (``smollm2`` / ``default`` for the bundled SmolLM2-135M, or a folder or
``.gguf`` path) is loaded once per process, off the event loop, and kept. The device and dtype are
``auto`` (CUDA + bf16 when a GPU is present, else CPU + fp32) unless ``DECISIONS_GATEWAY_DEVICE`` /
``DECISIONS_GATEWAY_DTYPE`` say otherwise.
"""

from __future__ import annotations

import asyncio
import os
import threading

from backend.errors import BackendRefusal, error_body
from backend.loading import DEFAULT_ALIASES, ModelLoadError
from backend.service import DecisionService

_services: dict[str, DecisionService] = {}
_lock = threading.Lock()


def _key(model_ref: str) -> str:
    return "default" if model_ref in DEFAULT_ALIASES or not model_ref else model_ref


def get_service(model_ref: str = "default") -> DecisionService:
    """The loaded service for a model reference (blocking on first use: ~2 s, ~20 s the very first time)."""
    key = _key(model_ref)
    with _lock:
        service = _services.get(key)
        if service is None:
            service = DecisionService.load(key, device=os.environ.get("DECISIONS_GATEWAY_DEVICE") or None,
                                           dtype=os.environ.get("DECISIONS_GATEWAY_DTYPE") or None)
            _services[key] = service
        return service


async def call(model_ref: str, path: str, body: dict) -> tuple[int, dict, dict[str, str]]:
    """POST ``body`` to ``path`` (``/v1/decisions``, ``/v1/systemone``, ``/v1/score``) of the model.

    Returns (status, JSON body, headers); a full queue answers 503 with ``Retry-After``.
    """
    key = _key(model_ref)
    try:
        service = _services.get(key)
        if service is None:
            service = await asyncio.to_thread(get_service, key)
    except ModelLoadError as err:  # a configuration problem: name it rather than fail as a crash
        return 400, error_body(BackendRefusal(f"the local model '{model_ref}' cannot be loaded: {err}")), {}
    return await service.handle(path, body)
