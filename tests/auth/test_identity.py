"""Resolving a caller: 401 for no key or an unknown one, 403 for a blocked or expired key or a blocked team,
the master key without limits, models as the key's within the team's; each wire renders the errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.auth.cache import KeyCache
from gateway.auth.errors import AuthenticationError, PermissionDenied
from gateway.auth.identity import Authenticator, check_model_allowed
from gateway.auth.keys import KeyHasher, generate_key
from gateway.auth.records import Entry, Identity, KeyRecord, Limits, TeamRecord, allowed_models
from translators import openai as openai_wire
from translators import systemone as systemone_wire
from translators.errors import DecisionError

MASTER = "sk-master-" + "m" * 20
HASHER = KeyHasher(b"a test secret of some length")


class Table:
    def __init__(self) -> None:
        self.rows: dict[str, Entry] = {}
        self.calls = 0
        self.fail: Exception | None = None

    async def __call__(self, token: str) -> Entry | None:
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        return self.rows.get(token)

    def add(self, key: str, team: TeamRecord | None = None, **fields: object) -> KeyRecord:
        record = KeyRecord(token=HASHER.hash(key), team_id=team.team_id if team else None, **fields)  # type: ignore[arg-type]
        self.rows[record.token] = (record, team, None)
        return record


@pytest.fixture
def table() -> Table:
    return Table()


@pytest.fixture
def auth(table: Table) -> Authenticator:
    return Authenticator(HASHER, MASTER, table, KeyCache(None))


async def test_without_a_master_key_the_gateway_is_open():
    auth = Authenticator(HASHER, None, None, KeyCache(None))
    identity = await auth.resolve(None)
    assert not auth.required and identity == Identity.anonymous() and not identity.limited


async def test_missing_and_unknown_keys_are_401(auth: Authenticator, table: Table):
    with pytest.raises(AuthenticationError) as missing:
        await auth.resolve_headers({})
    assert missing.value.status == 401 and missing.value.code == "missing_api_key"
    key = generate_key()
    with pytest.raises(AuthenticationError) as unknown:
        await auth.resolve(key)
    assert unknown.value.status == 401 and key not in unknown.value.message
    with pytest.raises(AuthenticationError):
        await auth.resolve("x" * 1000)  # never hashed, never looked up
    assert table.calls == 1


async def test_the_master_key_has_no_limits(auth: Authenticator, table: Table):
    identity = await auth.resolve_headers({"authorization": f"Bearer {MASTER}"})
    assert identity.is_master and identity.models is None and not identity.limited
    assert identity.key_hash == HASHER.hash(MASTER)  # spend rows can name it without the key
    assert table.calls == 0
    with pytest.raises(AuthenticationError):
        await auth.resolve(MASTER[:-1])


async def test_a_key_resolves_with_its_team_limits_and_models(auth: Authenticator, table: Table):
    key = generate_key()
    team = TeamRecord(team_id="t1", team_alias="search", models=("a", "b"), limits=Limits(rpm_limit=100))
    table.add(key, team, key_alias="ci", models=("b", "c"), limits=Limits(rpm_limit=10, max_budget=5.0, spend=1.0),
              metadata={"owner": "x"})
    identity = await auth.resolve_headers({"x-api-key": key})
    assert (identity.key_alias, identity.team_id, identity.team_alias) == ("ci", "t1", "search")
    assert identity.models == frozenset({"b"})
    assert identity.key_limits.rpm_limit == 10 and identity.team_limits == team.limits
    assert identity.key_limits.budget_left() == 4.0 and identity.limited
    check_model_allowed(identity, "b")
    with pytest.raises(PermissionDenied) as denied:
        check_model_allowed(identity, "a")
    assert denied.value.status == 403 and denied.value.code == "model_not_allowed"


@pytest.mark.parametrize(("key_models", "team_models", "expected"), [
    ((), (), None), (("a",), (), {"a"}), ((), ("a",), {"a"}), (("a", "b"), ("b", "c"), {"b"}),
    (("a",), ("b",), set()), (("*",), ("b",), {"b"}), (("a",), ("all-proxy-models",), {"a"}),
])
def test_allowed_models(key_models: tuple[str, ...], team_models: tuple[str, ...], expected: set[str] | None):
    result = allowed_models(key_models, team_models)
    assert (result is None) if expected is None else (result == frozenset(expected))


@pytest.mark.parametrize(("setup", "code"), [
    ({"blocked": True}, "key_blocked"),
    ({"expires": datetime.now(UTC) - timedelta(seconds=1)}, "key_expired"),
    ({"team": TeamRecord(team_id="t", blocked=True)}, "team_blocked"),
])
async def test_blocked_expired_and_team_blocked_are_403(auth: Authenticator, table: Table, setup: dict, code: str):
    key = generate_key()
    team = setup.pop("team", None)
    table.add(key, team, key_alias="k", **setup)
    with pytest.raises(PermissionDenied) as denied:
        await auth.resolve(key)
    assert denied.value.status == 403 and denied.value.code == code and denied.value.type == "permission_error"
    assert key not in denied.value.message


async def test_a_key_whose_team_is_gone_is_403(auth: Authenticator, table: Table):
    key = generate_key()
    table.rows[HASHER.hash(key)] = (KeyRecord(token=HASHER.hash(key), team_id="gone"), None, None)
    with pytest.raises(PermissionDenied, match="no longer exists"):
        await auth.resolve(key)


async def test_a_future_expiry_is_fine_and_spend_resets_when_the_period_passed(auth: Authenticator, table: Table):
    key = generate_key()
    past = datetime.now(UTC) - timedelta(minutes=1)
    table.add(key, expires=datetime.now(UTC) + timedelta(days=1),
              limits=Limits(max_budget=1.0, spend=1.0, budget_reset_at=past))
    identity = await auth.resolve(key)
    assert identity.key_limits.current_spend() == 0.0 and identity.key_limits.budget_left() == 1.0


async def test_an_unreachable_database_is_503_and_logs_nothing_of_the_key(auth: Authenticator, table: Table,
                                                                          caplog: pytest.LogCaptureFixture):
    key = generate_key()
    table.fail = ConnectionError(f"cannot reach db while looking up {HASHER.hash(key)}")
    with pytest.raises(DecisionError) as err:
        await auth.resolve(key)
    assert err.value.status == 503
    assert key not in caplog.text and HASHER.hash(key) not in caplog.text and "ConnectionError" in caplog.text


async def test_lookups_are_cached_and_a_change_is_seen_at_once_here(auth: Authenticator, table: Table):
    key = generate_key()
    record = table.add(key, key_alias="k")
    await auth.resolve(key)
    await auth.resolve(key)
    assert table.calls == 1
    table.rows[record.token] = (KeyRecord(token=record.token, blocked=True), None, None)
    await auth.changed()
    with pytest.raises(PermissionDenied):
        await auth.resolve(key)


@pytest.mark.parametrize("wire", [openai_wire, systemone_wire])
def test_each_wire_renders_the_auth_errors(wire):
    from gateway.auth.errors import missing_key, model_not_allowed

    status, body = wire.render_error(missing_key())
    assert status == 401
    status, body = wire.render_error(model_not_allowed("m", ["a"]))
    assert status == 403
    if wire is openai_wire:
        assert body["error"]["type"] == "permission_error" and body["error"]["param"] == "model"
    else:
        assert body["detail"]["error_type"] == "model_not_allowed"
