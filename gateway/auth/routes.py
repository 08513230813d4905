"""Which routes a key may call, in LiteLLM's names (no I/O).

- ``allowed_routes`` (key and team): empty, every decision route; otherwise only the routes it
  lists. The key's and its team's both apply (the key's within the team's, as for models).
- ``allowed_passthrough_routes`` (key, else its team's when the key has none): the pass-throughs
  (``/typesafe/...``, ``/laya/v1/systemone``, ``/bespoke/v1/systemone``) it may call. A pass-through
  spends the gateway's own upstream key, so it needs an explicit grant: an entry here, or an
  ``allowed_routes`` entry of the key or its team naming its path. A key with neither is refused.

An entry matches a path exactly, as a prefix ending at a ``/`` (``/typesafe`` covers
``/typesafe/v1/systemone``, not ``/typesafe2``), or as a prefix when it ends in ``*``
(``/typesafe/v1/*``), as LiteLLM's ``RouteChecks`` match them. The master key and an open gateway
(no master key) call every route.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway.auth.errors import PermissionDenied

MAX_ROUTE_CHARS = 255


@dataclass(frozen=True, slots=True)
class RouteGrants:
    """A key's route permissions: its own and its team's ``allowed_routes``, and the pass-throughs granted."""

    key_routes: tuple[str, ...] = ()
    team_routes: tuple[str, ...] = ()
    passthrough: tuple[str, ...] = ()  # the key's allowed_passthrough_routes, else its team's

    @classmethod
    def of(cls, key_routes: Sequence[str], key_passthrough: Sequence[str], team_routes: Sequence[str] = (),
           team_passthrough: Sequence[str] = ()) -> RouteGrants:
        return cls(tuple(key_routes), tuple(team_routes), tuple(key_passthrough or team_passthrough))

    def allows(self, path: str, *, passthrough: bool) -> bool:
        if passthrough:
            return matches_any(path, self.passthrough) or matches_any(path, self.key_routes) \
                or matches_any(path, self.team_routes)
        return all(not routes or matches_any(path, routes) for routes in (self.key_routes, self.team_routes))


def matches(path: str, entry: str) -> bool:
    """LiteLLM's matching: exact, a prefix ending at ``/``, or a prefix ending in ``*``."""
    if not entry:
        return False
    if entry.endswith("*"):
        return path.startswith(entry[:-1])
    root = entry.rstrip("/") or "/"
    return path == root or path.startswith(root + "/") or root == "/"


def matches_any(path: str, entries: Sequence[str]) -> bool:
    return any(matches(path, entry) for entry in entries)


def check_route_allowed(identity, path: str, *, passthrough: bool) -> None:
    """403 ``route_not_allowed`` when a limited key (not the master key, not an open gateway) may not call
    ``path``. ``identity`` is a ``records.Identity``."""
    if not identity.limited or identity.routes.allows(path, passthrough=passthrough):
        return
    shown = path[:MAX_ROUTE_CHARS]
    if passthrough:
        raise PermissionDenied(f"This key may not call the pass-through {shown}: grant it in the key's or its "
                               "team's allowed_passthrough_routes (or allowed_routes).", code="route_not_allowed")
    raise PermissionDenied(f"This key may not call {shown}: it is not in the key's or its team's allowed_routes.",
                           code="route_not_allowed")
