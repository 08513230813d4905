"""Who may do what on the admin API, in LiteLLM's roles. Pure: an ``Identity`` in, a yes or no out.

Proxy roles (``users.user_role``; the master key counts as ``proxy_admin``):

- ``proxy_admin``: everything;
- ``proxy_admin_viewer``: reads everything (keys, teams, users, spend, models), changes nothing;
- ``internal_user``: reads itself, its own keys and its own spend; creates, edits and deletes its own keys;
- ``internal_user_viewer``: reads itself, its own keys and its own spend; changes nothing.

Team roles (``team_memberships.role``): a team's ``admin`` creates, edits and deletes that team's keys
and reads the team, its keys and its spend; a ``user`` is a member and gains nothing by it. A key
without a user reads only itself (``/key/info``) and its own team (``/v2/team/list``).

The roles reach a key through its ``user_id``: every key of a user acts with the user's role.
"""

from __future__ import annotations

from gateway.auth.records import Identity, KeyRecord

PROXY_ADMIN = "proxy_admin"
PROXY_ADMIN_VIEWER = "proxy_admin_viewer"
INTERNAL_USER = "internal_user"
INTERNAL_USER_VIEWER = "internal_user_viewer"
USER_ROLES = (PROXY_ADMIN, PROXY_ADMIN_VIEWER, INTERNAL_USER, INTERNAL_USER_VIEWER)
ADMIN_ROLES = frozenset({PROXY_ADMIN, PROXY_ADMIN_VIEWER})
TEAM_ADMIN = "admin"
TEAM_USER = "user"
TEAM_ROLES = (TEAM_ADMIN, TEAM_USER)


def role_of(identity: Identity) -> str | None:
    """The caller's proxy role: ``proxy_admin`` for the master key, its user's role, or None (a key of no user)."""
    return PROXY_ADMIN if identity.is_master else identity.user_role


def reads_all(identity: Identity) -> bool:
    """Whether the caller reads every key, team, user and spend row."""
    return role_of(identity) in ADMIN_ROLES


def writes_all(identity: Identity) -> bool:
    """Whether the caller changes anything (the master key and a ``proxy_admin`` user's keys)."""
    return role_of(identity) == PROXY_ADMIN


def admin_teams(identity: Identity) -> frozenset[str]:
    """The teams the caller's user is an ``admin`` of."""
    return frozenset(team for team, role in identity.team_roles.items() if role == TEAM_ADMIN)


def manages_own_keys(identity: Identity) -> bool:
    """Whether the caller creates, edits and deletes its user's own keys."""
    return role_of(identity) in (PROXY_ADMIN, INTERNAL_USER)


def reads_key(identity: Identity, key: KeyRecord) -> bool:
    """Whether the caller may see this key's record and spend."""
    if reads_all(identity) or key.token == identity.key_hash:
        return True
    if identity.user_id is not None and key.user_id == identity.user_id:
        return True
    return key.team_id is not None and key.team_id in admin_teams(identity)


def writes_key(identity: Identity, key: KeyRecord) -> bool:
    """Whether the caller may edit, block, regenerate or delete this key as it is now."""
    if writes_all(identity):
        return True
    if manages_own_keys(identity) and key.user_id == identity.user_id:
        return True
    return key.team_id is not None and key.team_id in admin_teams(identity)


def may_own(identity: Identity, team_id: str | None, user_id: str | None) -> str | None:
    """Why the caller may not make or leave a key with this team and user, or None when it may.

    A proxy admin gives any key any owner; a team admin gives its teams' keys; an internal user gives
    its own keys, in no team or a team it belongs to. The user of a key the caller did not make for
    itself is checked against the team's members by the caller (``admin/service.py``): a team admin
    never makes a key for a user with a proxy role, which would be a way up to that role.
    """
    if writes_all(identity):
        return None
    if team_id is not None and team_id in admin_teams(identity):
        return None
    if manages_own_keys(identity) and user_id == identity.user_id:
        if team_id is None or team_id in identity.team_roles:
            return None
        return "team_id: an internal user's key may be in no team or a team the user belongs to"
    if team_id is not None:
        return "team_id: only the team's admins (and proxy admins) make or change the team's keys"
    return "user_id: a key must belong to the caller's own user, or to a team the caller administers"


def reads_team(identity: Identity, team_id: str) -> bool:
    """Whether the caller may see this team (its record, members and keys' count)."""
    return reads_all(identity) or team_id == identity.team_id or team_id in admin_teams(identity)


def reads_team_spend(identity: Identity, team_id: str) -> bool:
    return reads_all(identity) or team_id in admin_teams(identity)


def reads_user(identity: Identity, user_id: str) -> bool:
    """Whether the caller may see this user (a user sees itself)."""
    return reads_all(identity) or (identity.user_id is not None and user_id == identity.user_id)
