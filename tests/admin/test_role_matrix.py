"""The role matrix (issue 20 item 2): every admin route by every role, on SQLite and PostgreSQL.

One table (``CASES``): for each admin route, the targets it is called on (the caller's own key or user,
its team, another team, another user, ...), the request, and which roles may do it
(``docs``: /work/notes/users_spec.md, LiteLLM's roles). Each (role, case) is one HTTP request to a real
gateway (uvicorn, one per database per module, on rows written before it starts: ``role_world.py``):
allowed is a 2xx, and for a list only the rows the role may see (checked row by row); refused is a 403
``permission_error``; no key or an unknown key is a 401. Reads act on one shared world, writes on
records made for each (case, role) alone. ``test_every_admin_route_is_in_the_matrix`` fails when the
app has an admin route the table does not cover.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.admin.role_rules import (
    Check,
    Rule,
    anyone,
    deployments,
    has_user,
    key_is,
    keys_listed,
    manages_own,
    not_master,
    own_key_in_team,
    reads_all,
    reads_own_key,
    reads_team,
    reads_team_keys,
    report_total,
    spend_rows,
    team_info_of,
    team_users,
    teams_listed,
    teams_v2,
    the_caller,
    user_is,
    users_are,
    users_listed,
    with_user,
    writes_all,
    writes_team_keys,
)
from tests.admin.role_world import (
    BY_NAME,
    MASTER,
    PROXY_ADMIN,
    ROLES,
    SALT,
    TEAM_A,
    TEAM_B,
    USER_PAM,
    USER_X,
    Needs,
    Role,
    Scene,
    World,
    write_world,
)
from tests.db.conftest import PG_SERVER, PgDatabases

ADMIN_PREFIXES = ("/key/", "/team/", "/v2/team/", "/user/", "/spend/", "/global/spend/", "/model/", "/v1/model/",
                  "/model_group/")


@dataclass(frozen=True)
class Case:
    method: str
    path: str
    target: str
    allowed: Rule
    params: Callable[[Scene], dict[str, Any]] | None = None
    body: Callable[[Scene], dict[str, Any]] | None = None
    needs: Needs | None = None  # a write: its own caller and records (role_world.Scene)
    check: Check | None = None  # what an allowed answer must hold
    applies: Rule = field(default=lambda role: True)

    @property
    def id(self) -> str:
        return f"{self.method} {self.path} [{self.target}]"


# ---- the table ------------------------------------------------------------------------------------

Body = Callable[[Scene], dict[str, Any]]


def key_of(attr: str, **extra: Any) -> Body:
    return lambda scene: {"key": getattr(scene, attr), **extra}


def keys_of(attr: str) -> Body:
    return lambda scene: {"keys": [getattr(scene, attr)]}


def team_of(attr: str, **extra: Any) -> Body:
    return lambda scene: {"team_id": getattr(scene, attr), **extra}


def teams_of(attr: str) -> Body:
    return lambda scene: {"team_ids": [getattr(scene, attr)]}


def team_and_other_user(attr: str, fields: Callable[[str | None], dict[str, Any]]) -> Body:
    return lambda scene: {"team_id": getattr(scene, attr), **fields(scene.other_user)}


KEY_TARGETS = (("own", "own_key", manages_own), ("team", "team_key", writes_team_keys),
               ("other_team", "other_team_key", writes_all), ("other_user", "other_user_key", writes_all))
KEY_NEEDS = {"own": Needs(own_key=True), "team": Needs(team_key=True), "other_team": Needs(other_team_key=True),
             "other_user": Needs(other_user_key=True)}
TEAM_NEEDS = {"own_team": Needs(own_team=True), "other_team": Needs(other_team=True)}
ALL_ROWS = {"size": 100, "return_full_object": "true"}


def _reads() -> list[Case]:
    cases = [
        Case("GET", "/key/info", "own", reads_own_key, params=lambda s: {"key": s.own_key}, check=key_is("own_key"),
             applies=not_master),
        Case("GET", "/key/info", "team", reads_team, params=lambda s: {"key": s.team_key}, check=key_is("team_key")),
        Case("GET", "/key/info", "other_team", reads_all, params=lambda s: {"key": s.other_team_key},
             check=key_is("other_team_key")),
        Case("GET", "/key/info", "other_user", reads_all, params=lambda s: {"key": s.other_user_key},
             check=key_is("other_user_key")),
        Case("GET", "/key/list", "all", has_user, params=lambda s: ALL_ROWS,
             check=keys_listed(lambda r, s, row: True)),
        Case("GET", "/key/list", "team", reads_team_keys, params=lambda s: {**ALL_ROWS, "team_id": TEAM_A},
             check=keys_listed(lambda r, s, row: row.get("team_id") == TEAM_A)),
        Case("GET", "/key/list", "other_team", reads_all, params=lambda s: {**ALL_ROWS, "team_id": TEAM_B},
             check=keys_listed(lambda r, s, row: row.get("team_id") == TEAM_B)),
        Case("GET", "/key/list", "own_user", has_user, params=lambda s: {**ALL_ROWS, "user_id": s.user_id},
             check=keys_listed(lambda r, s, row: row.get("user_id") == s.user_id), applies=with_user),
        Case("GET", "/key/list", "other_user", reads_all, params=lambda s: {**ALL_ROWS, "user_id": USER_X},
             check=keys_listed(lambda r, s, row: row.get("user_id") == USER_X)),
        Case("GET", "/team/info", "own_team", reads_team, params=lambda s: {"team_id": s.own_team},
             check=team_info_of("own_team")),
        Case("GET", "/team/info", "other_team", reads_all, params=lambda s: {"team_id": s.other_team},
             check=team_info_of("other_team")),
        Case("GET", "/team/list", "all", reads_all, check=teams_listed),
        Case("GET", "/v2/team/list", "all", anyone, params=lambda s: {"page_size": 100}, check=teams_v2(False)),
        Case("GET", "/v2/team/list", "other_team", anyone, params=lambda s: {"team_id": TEAM_B},
             check=teams_v2(True)),
        Case("GET", "/user/info", "self_call", anyone, check=the_caller),
        Case("GET", "/user/info", "own", has_user, params=lambda s: {"user_id": s.user_id}, check=user_is("user_id"),
             applies=with_user),
        Case("GET", "/user/info", "team_member", lambda r: r.reads_all or r.name == "team_member",
             params=lambda s: {"user_id": "u-team_member"}, check=lambda r, s, w, b: None),
        Case("GET", "/user/info", "other_user", reads_all, params=lambda s: {"user_id": s.other_user},
             check=user_is("other_user")),
        Case("GET", "/user/list", "all", reads_all, params=lambda s: {"page_size": 100}, check=users_listed),
        Case("GET", "/user/list", "some", reads_all, params=lambda s: {"user_ids": f"u-internal_user,{USER_X}"},
             check=users_are("u-internal_user", USER_X)),
        Case("GET", "/user/list", "team", reads_all, params=lambda s: {"team": TEAM_A, "page_size": 100},
             check=team_users),
        Case("GET", "/global/spend/report", "all", has_user, check=report_total(lambda s, row: True)),
        Case("GET", "/global/spend/report", "team", reads_team, params=lambda s: {"team_id": TEAM_A},
             check=report_total(lambda s, row: row["team_id"] == TEAM_A)),
        Case("GET", "/global/spend/report", "other_team", reads_all, params=lambda s: {"team_id": TEAM_B},
             check=report_total(lambda s, row: row["team_id"] == TEAM_B)),
        Case("GET", "/global/spend/report", "own_user", has_user, params=lambda s: {"user_id": s.user_id},
             check=report_total(lambda s, row: row["user"] == s.user_id), applies=with_user),
        Case("GET", "/global/spend/report", "other_user", reads_all, params=lambda s: {"user_id": USER_X},
             check=report_total(lambda s, row: row["user"] == USER_X)),
    ]
    for path, paged in (("/spend/logs", False), ("/spend/logs/v2", True), ("/spend/logs/ui", True)):
        cases += [
            Case("GET", path, "all", has_user, check=spend_rows(lambda s, row: True, paged)),
            Case("GET", path, "team", reads_team, params=lambda s: {"team_id": TEAM_A},
                 check=spend_rows(lambda s, row: row["team_id"] == TEAM_A, paged)),
            Case("GET", path, "other_team", reads_all, params=lambda s: {"team_id": TEAM_B},
                 check=spend_rows(lambda s, row: row["team_id"] == TEAM_B, paged)),
            Case("GET", path, "own_user", has_user, params=lambda s: {"user_id": s.user_id},
                 check=spend_rows(lambda s, row: row["user"] == s.user_id, paged), applies=with_user),
            Case("GET", path, "other_user", reads_all, params=lambda s: {"user_id": USER_X},
                 check=spend_rows(lambda s, row: row["user"] == USER_X, paged)),
            Case("GET", path, "own_key", has_user, params=lambda s: {"api_key": s.own_key},
                 check=spend_rows(lambda s, row: row["api_key"] == s.own_key, paged), applies=not_master),
            Case("GET", path, "team_key", reads_team, params=lambda s: {"api_key": s.team_key},
                 check=spend_rows(lambda s, row: row["api_key"] == s.team_key, paged)),
            Case("GET", path, "other_user_key", reads_all, params=lambda s: {"api_key": s.other_user_key},
                 check=spend_rows(lambda s, row: row["api_key"] == s.other_user_key, paged)),
        ]
    for path in ("/model/info", "/v1/model/info", "/model_group/info"):
        cases.append(Case("GET", path, "all", anyone, check=deployments))
    return cases


def _writes() -> list[Case]:
    cases = [
        Case("POST", "/key/generate", "own", manages_own, body=lambda s: {}),
        Case("POST", "/key/generate", "own_team", own_key_in_team, body=lambda s: {"team_id": TEAM_A}),
        Case("POST", "/key/generate", "other_team", writes_all, body=lambda s: {"team_id": TEAM_B}),
        Case("POST", "/key/generate", "other_user", writes_all, body=lambda s: {"user_id": USER_X}),
        Case("POST", "/key/generate", "team_member", writes_team_keys,
             body=lambda s: {"team_id": TEAM_A, "user_id": "u-team_member"}),
        Case("POST", "/key/generate", "team_admin_viewer_user", writes_all,
             body=lambda s: {"team_id": TEAM_A, "user_id": USER_PAM}),
        Case("POST", "/key/generate", "spend", writes_all, body=lambda s: {"spend": 1.5}),
        Case("POST", "/key/update", "own_spend", writes_all, body=lambda s: {"key": s.own_key, "spend": 2.0},
             needs=KEY_NEEDS["own"]),
        Case("POST", "/key/update", "own_to_other_user", writes_all,
             body=lambda s: {"key": s.own_key, "user_id": USER_X}, needs=KEY_NEEDS["own"]),
        Case("POST", "/key/update", "own_to_own_team", own_key_in_team,
             body=lambda s: {"key": s.own_key, "team_id": TEAM_A}, needs=KEY_NEEDS["own"]),
        Case("POST", "/key/update", "own_to_other_team", writes_all,
             body=lambda s: {"key": s.own_key, "team_id": TEAM_B}, needs=KEY_NEEDS["own"]),
        Case("POST", "/key/update", "team_to_other_team", writes_all,
             body=lambda s: {"key": s.team_key, "team_id": TEAM_B}, needs=KEY_NEEDS["team"]),
        Case("POST", "/key/update", "team_to_member", writes_team_keys,
             body=lambda s: {"key": s.team_key, "user_id": "u-team_member"}, needs=KEY_NEEDS["team"]),
        Case("POST", "/key/update", "team_to_admin_viewer_user", writes_all,
             body=lambda s: {"key": s.team_key, "user_id": USER_PAM}, needs=KEY_NEEDS["team"]),
    ]
    for target, attr, rule in KEY_TARGETS:
        cases += [
            Case("POST", "/key/update", target, rule,
                 body=key_of(attr, max_budget=10.0), needs=KEY_NEEDS[target]),
            Case("POST", "/key/block", target, rule, body=key_of(attr), needs=KEY_NEEDS[target]),
            Case("POST", "/key/unblock", target, rule, body=key_of(attr), needs=KEY_NEEDS[target]),
            Case("POST", "/key/regenerate", target, rule, body=key_of(attr), needs=KEY_NEEDS[target]),
            Case("POST", "/key/delete", target, rule, body=keys_of(attr), needs=KEY_NEEDS[target]),
        ]
    cases += [
        Case("POST", "/team/new", "new", writes_all, body=lambda s: {"team_alias": f"new team {s.tag}"}),
        Case("POST", "/user/new", "new", writes_all, body=lambda s: {"user_id": f"new-{s.tag}", "auto_create_key": False}),
        Case("POST", "/user/new", "with_team_and_key", writes_all,
             body=lambda s: {"user_id": f"new-{s.tag}", "teams": [{"team_id": TEAM_A, "user_role": "user"}]}),
        Case("POST", "/user/new", "proxy_admin", writes_all,
             body=lambda s: {"user_id": f"new-{s.tag}", "user_role": PROXY_ADMIN, "auto_create_key": False}),
        Case("POST", "/user/update", "own", writes_all, body=lambda s: {"user_id": s.user_id or USER_X,
                                                                       "user_alias": "renamed"},
             needs=Needs(), applies=with_user),
        Case("POST", "/user/update", "own_promoted", writes_all,
             body=lambda s: {"user_id": s.user_id or USER_X, "user_role": PROXY_ADMIN}, needs=Needs(),
             applies=with_user),
        Case("POST", "/user/update", "other_user", writes_all,
             body=lambda s: {"user_id": s.other_user, "user_alias": "renamed"}, needs=Needs(other_user=True)),
        Case("POST", "/user/delete", "own", writes_all, body=lambda s: {"user_ids": [s.user_id or USER_X]},
             needs=Needs(), applies=with_user),
        Case("POST", "/user/delete", "other_user", writes_all, body=lambda s: {"user_ids": [s.other_user]},
             needs=Needs(other_user=True)),
    ]
    for target, needs in TEAM_NEEDS.items():
        attr = target
        with_other = Needs(**{**needs.__dict__, "other_user_in_teams": True})
        cases += [
            Case("POST", "/team/update", target, writes_all,
                 body=team_of(attr, max_budget=5.0), needs=needs),
            Case("POST", "/team/block", target, writes_all, body=team_of(attr), needs=needs),
            Case("POST", "/team/unblock", target, writes_all, body=team_of(attr), needs=needs),
            Case("POST", "/team/member_add", target, writes_all,
                 body=team_and_other_user(attr, lambda user: {"member": {"user_id": user, "role": "user"}}),
                 needs=Needs(**{**needs.__dict__, "other_user": True})),
            Case("POST", "/team/member_update", target, writes_all,
                 body=team_and_other_user(attr, lambda user: {"user_id": user, "role": "admin"}),
                 needs=with_other),
            Case("POST", "/team/member_delete", target, writes_all,
                 body=team_and_other_user(attr, lambda user: {"user_id": user}), needs=with_other),
            Case("POST", "/team/delete", target, writes_all, body=teams_of(attr), needs=needs),
        ]
    return [case if case.needs is not None else Case(**{**case.__dict__, "needs": Needs()}) for case in cases]


CASES = _reads() + _writes()
WRITES = {case.id: case.needs for case in CASES if case.needs is not None}
assert len({case.id for case in CASES}) == len(CASES), "two cases of one id"
PARAMS = [pytest.param(case, role, id=f"{role.name}-{case.method} {case.path} {case.target}")
          for case in CASES for role in ROLES if case.applies(role)]


# ---- the gateways ---------------------------------------------------------------------------------

@dataclass
class Matrix:
    url: str
    world: World
    http: httpx.Client
    app: Any


def _config(database_url: str) -> dict[str, Any]:
    return {"model_list": [{"model_name": "jev", "litellm_params": {
                "model": "typesafe/jev-latest", "api_key": "ts-role-matrix", "api_base": "http://127.0.0.1:9/v1"}}],
            "general_settings": {"master_key": MASTER, "salt_key": SALT, "database_url": database_url}}


@pytest.fixture(autouse=True)
def data_dir() -> None:
    """No data folder per case (tests/admin/conftest.py's): each gateway has its own for the module."""


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def matrix(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Matrix]:
    from tests.conftest import start_gateway

    folder = tmp_path_factory.mktemp(f"role-matrix-{request.param}")
    databases = PgDatabases(PG_SERVER)
    url = f"sqlite:///{folder / 'gateway.db'}" if request.param == "sqlite" else asyncio.run(databases.create())
    try:
        world = asyncio.run(write_world(url, WRITES))
        with pytest.MonkeyPatch.context() as env:  # the gateway's data folder (outbox), for as long as it runs
            env.setenv("DECISIONS_GATEWAY_DATA_DIR", str(folder / "data"))
            running = start_gateway(_config(url))
            try:
                with httpx.Client(base_url=running.url, timeout=30) as http:
                    yield Matrix(url, world, http, running.app)
            finally:
                running.stop()
    finally:
        if databases.created:
            asyncio.run(databases.drop_all())


def _send(matrix: Matrix, case: Case, scene: Scene) -> httpx.Response:
    headers = {"Authorization": f"Bearer {scene.caller}"} if scene.caller else {}
    return matrix.http.request(case.method, case.path, headers=headers,
                               params=case.params(scene) if case.params else None,
                               json=case.body(scene) if case.body else None)


@pytest.mark.parametrize(("case", "role"), PARAMS)
def test_role_matrix(matrix: Matrix, case: Case, role: Role) -> None:
    world = matrix.world
    scene = world.write_scenes[(case.id, role.name)] if case.needs is not None else world.read_scenes[role.name]
    answer = _send(matrix, case, scene)
    said = f"{role.name} {case.id}: {answer.status_code} {answer.text[:600]}"
    if not role.authenticated:
        assert answer.status_code == 401 and answer.json()["error"]["type"] == "authentication_error", said
        return
    if not case.allowed(role):
        assert answer.status_code == 403, said
        assert answer.json()["error"]["type"] == "permission_error", said
        asked = f"{case.params(scene) if case.params else ''} {case.body(scene) if case.body else ''}"
        leaked = [token for token in world.keys if token in answer.text and token not in asked]
        assert not leaked, f"{said}\nthe refusal shows other keys' ids"
        return
    assert 200 <= answer.status_code < 300, said
    if case.check is not None:
        try:
            case.check(role, scene, world, answer.json())
        except AssertionError as exc:
            raise AssertionError(f"{said}\n{exc}") from None


def test_every_admin_route_is_in_the_matrix(matrix: Matrix) -> None:
    """A new admin route fails here until the matrix says who may call it."""
    served: set[tuple[str, str]] = set()

    def walk(routes: list[Any]) -> None:
        for route in routes:
            inner = getattr(route, "original_router", None)  # an included router (FastAPI 0.165)
            if inner is not None:
                walk(inner.routes)
            if getattr(route, "path", "").startswith(ADMIN_PREFIXES):
                served.update((method, route.path) for method in getattr(route, "methods", None) or ()
                              if method != "HEAD")

    walk(matrix.app.routes)
    covered = {(case.method, case.path) for case in CASES}
    assert not served - covered, f"admin routes the role matrix does not cover: {sorted(served - covered)}"
    assert not covered - served, f"routes in the matrix the gateway does not serve: {sorted(covered - served)}"
    assert {role.name for role in ROLES} == set(BY_NAME)
