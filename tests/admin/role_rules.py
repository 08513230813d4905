"""The role matrix's rules: who may call a route (``Rule``: a role -> bool, the spec's matrix,
/work/notes/users_spec.md) and what an allowed answer must hold (``Check``: row by row for lists).
Used by the table in ``test_role_matrix.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.admin.role_world import ROLES, TEAM_A, TEAM_B, USER_PAM, USER_X, Role, Scene, World

Check = Callable[[Role, Scene, World, Any], None]
Rule = Callable[[Role], bool]


# ---- who may (the spec's matrix) -----------------------------------------------------------------

def anyone(role: Role) -> bool:
    return True


def reads_all(role: Role) -> bool:
    return role.reads_all


def writes_all(role: Role) -> bool:
    return role.writes_all


def has_user(role: Role) -> bool:
    return role.reads_all or role.has_user


def reads_team(role: Role) -> bool:
    """Team A's record, keys and spend: readers of everything and its admins."""
    return role.reads_all or role.team_admin


def reads_team_keys(role: Role) -> bool:
    """/key/list?team_id=A: its admins see the team's keys, its members their own keys in it (narrowed)."""
    return reads_team(role) or (role.has_user and role.team_role is not None)


def writes_team_keys(role: Role) -> bool:
    return role.writes_all or role.team_admin


def manages_own(role: Role) -> bool:
    return role.writes_all or role.manages_own_keys


def own_key_in_team(role: Role) -> bool:
    """A key of its own in team A: an internal user who is in team A, or team A's admin."""
    return role.writes_all or role.team_admin or (role.manages_own_keys and role.team_role is not None)


def reads_own_key(role: Role) -> bool:
    return True  # a key of the caller's user (no user: the caller's key itself)


def with_user(role: Role) -> bool:
    """A case about the caller's own user: callers that have one (and the refused, who are refused first)."""
    return role.has_user or not role.authenticated


def not_master(role: Role) -> bool:
    return not role.master


# ---- what an allowed answer holds ----------------------------------------------------------------

def _visible_key(role: Role, scene: Scene, row: dict[str, Any]) -> bool:
    return (role.reads_all or (scene.user_id is not None and row.get("user_id") == scene.user_id)
            or (role.team_admin and row.get("team_id") == TEAM_A))


def keys_listed(where: Callable[[Role, Scene, dict[str, Any]], bool]) -> Check:
    """Every key listed is one the role may see and the filter asks for; the read world's such keys are there."""
    def check(role: Role, scene: Scene, world: World, body: Any) -> None:
        rows = body["keys"]
        assert all(isinstance(row, dict) for row in rows), body
        wrong = [row for row in rows if not (_visible_key(role, scene, row) and where(role, scene, row))]
        assert not wrong, f"rows the role may not see or did not ask for: {wrong}"
        must = {token for token, owner in world.keys.items()
                if _visible_key(role, scene, {"token": token, **owner}) and where(role, scene, owner)}
        if body["total_count"] <= len(rows):
            assert must <= {row["token"] for row in rows}, (must, rows)
        assert body["total_count"] >= len(must)
    return check


def _visible_spend(role: Role, scene: Scene, row: dict[str, Any]) -> bool:
    return (role.reads_all or (scene.user_id is not None and row["user"] == scene.user_id)
            or (role.team_admin and row["team_id"] == TEAM_A))


def spend_rows(where: Callable[[Scene, dict[str, Any]], bool], paged: bool = False) -> Check:
    """Exactly the spend rows the role may see that the filter asks for (the rows are the world's only)."""
    def check(role: Role, scene: Scene, world: World, body: Any) -> None:
        rows = body["data"] if paged else body
        expected = {row["request_id"] for row in world.spend if _visible_spend(role, scene, row) and where(scene, row)}
        assert {row["request_id"] for row in rows} == expected
        assert len(rows) == len(expected)
    return check


def report_total(where: Callable[[Scene, dict[str, Any]], bool]) -> Check:
    """The report's spend is that of the rows the role may see that the filter asks for (no filter: narrowed)."""
    def check(role: Role, scene: Scene, world: World, body: Any) -> None:
        expected = sum(row["spend"] for row in world.spend if _visible_spend(role, scene, row) and where(scene, row))
        assert sum(entry["spend"] for entry in body) == pytest.approx(expected)
    return check


def key_is(attr: str) -> Check:
    def check(role: Role, scene: Scene, world: World, body: Any) -> None:
        assert body["key"] == getattr(scene, attr), body
    return check


def team_info_of(attr: str) -> Check:
    def check(role: Role, scene: Scene, world: World, body: Any) -> None:
        team_id = getattr(scene, attr)
        assert body["team_id"] == team_id
        if team_id == TEAM_A:
            info = body.get("team_info", {})
            members = {(m["user_id"], m["role"]) for m in info.get("members_with_roles", body.get(
                "members_with_roles", []))}
            assert {("u-team_admin", "admin"), ("u-team_member", "user"), (USER_PAM, "user")} <= members, body
    return check


def teams_v2(filtered: bool) -> Check:
    def check(role: Role, scene: Scene, world: World, body: Any) -> None:
        ids = [team["team_id"] for team in body["teams"]]
        if filtered:
            assert ids == ([TEAM_B] if role.reads_all else []), ids
        elif role.reads_all:
            assert body["total"] >= 2
        else:
            related = role.team_admin or role.key_team == TEAM_A
            assert ids == ([TEAM_A] if related else []), ids
    return check


def teams_listed(role: Role, scene: Scene, world: World, body: Any) -> None:
    assert {TEAM_A, TEAM_B} <= {team["team_id"] for team in body} or len(body) >= 2, body


def user_is(attr: str) -> Check:
    def check(role: Role, scene: Scene, world: World, body: Any) -> None:
        assert body["user_id"] == getattr(scene, attr), body
    return check


def the_caller(role: Role, scene: Scene, world: World, body: Any) -> None:
    caller = body["caller"]
    expected = {"role": role.proxy_role, "admin_teams": [TEAM_A] if role.team_admin else [],
                "team_id": role.key_team, "user_id": role.user_id}
    assert {name: caller.get(name) for name in expected} == expected, caller
    if role.has_user:
        assert body["user_id"] == role.user_id


def users_are(*user_ids: str) -> Check:
    def check(role: Role, scene: Scene, world: World, body: Any) -> None:
        assert sorted(user["user_id"] for user in body["users"]) == sorted(user_ids), body
        assert body["total"] == len(user_ids)
        assert all("key_count" in user for user in body["users"])
    return check


def users_listed(role: Role, scene: Scene, world: World, body: Any) -> None:
    assert body["total"] >= len([r for r in ROLES if r.has_user]) + 2, body
    assert len(body["users"]) == min(body["total"], body["page_size"])


def team_users(role: Role, scene: Scene, world: World, body: Any) -> None:
    ids = {user["user_id"] for user in body["users"]}
    if body["total"] <= len(body["users"]):
        assert {"u-team_admin", "u-team_member", USER_PAM} <= ids, body
    assert USER_X not in ids and "u-internal_user" not in ids, body


def deployments(role: Role, scene: Scene, world: World, body: Any) -> None:
    assert len(body["data"]) == 1, body
