"""``decisions-gateway keys|teams|spend``: the admin operations from a shell, straight on the database.

    decisions-gateway keys create [--team ID-OR-ALIAS] [--budget USD] [--budget-duration 30d] [--rpm N]
                                  [--tpm N] [--parallel N] [--alias NAME] [--models a,b] [--duration 30d]
    decisions-gateway keys list [--team ID] [--page N] [--size N] [--json]
    decisions-gateway keys block|unblock|delete ALIAS-OR-KEY-OR-ID
    decisions-gateway teams create [--alias NAME] [--id ID] [--budget USD] [--budget-duration 1mo] [--rpm N]
                                   [--tpm N] [--models a,b]
    decisions-gateway teams list [--json]
    decisions-gateway spend report [--group-by day|model|model_group|team|key] [--start DATE] [--end DATE]
                                   [--key KEY-OR-ID] [--team ID] [--json]

Every command takes ``--config PATH`` (before or after the action): the database is its
``general_settings.database_url`` (the data directory's SQLite file without one), as for
``decisions-gateway migrate``, and keys are hashed with the same server secret as the gateway's
(``general_settings.salt_key``, ``DECISIONS_GATEWAY_SALT_KEY`` or the data directory's
``salt.key``). A change is announced to running gateways through Redis when the config has one
(``auth:version``); without Redis they see it within a second anyway (their cache's ttl).

``keys create`` prints the key once; nothing else prints a key. Exit status: 0; 2 for a usage,
config or validation error; 1 for a refused operation (unknown key, alias in use) or a database
that cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

# Only argparse at import: ``--help`` and a usage error need nothing else. What an action needs (pydantic,
# SQLAlchemy, the key store) is imported when it runs, never the web app, the backend or torch
# (tests/gateway/test_cli_imports.py).
if TYPE_CHECKING:
    from gateway.admin import schemas
    from gateway.admin.service import Admin


class Usage(Exception):
    """A mistake in the command line or the config: exit status 2."""


# ---- entry points -------------------------------------------------------------------------------


def keys_main(argv: Sequence[str] | None = None) -> int:
    parser = _parser("keys", "Virtual keys: create (printed once), list, block, unblock, delete.")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = _action(sub, "create", "make a key and print it (once)")
    create.add_argument("--team", help="team id or alias")
    create.add_argument("--alias", help="a unique name for the key")
    _limit_options(create)
    create.add_argument("--duration", help="lifetime, e.g. 30d (default: never expires)")
    listing = _action(sub, "list", "list keys (ids and prefixes, never the keys)")
    listing.add_argument("--team", help="only this team's keys (team id)")
    listing.add_argument("--page", type=int, default=1)
    listing.add_argument("--size", type=int, default=50)
    listing.add_argument("--json", action="store_true", help="print JSON")
    for name, what in (("block", "refuse a key everywhere"), ("unblock", "accept a blocked key again"),
                       ("delete", "delete a key")):
        _action(sub, name, what).add_argument("ref", metavar="ALIAS-OR-KEY", help="the key's alias, the key or its id")
    return _main(parser, argv, _keys)


def teams_main(argv: Sequence[str] | None = None) -> int:
    parser = _parser("teams", "Teams: create, list.")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = _action(sub, "create", "make a team")
    create.add_argument("--alias", help="the team's name")
    create.add_argument("--id", dest="team_id", help="the team id (default: a UUID)")
    _limit_options(create)
    _action(sub, "list", "list teams").add_argument("--json", action="store_true", help="print JSON")
    return _main(parser, argv, _teams)


def spend_main(argv: Sequence[str] | None = None) -> int:
    parser = _parser("spend", "Spend reports from the daily roll-ups.")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    report = _action(sub, "report", "spend per day, model, model group, team or key")
    report.add_argument("--group-by", default="day", choices=["day", "model", "model_group", "team", "key"])
    report.add_argument("--start", type=date.fromisoformat, help="first day, YYYY-MM-DD (default: 30 days ago)")
    report.add_argument("--end", type=date.fromisoformat, help="last day, YYYY-MM-DD (default: today, UTC)")
    report.add_argument("--key", help="only this key (the key or its id)")
    report.add_argument("--team", help="only this team (team id)")
    report.add_argument("--json", action="store_true", help="print JSON")
    return _main(parser, argv, _spend)


# ---- the actions --------------------------------------------------------------------------------


async def _keys(args: argparse.Namespace, admin: Admin) -> int:
    from gateway.admin import schemas, service
    from gateway.auth import store

    if args.action == "create":
        fields = _limit_fields(args)
        fields.update(_given(key_alias=args.alias, duration=args.duration))
        if args.team:
            fields["team_id"] = await _team_id(admin, args.team)
        key, record = await service.create_key(admin, _validate(schemas.GenerateKeyRequest, fields))
        print(key)
        print(f"id {record.token}  alias {record.key_alias or '-'}  team {record.team_id or '-'}  "
              "(the key is shown this once: keep it)", file=sys.stderr)
        return 0
    if args.action == "list":
        if args.page < 1 or not 1 <= args.size <= schemas.MAX_PAGE_SIZE:
            raise Usage(f"--page from 1, --size from 1 to {schemas.MAX_PAGE_SIZE}")
        records, total = await store.list_keys(admin.db, page=args.page, size=args.size, team_id=args.team)
        rows = [service.key_info(r).model_dump(mode="json") for r in records]
        _print(rows, args.json, ("token", "key_name", "key_alias", "team_id", "spend", "max_budget", "rpm_limit",
                                 "blocked", "expires"), f"{len(rows)} of {total} keys (page {args.page})")
        return 0
    ref = args.ref
    if args.action == "delete":
        record = await service.find_key(admin, ref, by_alias=True)
        deleted = await service.delete_keys(admin, schemas.DeleteKeysRequest(keys=[record.token]))
        print(f"deleted key {deleted[0] if deleted else record.token} ({record.key_alias or 'no alias'})")
        return 0
    record = await service.set_key_blocked(admin, ref, args.action == "block", by_alias=True)
    print(f"key {record.token} ({record.key_alias or 'no alias'}) {'blocked' if record.blocked else 'unblocked'}")
    return 0


async def _teams(args: argparse.Namespace, admin: Admin) -> int:
    from gateway.admin import schemas, service
    from gateway.auth import store

    if args.action == "create":
        fields = _limit_fields(args)
        fields.update(_given(team_alias=args.alias, team_id=args.team_id))
        record = await service.create_team(admin, _validate(schemas.NewTeamRequest, fields))
        print(f"team {record.team_id} ({record.team_alias or 'no alias'})")
        return 0
    records, total = await store.list_teams(admin.db, page=1, size=schemas.MAX_PAGE_SIZE)
    rows = [service.team_info(r).model_dump(mode="json") for r in records]
    _print(rows, args.json, ("team_id", "team_alias", "spend", "max_budget", "rpm_limit", "tpm_limit", "blocked"),
           f"{len(rows)} of {total} teams")
    return 0


async def _spend(args: argparse.Namespace, admin: Admin) -> int:
    from gateway.db import queries
    from gateway.spend.cost import shown_cost

    end = args.end or datetime.now(UTC).date()
    start = args.start or end - timedelta(days=29)
    if start > end:
        raise Usage("--start is after --end")
    token = admin.token_of(args.key) if args.key else None
    if args.key and token is None:
        raise Usage("--key: give the key (sk-...) or its id (64 hex digits)")
    entries = await queries.spend_report(admin.db, start_date=start, end_date=end, group_by=args.group_by,
                                         api_key=token, team_id=args.team)
    columns = {"day": ("date",), "model": ("model",), "model_group": ("model_group",),
               "team": ("team_id", "team_alias"), "key": ("api_key", "key_alias")}[args.group_by]
    rows = [{**e, "spend": shown_cost(e["spend"]), **({"date": str(e["date"])} if "date" in e else {})}
            for e in entries]
    _print(rows, args.json, (*columns, "spend", "requests", "failed_requests", "prompt_tokens", "completion_tokens"),
           f"spend {start} .. {end} by {args.group_by}: ${sum(e['spend'] for e in entries):.6f}")
    return 0


# ---- plumbing -----------------------------------------------------------------------------------


def _parser(name: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"decisions-gateway {name}", description=description)
    parser.add_argument("--config", "-c", metavar="PATH", help="LiteLLM-style YAML config (its database_url)")
    return parser


def _action(sub: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    action: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=help_text)
    action.add_argument("--config", "-c", metavar="PATH", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return action


def _limit_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--budget", type=float, help="max budget, USD")
    parser.add_argument("--budget-duration", help="budget period, e.g. 1d, 30d, 1mo")
    parser.add_argument("--rpm", type=int, help="requests per minute")
    parser.add_argument("--tpm", type=int, help="tokens per minute")
    parser.add_argument("--parallel", type=int, help="requests at once")
    parser.add_argument("--models", help="comma-separated model groups (default: all)")
    parser.add_argument("--routes", help="comma-separated allowed_routes (default: every decision route)")
    parser.add_argument("--passthrough-routes", help="comma-separated allowed_passthrough_routes, e.g. /typesafe "
                                                     "(default: none; a key takes its team's)")


def _given(**fields: Any) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


def _limit_fields(args: argparse.Namespace) -> dict[str, Any]:
    return _given(max_budget=args.budget, budget_duration=args.budget_duration, rpm_limit=args.rpm,
                  tpm_limit=args.tpm, max_parallel_requests=args.parallel, models=_listed(args.models),
                  allowed_routes=_listed(args.routes), allowed_passthrough_routes=_listed(args.passthrough_routes))


def _listed(text: str | None) -> list[str] | None:
    return [item.strip() for item in text.split(",") if item.strip()] if text else None


def _validate(model: type[schemas.Strict], fields: dict[str, Any]) -> Any:
    from pydantic import ValidationError

    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()]
        raise Usage("; ".join(problems)) from None


async def _team_id(admin: Admin, team: str) -> str:
    from gateway.auth import store

    if await store.get_team(admin.db, team) is not None:
        return team
    found = await store.teams_by_alias(admin.db, team)
    if len(found) == 1:
        return found[0].team_id
    raise Usage(f"--team: {'several teams are' if found else 'no team is'} called {team!r}; give the team id")


def _print(rows: list[dict[str, Any]], as_json: bool, columns: Sequence[str], summary: str) -> None:
    if as_json:
        print(json.dumps(rows, indent=2, default=str))
        return
    table = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in table)]) for i, c in enumerate(columns)]
    for line in ([list(columns)] + table):
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())
    print(summary, file=sys.stderr)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6f}".rstrip("0").rstrip(".") or "0"
    return str(value)


def _main(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
          action: Callable[[argparse.Namespace, Admin], Awaitable[int]]) -> int:
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    import asyncio

    from translators.errors import DecisionError

    prog = parser.prog
    try:
        return asyncio.run(_run(args, action))
    except Usage as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except DecisionError as exc:
        print(f"{prog}: {exc.message}", file=sys.stderr)
        return 1
    except Exception as exc:  # the database is unreachable, a migration failed: one line, no URL, no key
        print(f"{prog}: {type(exc).__name__}: {_first_line(exc)}", file=sys.stderr)
        return 1


async def _run(args: argparse.Namespace, action: Callable[[argparse.Namespace, Admin], Awaitable[int]]) -> int:
    async with _opened(args.config) as admin:
        return await action(args, admin)


@asynccontextmanager
async def _opened(config_path: str | None) -> AsyncIterator[Admin]:
    from gateway.admin.service import Admin
    from gateway.auth.cache import KeyCache
    from gateway.auth.keys import SALT_ENV, SALT_FILE, KeyHasher, load_secret
    from gateway.config.errors import ConfigError
    from gateway.config.loader import load_config
    from gateway.config.registry import ModelRegistry
    from gateway.db.engine import (
        DatabaseConfigError,
        auto_migrate_from_settings,
        data_dir,
        database_url_from_settings,
        open_database,
    )
    from gateway.shared_state import redis_url_from_config, state_from_settings

    try:
        config = load_config(config_path)
        general = config.general_settings
        url = database_url_from_settings(general)
        auto_migrate = auto_migrate_from_settings(general)
        redis_url = redis_url_from_config(general, config.router_settings)
    except (ConfigError, DatabaseConfigError, ValueError) as exc:
        raise Usage(f"config error: {exc}") from None
    salt_path = data_dir() / SALT_FILE
    new_salt = not general.get("salt_key") and not os.environ.get(SALT_ENV) and not salt_path.exists()
    hasher = KeyHasher(load_secret(general))
    if new_salt:
        print(f"made a new server secret in {salt_path}: the gateway must read the same one (same "
              f"DECISIONS_GATEWAY_DATA_DIR, or set {SALT_ENV} / general_settings.salt_key for both)", file=sys.stderr)
    db = await open_database(url, auto_migrate=auto_migrate)
    shared = state_from_settings(redis_url) if redis_url else None
    try:  # a change bumps auth:version, so running gateways drop their cached keys (gateway/auth/cache.py)
        yield Admin(db=db, hasher=hasher, changed=KeyCache(shared).changed, registry=ModelRegistry.from_config(config))
    finally:
        await db.close()
        if shared is not None:
            await shared.close()


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""

