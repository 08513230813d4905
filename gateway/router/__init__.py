"""The router: model group -> deployment, with retries, fallbacks, cooldowns, deadlines and hedging.

``router.py`` (the orchestration), ``strategies.py`` (choosing among candidates, pure),
``health.py`` (cooldowns, failures, load and latency in the shared state), ``policy.py`` (what an
error means: class, retry, cooldown), ``settings.py`` (LiteLLM's config keys per group).
"""

from gateway.router.health import Health, key_of
from gateway.router.router import DEADLINE_HEADER, DeadlineExceeded, Routed, Router
from gateway.router.settings import GroupPolicy, RouterSettings, router_settings

__all__ = ["DEADLINE_HEADER", "DeadlineExceeded", "GroupPolicy", "Health", "Routed", "Router", "RouterSettings",
           "key_of", "router_settings"]
