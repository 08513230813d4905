"""Per-deployment limits: a provider's ``Limits`` with overrides from the deployment.

Overrides use the ``Limits`` field names, plus the LiteLLM spellings ``max_input_tokens``,
``supports_box_questions`` and ``supports_vision`` / ``supports_images``. They are read from, in
increasing precedence, the deployment's ``litellm_params`` themselves, ``model_info`` and
``litellm_params.limits``::

    litellm_params: {model: cloudflare/clef, max_questions: 32}
    model_info: {max_questions: 32, max_levels: 5, supports_box_questions: true}

A count must be a whole number (``max_questions`` at least 1); ``null`` means no limit. Values
that are neither are ignored, so a typo cannot turn every request into an error.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from providers.base import Deployment, Limits

_FIELDS = {f.name for f in fields(Limits)}
_ALIASES = {"max_input_tokens": "max_context_tokens", "supports_box_questions": "box"}
_VISION = ("supports_vision", "supports_images")
_COUNTS = {"max_questions": 1, "min_options": 1, "max_options": 1, "min_levels": 1, "max_levels": 1,
           "max_images": 0, "max_context_tokens": 1}  # field -> smallest meaningful value


def limits_for(base: Limits, dep: Deployment) -> Limits:
    """``base`` with the deployment's overrides applied (unknown keys and unusable values are ignored)."""
    params = dep.params or {}
    changes: dict = {}
    for source in (params, dep.model_info or {}, params.get("limits") or {}):
        if not isinstance(source, dict):
            continue
        for key, value in source.items():
            name = _ALIASES.get(key, key)
            if name in _VISION:
                changes["max_images"] = None if value else 0
            elif name in _COUNTS:
                count = _count(value, _COUNTS[name])
                if count is not ...:
                    changes[name] = count
            elif name == "image_formats" and isinstance(value, (list, tuple)):
                changes[name] = tuple(str(v).lower() for v in value)
            elif name == "box" and isinstance(value, bool):
                changes[name] = value
    return replace(base, **changes) if changes else base


def _count(value: Any, smallest: int) -> Any:
    """A whole number >= ``smallest``, ``None`` (no limit), or ``...`` for a value to ignore."""
    if value is None:
        return None
    if isinstance(value, bool):
        return ...
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value >= smallest else ...
