"""The router's response headers (its true counts, in our names and LiteLLM's) and the deadline header."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.router.health import key_of
from gateway.router.router import DEADLINE_HEADER
from providers.base import Deployment
from translators.errors import RequestInvalid, Where


def routing_headers(group: str, deps: Sequence[Deployment] | None, retries: int, fallbacks: int,
                    hedged: bool) -> dict[str, str]:
    """The router's true counts, in our names and in LiteLLM's for tools built on it."""
    headers = {"x-decisions-model-group": group, "x-litellm-model-group": group,
               "x-decisions-attempted-retries": str(retries), "x-litellm-attempted-retries": str(retries),
               "x-decisions-attempted-fallbacks": str(fallbacks), "x-litellm-attempted-fallbacks": str(fallbacks)}
    if deps:
        ids = ", ".join(dict.fromkeys(key_of(dep) for dep in deps))
        headers["x-decisions-model"] = ", ".join(dict.fromkeys(f"{dep.provider}/{dep.model}" for dep in deps))
        headers["x-decisions-model-id"] = headers["x-litellm-model-id"] = ids
    if hedged:
        headers["x-decisions-hedged"] = "true"
    return headers


def deadline_ms_of(raw: str | None) -> float | None:
    """``x-decisions-deadline-ms`` as sent -> milliseconds (400 naming the header when unusable)."""
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise RequestInvalid(f"{DEADLINE_HEADER} must be a positive number of milliseconds, not {raw[:40]!r}.",
                             loc=Where(DEADLINE_HEADER), code="invalid_deadline")
    return value
