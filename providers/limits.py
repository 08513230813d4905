"""Per-deployment limits: a provider's ``Limits`` with overrides from the deployment.

Overrides come from ``model_info`` (or ``params["limits"]``) using the ``Limits`` field names,
plus the LiteLLM spellings ``max_input_tokens``, ``supports_box_questions`` and
``supports_vision``::

    model_info: {max_questions: 32, max_levels: 5, supports_box_questions: true}
"""

from __future__ import annotations

from dataclasses import fields, replace

from providers.base import Deployment, Limits

_FIELDS = {f.name for f in fields(Limits)}
_ALIASES = {"max_input_tokens": "max_context_tokens", "supports_box_questions": "box"}


def limits_for(base: Limits, dep: Deployment) -> Limits:
    """``base`` with the deployment's overrides applied (unknown keys are ignored)."""
    changes: dict = {}
    for source in (dep.model_info or {}, (dep.params or {}).get("limits") or {}):
        for key, value in source.items():
            name = _ALIASES.get(key, key)
            if name == "supports_vision":
                changes["max_images"] = None if value else 0
            elif name in _FIELDS:
                changes[name] = tuple(value) if name == "image_formats" else value
    return replace(base, **changes) if changes else base
