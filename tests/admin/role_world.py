"""The world the role matrix (``test_role_matrix.py``) runs in: who the callers are, what they act on,
and the database rows that make it, written straight into a fresh database before a gateway starts on it.

The callers (``ROLES``) are LiteLLM's: the master key, a key of a ``proxy_admin``, ``proxy_admin_viewer``,
``internal_user`` and ``internal_user_viewer`` user, the key of an internal user who is ``admin`` of team A
(its key in no team), the key (in team A) of an internal user who is a plain ``user`` of team A, a key of
no user in team A, no key and a key the gateway does not know.

What they read is one set of rows (``World``): teams A and B; a user per role; ``u-x``, an internal user
in team B (the "other user") with a key in no team; ``u-pam``, a ``proxy_admin_viewer`` member of team A
(a team admin must not make keys for it); keys of team A and B of no user; one spend row per key.

A write runs as a caller of its own (``Scene``): a clone of the role's user (same proxy role, same role in
team A) and a key like the role's, with the records the write acts on made for it alone (its own key, a
team A key, a team B key, a key of ``u-x``, a team it has the role's relation to, another team, another
user). A write the product wrongly allows then spoils nothing another case reads, and the cases may run
in any order (pytest-xdist steals them across processes).
"""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from gateway.auth.keys import KeyHasher, display_prefix, generate_key
from gateway.db.engine import open_database
from gateway.db.models import Team, TeamMembership, User, VerificationToken
from gateway.db.spend import insert_spend_rows, normalise_row

MASTER = "sk-master-role-matrix-" + "m" * 24
SALT = "a-salt-for-the-role-matrix-0123456789"
TEAM_A, TEAM_B = "team-a", "team-b"
USER_X = "u-x"  # an internal user of team B: "the other user"
USER_PAM = "u-pam"  # a proxy_admin_viewer member of team A
PROXY_ADMIN, PROXY_ADMIN_VIEWER = "proxy_admin", "proxy_admin_viewer"
INTERNAL_USER, INTERNAL_USER_VIEWER = "internal_user", "internal_user_viewer"


@dataclass(frozen=True)
class Role:
    name: str
    proxy_role: str | None = None  # the user's role; proxy_admin for the master key; None: no user
    master: bool = False
    team_role: str | None = None  # its user's role in team A: "admin", "user" or None
    key_team: str | None = None  # its key's team
    key: str | None = None  # no_key / unknown_key: what is sent (None: no header)
    authenticated: bool = True

    @property
    def has_user(self) -> bool:
        return self.proxy_role is not None and not self.master

    @property
    def reads_all(self) -> bool:
        return self.proxy_role in (PROXY_ADMIN, PROXY_ADMIN_VIEWER)

    @property
    def writes_all(self) -> bool:
        return self.proxy_role == PROXY_ADMIN

    @property
    def manages_own_keys(self) -> bool:
        """An internal user (or proxy admin) makes, edits and deletes its own keys."""
        return self.has_user and self.proxy_role in (PROXY_ADMIN, INTERNAL_USER)

    @property
    def team_admin(self) -> bool:
        return self.team_role == "admin"

    @property
    def user_id(self) -> str | None:
        return f"u-{self.name}" if self.has_user else None


ROLES = (
    Role("master", PROXY_ADMIN, master=True, key=MASTER),
    Role("proxy_admin", PROXY_ADMIN),
    Role("proxy_admin_viewer", PROXY_ADMIN_VIEWER),
    Role("internal_user", INTERNAL_USER),
    Role("internal_user_viewer", INTERNAL_USER_VIEWER),
    Role("team_admin", INTERNAL_USER, team_role="admin"),
    Role("team_member", INTERNAL_USER, team_role="user", key_team=TEAM_A),
    Role("no_user", None, key_team=TEAM_A),
    Role("no_key", authenticated=False),
    Role("unknown_key", key="sk-not-a-key-of-this-gateway-" + "u" * 20, authenticated=False),
)
BY_NAME = {role.name: role for role in ROLES}


@dataclass
class Scene:
    """Who calls and what a case acts on: ids of keys, teams and users (never the keys, but the caller's)."""

    caller: str | None  # the key sent
    user_id: str | None  # the caller's user
    tag: str = "read"  # names what a write case makes, unique in the world
    own_key: str | None = None  # key id: a key of the caller's user (no user: the caller's own key)
    team_key: str | None = None  # a key of team A, of no user
    other_team_key: str | None = None  # a key of team B, of no user
    other_user_key: str | None = None  # a key of u-x, in no team
    own_team: str | None = None  # a team the caller's user has the role's relation to (team A when reading)
    other_team: str | None = None  # a team the caller has nothing to do with (team B when reading)
    other_user: str | None = None  # a user that is not the caller (u-x when reading)


@dataclass
class World:
    """The seeded rows, as the test reads them back."""

    read_scenes: dict[str, Scene] = field(default_factory=dict)  # role name -> its scene for reads
    write_scenes: dict[tuple[str, str], Scene] = field(default_factory=dict)  # (case id, role) -> scene
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)  # key id -> {"team_id", "user_id"}, read world
    spend: list[dict[str, Any]] = field(default_factory=list)  # the spend rows: request_id, api_key, user, team_id, spend


@dataclass(frozen=True)
class Needs:
    """What a write case acts on (made for each role that runs it)."""

    own_key: bool = False
    team_key: bool = False
    other_team_key: bool = False
    other_user_key: bool = False
    own_team: bool = False
    other_team: bool = False
    other_user: bool = False
    other_user_in_teams: bool = False  # the other user is a member of own_team / other_team already


class Seeder:
    """Rows for one database, added in memory and written in one transaction."""

    def __init__(self) -> None:
        self.hasher = KeyHasher(SALT.encode())
        self.rows: list[Any] = []
        self.members: list[TeamMembership] = []
        self._n = itertools.count()
        self.old = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)  # throwaways list after the read world

    def n(self) -> int:
        return next(self._n)

    def team(self, team_id: str) -> str:
        self.rows.append(Team(team_id=team_id, team_alias=f"alias {team_id}", created_at=self.old))
        return team_id

    def user(self, user_id: str, role: str, teams: dict[str, str] | None = None) -> str:
        self.rows.append(User(user_id=user_id, user_role=role, user_email=f"{user_id}@role-matrix.example",
                              created_at=self.old))
        for team_id, team_role in (teams or {}).items():
            self.member(team_id, user_id, team_role)
        return user_id

    def member(self, team_id: str, user_id: str, role: str) -> None:
        self.members.append(TeamMembership(team_id=team_id, user_id=user_id, role=role))

    def key(self, *, user_id: str | None = None, team_id: str | None = None, secret: str | None = None,
            created_at: dt.datetime | None = None) -> tuple[str, str]:
        """(the key, its id)."""
        secret = secret or generate_key()
        token = self.hasher.hash(secret)
        self.rows.append(VerificationToken(token=token, key_prefix=display_prefix(secret), team_id=team_id,
                                           user_id=user_id, created_at=created_at or self.old))
        return secret, token

    def caller_for(self, role: Role, tag: str) -> Scene:
        """A caller like ``role``'s: a clone of its user and a key like its key (the master key as it is)."""
        if not role.authenticated or role.master:
            return Scene(caller=role.key, user_id=None)
        user_id = None
        if role.has_user:
            assert role.proxy_role is not None
            user_id = self.user(f"u-{role.name}-{tag}", role.proxy_role,
                                {TEAM_A: role.team_role} if role.team_role else None)
        secret, token = self.key(user_id=user_id, team_id=role.key_team)
        scene = Scene(caller=secret, user_id=user_id)
        if not role.has_user:
            scene.own_key = token
        return scene

    def scene(self, role: Role, tag: str, needs: Needs) -> Scene:
        scene = self.caller_for(role, tag)
        scene.tag = tag
        if needs.other_user or needs.other_user_in_teams:
            scene.other_user = self.user(f"u-other-{tag}-{self.n()}", INTERNAL_USER)
        if needs.own_key and scene.own_key is None:
            scene.own_key = self.key(user_id=scene.user_id)[1]  # master: a key of no user
        if needs.team_key:
            scene.team_key = self.key(team_id=TEAM_A)[1]
        if needs.other_team_key:
            scene.other_team_key = self.key(team_id=TEAM_B)[1]
        if needs.other_user_key:
            scene.other_user_key = self.key(user_id=USER_X)[1]
        if needs.own_team:
            scene.own_team = self.team(f"t-own-{tag}-{self.n()}")
            if scene.user_id is not None and role.team_role is not None:
                self.member(scene.own_team, scene.user_id, role.team_role)
            if needs.other_user_in_teams and scene.other_user:
                self.member(scene.own_team, scene.other_user, "user")
        if needs.other_team:
            scene.other_team = self.team(f"t-other-{tag}-{self.n()}")
            self.member(scene.other_team, USER_X, "user")
            if needs.other_user_in_teams and scene.other_user:
                self.member(scene.other_team, scene.other_user, "user")
        return scene


def seed(seeder: Seeder, world: World, writes: dict[str, Needs]) -> None:
    """The read world, then a scene for each (write case, role)."""
    now = dt.datetime.now(dt.UTC)
    seeder.team(TEAM_A)
    seeder.team(TEAM_B)
    seeder.user(USER_X, INTERNAL_USER, {TEAM_B: "user"})
    seeder.user(USER_PAM, PROXY_ADMIN_VIEWER, {TEAM_A: "user"})
    _, team_key = seeder.key(team_id=TEAM_A, created_at=now)
    _, other_team_key = seeder.key(team_id=TEAM_B, created_at=now)
    _, other_user_key = seeder.key(user_id=USER_X, created_at=now)
    world.keys = {team_key: {"team_id": TEAM_A, "user_id": None},
                  other_team_key: {"team_id": TEAM_B, "user_id": None},
                  other_user_key: {"team_id": None, "user_id": USER_X}}
    for role in ROLES:
        scene = Scene(caller=role.key, user_id=role.user_id, team_key=team_key, other_team_key=other_team_key,
                      other_user_key=other_user_key, own_team=TEAM_A, other_team=TEAM_B, other_user=USER_X)
        if role.authenticated and not role.master:
            if role.has_user:
                assert role.proxy_role is not None and role.user_id is not None
                seeder.user(role.user_id, role.proxy_role, {TEAM_A: role.team_role} if role.team_role else None)
            scene.caller, scene.own_key = seeder.key(user_id=role.user_id, team_id=role.key_team, created_at=now)
            world.keys[scene.own_key] = {"team_id": role.key_team, "user_id": role.user_id}
        world.read_scenes[role.name] = scene
    for case_id, needs in writes.items():
        for role in ROLES:
            world.write_scenes[(case_id, role.name)] = seeder.scene(role, f"{len(world.write_scenes)}", needs)
    for i, (token, owner) in enumerate(world.keys.items()):
        world.spend.append({"request_id": f"matrix-{i}", "api_key": token, "user": owner["user_id"],
                            "team_id": owner["team_id"], "spend": 0.25 * (i + 1)})


async def write_world(url: str, writes: dict[str, Needs]) -> World:
    """A migrated database at ``url`` holding the world (and nothing else)."""
    seeder, world = Seeder(), World()
    seed(seeder, world, writes)
    db = await open_database(url)
    try:
        async with db.sessions() as session:
            session.add_all([row for row in seeder.rows if isinstance(row, Team | User)])
            await session.flush()
            session.add_all([row for row in seeder.rows if isinstance(row, VerificationToken)])
            session.add_all(seeder.members)
            await session.commit()
        moment = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
        rows = [normalise_row({**row, "model_group": "jev", "model": "typesafe/jev-latest",
                               "startTime": moment, "endTime": moment, "status": 200, "call_type": "asystemone"})
                for row in world.spend]
        assert await insert_spend_rows(db, rows) == len(rows)
        async with db.engine.connect() as conn:  # the read world is what the database holds
            count = (await conn.execute(sa.select(sa.func.count()).select_from(VerificationToken))).scalar_one()
        assert count >= len(world.keys)
    finally:
        await db.close()
    return world
