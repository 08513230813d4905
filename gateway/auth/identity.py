"""Who is calling: key material -> ``Identity`` (key, team, allowed models, limits, budgets, spend).

``Authenticator.resolve(key)``:

- no key -> 401 ``missing_api_key``; the master key -> ``Identity.master`` (no limits, every model);
- otherwise the key's HMAC id is looked up (the short cache in ``cache.py``, then the database):
  unknown -> 401; the key or its team blocked, or the key expired -> 403 (``permission_error``).

Allowed models are the key's ``models`` intersected with its team's; an empty list (or one holding
``*`` / LiteLLM's ``all-proxy-models`` / ``all-team-models``) means every model (of the team's).
``check_model_allowed(identity, group)`` raises 403 for a model outside them.

Without a master key the gateway runs open, as LiteLLM does: ``resolve`` answers
``Identity.anonymous`` for any request and the admin API refuses everything.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from gateway.auth import store
from gateway.auth.cache import KeyCache
from gateway.auth.errors import PermissionDenied, missing_key, model_not_allowed, unknown_key
from gateway.auth.keys import KeyHasher, key_from_headers, load_secret, looks_like_key, master_key_of, secrets_equal
from gateway.auth.records import Entry, Identity
from translators.errors import DecisionError

log = logging.getLogger("gateway.auth")

def check_model_allowed(identity: Identity, model_group: str, requested: str | None = None) -> None:
    """403 ``model_not_allowed`` when ``identity`` may not call ``model_group``. ``requested``: the name
    the caller gave when it is a ``model_group_alias`` of the group; as in LiteLLM, the key may call it
    when either name is among its models. The refusal names the team when the team's models are what
    leave it out, and the key otherwise."""
    names = {model_group, requested or model_group}
    if identity.models is None or names & identity.models:
        return
    shown = (requested or model_group)[:200]
    user = identity.user_models
    if user is not None and not names & user:
        raise model_not_allowed(shown, sorted(user), user=identity.user_id or "")
    team = identity.team_models
    if team is not None and not names & team:
        raise model_not_allowed(shown, sorted(team), team=identity.team_alias or identity.team_id or "")
    raise model_not_allowed(shown, sorted(identity.models))


Resolved = tuple["Identity", Entry]  # what the cache keeps: the identity built once per load
Loader = Callable[[str], Awaitable[Entry | None]]


class Authenticator:
    """Resolves key material to an ``Identity``; one per process, shared by the pipeline and the admin API."""

    def __init__(self, hasher: KeyHasher, master_key: str | None, load: Loader | None,
                 cache: KeyCache[Resolved]):
        self.hasher = hasher
        self._master_key = master_key
        self._master = Identity.master(hasher.hash(master_key)) if master_key else None
        self._load = load
        self.cache = cache

    @classmethod
    def build(cls, general_settings: Mapping[str, Any] | None, db: Any, shared: Any, *,
              environ: Mapping[str, str] | None = None) -> Authenticator:
        """From the config's ``general_settings`` (``master_key``, ``salt_key``), the ``Database``
        (or None: only the master key works) and the ``SharedState`` (cache invalidation)."""
        environ = os.environ if environ is None else environ
        hasher = KeyHasher(load_secret(general_settings, environ))
        load: Loader | None = None
        if db is not None:
            async def load(key_hash: str) -> Entry | None:
                return await store.load_entry(db, key_hash)

        return cls(hasher, master_key_of(general_settings, environ), load, KeyCache(shared))

    @property
    def required(self) -> bool:
        """True when a master key is set: every request needs a key."""
        return self._master is not None

    def is_master(self, key: str) -> bool:
        return self._master_key is not None and secrets_equal(key, self._master_key)

    async def resolve_headers(self, headers: Mapping[str, str], now: datetime | None = None) -> Identity:
        """``resolve`` with the key from ``Authorization: Bearer``, ``x-api-key`` or ``api-key``."""
        return await self.resolve(key_from_headers(headers), now)

    async def resolve(self, key: str | None, now: datetime | None = None) -> Identity:
        if self._master is None:
            return Identity.anonymous()
        if not key:
            raise missing_key()
        if self.is_master(key):
            return self._master
        if not looks_like_key(key) or self._load is None:
            raise unknown_key()
        found = await self.lookup(self.hasher.hash(key))
        if found is None:
            raise unknown_key()
        identity, entry = found
        check_usable(identity, entry, now)
        return identity

    async def lookup(self, key_hash: str) -> Resolved | None:
        """The identity of the key with this HMAC id, with its rows (cached for about a second), or None."""
        load = self._load
        if load is None:
            return None

        async def from_store() -> Resolved | None:
            try:
                entry = await load(key_hash)
                return None if entry is None else (Identity.of(*entry), entry)
            except DecisionError:
                raise
            except Exception as exc:  # the database is away: refuse, and say nothing of the key
                log.error("key lookup failed: %s", type(exc).__name__)
                raise DecisionError(status=503, message="The key store is unavailable; try again shortly.",
                                    type="service_unavailable", code="key_store_unavailable") from None

        return await self.cache.get_or_load(key_hash, from_store)

    async def changed(self) -> None:
        """Call after any change to keys or teams: every process forgets what it cached."""
        await self.cache.changed()


def check_usable(identity: Identity, entry: Entry, now: datetime | None = None) -> None:
    """403 when the key is blocked or expired, or its team is blocked or gone, or its user is gone."""
    key, team, user = entry
    name = f"Key '{identity.key_alias}'" if identity.key_alias else "This key"
    if key.team_id is not None and team is None:
        raise PermissionDenied(f"{name} belongs to a team that no longer exists.", code="team_deleted")
    if key.user_id is not None and user is None:
        raise PermissionDenied(f"{name} belongs to a user that no longer exists.", code="user_deleted")
    if team is not None and team.blocked:
        raise PermissionDenied(f"{name} belongs to team '{team.team_alias or team.team_id}', which is blocked.",
                               code="team_blocked")
    if identity.blocked:
        raise PermissionDenied(f"{name} is blocked.", code="key_blocked")
    if identity.expires is not None and identity.expires <= (now or datetime.now(UTC)):
        raise PermissionDenied(f"{name} expired at {identity.expires.isoformat()}.", code="key_expired")
