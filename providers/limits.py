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
    changes, _problems = _overrides(dep)
    return replace(base, **changes) if changes else base


def limit_problems(dep: Deployment) -> list[str]:
    """Override values that would be ignored, each as ``<where>.<key>: <rule>`` (the config refuses them)."""
    return _overrides(dep)[1]


def _overrides(dep: Deployment) -> tuple[dict[str, Any], list[str]]:
    params = dep.params or {}
    changes: dict[str, Any] = {}
    problems: list[str] = []
    for where, source in (("litellm_params", params), ("model_info", dep.model_info or {}),
                          ("litellm_params.limits", params.get("limits") or {})):
        if not isinstance(source, dict):
            problems.append(f"{where}: must be a mapping of limit names to values")
            continue
        for key, value in source.items():
            name = _ALIASES.get(key, key)
            if name in _VISION:
                changes["max_images"] = None if value else 0
            elif name in _COUNTS:
                count = _count(value, _COUNTS[name])
                if count is ...:
                    problems.append(f"{where}.{key}: must be a whole number of at least {_COUNTS[name]}, "
                                    f"or null for no limit; got {value!r}")
                else:
                    changes[name] = count
            elif name == "image_formats" and isinstance(value, (list, tuple)):
                changes[name] = tuple(str(v).lower() for v in value)
            elif name == "box" and isinstance(value, bool):
                changes[name] = value
    return changes, problems


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
