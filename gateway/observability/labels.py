"""Bounded label values: nothing a caller sends becomes a metric label.

A model group is its name only when it is configured (else ``unknown``); a deployment is
``provider/model`` (or its ``model_info.id``) only when it is one of the configured deployments; a
provider only when it is a known provider; a route only when it is one of the gateway's routes
(the TypeSafe pass-through as its template). ``none`` stands for "not reached" (a request refused
before its model was read). Keys are named by their alias only (the master key as ``master``),
never by any part of the key or its hash.
"""

from __future__ import annotations

from typing import Any

from providers.base import Deployment
from providers.registry import PROVIDER_PATHS

UNKNOWN = "unknown"
NONE = "none"
PASSTHROUGH_PROVIDERS = frozenset({"laya", "bespoke", "typesafe"})
FIXED_ROUTES = frozenset({"/v1/decisions", "/decisions", "/v1/systemone", "/systemone", "/laya/v1/systemone",
                          "/bespoke/v1/systemone"})
TYPESAFE_PREFIX = "/typesafe/"
TYPESAFE_ROUTE = "/typesafe/{path}"
MAX_NAME_CHARS = 128  # an alias or a team name longer than this is cut (an admin's typo, not a label explosion)


def deployment_name(dep: Deployment) -> str:
    """The deployment's label: ``model_info.id`` when the config gives one, else ``provider/model``."""
    given = dep.model_info.get("id") if dep.model_info else None
    return str(given) if isinstance(given, str) and given else f"{dep.provider}/{dep.model}"


def route_label(route: str) -> str:
    if route in FIXED_ROUTES:
        return route
    return TYPESAFE_ROUTE if route.startswith(TYPESAFE_PREFIX) else "other"


class Labeller:
    """Label values from one registry's configured groups and deployments (rebuilt when the
    pipeline's registry is replaced, as a config reload does)."""

    def __init__(self, registry: Any):
        self.registry = registry
        self.groups = frozenset(registry.names)
        self.deployments = {id(dep): deployment_name(dep) for dep in registry.deployments}
        self.deployment_names = frozenset(self.deployments.values())
        self.providers = frozenset(PROVIDER_PATHS) | PASSTHROUGH_PROVIDERS

    def group(self, name: str | None) -> str:
        if name is None:
            return NONE
        return name if name in self.groups else UNKNOWN

    def deployment(self, dep: Deployment | None) -> tuple[str, str]:
        """(deployment, provider) labels."""
        if dep is None:
            return NONE, NONE
        name = self.deployments.get(id(dep))
        if name is None:  # a copy of a configured one (the router narrows its timeout), or not configured
            name = deployment_name(dep)
            if name not in self.deployment_names:
                name = UNKNOWN
        return name, dep.provider if dep.provider in self.providers else UNKNOWN


def caller_labels(identity: Any) -> tuple[str, str]:
    """(key_alias, team) of the caller: aliases an admin gave, never key material."""
    if identity is None:
        return "", ""
    if identity.is_master:
        return "master", ""
    alias = identity.key_alias or ""
    team = identity.team_alias or identity.team_id or ""
    return alias[:MAX_NAME_CHARS], team[:MAX_NAME_CHARS]
