"""``decisions-gateway keys|teams|spend``: the admin operations from a shell, on the database the gateway reads.

    decisions-gateway keys create [--team ID-OR-ALIAS] [--budget USD] [--budget-duration 30d] [--rpm N]
                                  [--tpm N] [--parallel N] [--alias NAME] [--models a,b] [--duration 30d]
    decisions-gateway keys list [--team ID] [--page N] [--size N] [--json]
    decisions-gateway keys info|block|unblock|delete ALIAS-OR-KEY-OR-ID
    decisions-gateway keys update ALIAS-OR-KEY-OR-ID [--alias NAME] [--team ID-OR-ALIAS] [--budget USD] [--rpm N]
                                  [--tpm N] [--parallel N] [--models a,b] [--duration 30d] ...
    decisions-gateway teams create [--alias NAME] [--id ID] [--budget USD] [--budget-duration 1mo] [--rpm N]
                                   [--tpm N] [--models a,b]
    decisions-gateway teams list [--json]
    decisions-gateway spend report [--group-by day|model|model_group|team|key] [--start DATE] [--end DATE]
                                   [--key KEY-OR-ID] [--team ID] [--json]

Every command works one of two ways, given before or after the action, and refuses to guess
(status 2) when neither is given:

- ``--url URL --api-key KEY`` (or ``DECISIONS_GATEWAY_URL`` / ``DECISIONS_GATEWAY_API_KEY``, or
  LiteLLM's CLI's ``LITELLM_PROXY_URL`` / ``LITELLM_PROXY_API_KEY``): through a running gateway's
  admin API (gateway/admin/remote.py), with the master key; the gateway's own database, secret and
  models, and its refusals printed as its message (status 1).
- ``--config PATH``: straight on the config's database (gateway/admin/direct.py), its
  ``general_settings.database_url`` (a relative SQLite path is the file beside the config; the data
  directory's SQLite file without one), as for ``decisions-gateway migrate``, with keys hashed by the
  same server secret as the gateway's (``general_settings.salt_key``, ``DECISIONS_GATEWAY_SALT_KEY``
  or the data directory's ``salt.key``). A change is announced to running gateways through Redis
  when the config has one (``auth:version``); without Redis they see it within a second anyway
  (their cache's ttl).

Both print the same. ``keys create`` prints the key once; nothing else prints a key (``--api-key``
included). Exit status: 0; 2 for a usage, config or validation error; 1 for a refused operation
(unknown key, alias in use, a gateway's refusal) or a database or gateway that cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeAlias

from gateway.admin.cli_usage import Usage, is_key_or_id

# Only argparse at import: ``--help`` and a usage error need nothing else. What an action needs (pydantic,
# SQLAlchemy, the key store) is imported when it runs, never the web app, the backend or torch
# (tests/gateway/test_cli_imports.py).
if TYPE_CHECKING:
    from gateway.admin import schemas
    from gateway.admin.direct import Direct
    from gateway.admin.remote import Remote

    Ops: TypeAlias = Direct | Remote

URL_ENV, KEY_ENV = "DECISIONS_GATEWAY_URL", "DECISIONS_GATEWAY_API_KEY"
LITELLM_URL_ENV, LITELLM_KEY_ENV = "LITELLM_PROXY_URL", "LITELLM_PROXY_API_KEY"  # LiteLLM's CLI's names
MAX_TEAM_PAGES = 1000


# ---- entry points -------------------------------------------------------------------------------


def keys_main(argv: Sequence[str] | None = None) -> int:
    parser = _parser("keys", "Virtual keys: create (printed once), list, info, update, block, unblock, delete.")
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
    update = _action(sub, "update", "change a key's alias, team, models, budget, limits or lifetime")
    update.add_argument("--alias", help="a new unique name for the key")
    update.add_argument("--team", help="move it to this team (id or alias)")
    _limit_options(update)
    update.add_argument("--duration", help="a new lifetime from now, e.g. 30d")
    for action, what in (("info", "a key's limits, budget and spend (JSON)"), ("update", None),
                         ("block", "refuse a key everywhere"), ("unblock", "accept a blocked key again"),
                         ("delete", "delete a key")):
        chosen = update if what is None else _action(sub, action, what)
        chosen.add_argument("ref", metavar="ALIAS-OR-KEY", help="the key's alias, the key or its id")
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
# ``ops`` is a ``Direct`` (gateway/admin/direct.py, --config) or a ``Remote`` (gateway/admin/remote.py, --url):
# the same operations, answering the admin API's JSON, so both modes print alike.


async def _keys(args: argparse.Namespace, ops: Ops) -> int:
    from gateway.admin import schemas

    if args.action == "create":
        fields = _limit_fields(args)
        fields.update(_given(key_alias=args.alias, duration=args.duration))
        if args.team:
            fields["team_id"] = await _team_id(ops, args.team)
        _validate(schemas.GenerateKeyRequest, fields)
        made = await ops.create_key(fields)
        print(made["key"])
        print(f"id {made['token']}  alias {made.get('key_alias') or '-'}  team {made.get('team_id') or '-'}  "
              "(the key is shown this once: keep it)", file=sys.stderr)
        return 0
    if args.action == "list":
        if args.page < 1 or not 1 <= args.size <= schemas.MAX_PAGE_SIZE:
            raise Usage(f"--page from 1, --size from 1 to {schemas.MAX_PAGE_SIZE}")
        rows, total = await ops.list_keys(page=args.page, size=args.size, team_id=args.team)
        _print(rows, args.json, ("token", "key_name", "key_alias", "team_id", "spend", "max_budget", "rpm_limit",
                                 "blocked", "expires"), f"{len(rows)} of {total} keys (page {args.page})")
        return 0
    changes = {**_limit_fields(args), **_given(key_alias=args.alias, duration=args.duration)} \
        if args.action == "update" else {}
    if args.action == "update" and not changes and not args.team:
        raise Usage("update: give what to change (--alias, --team, --models, --budget, --rpm, ...)")
    record = await ops.key(args.ref)
    alias = record.get("key_alias") or "no alias"
    if args.action == "info":
        print(json.dumps(record, indent=2))
        return 0
    if args.action == "update":
        fields = {**changes, **({"team_id": await _team_id(ops, args.team)} if args.team else {}),
                  "key": record["token"]}
        _validate(schemas.UpdateKeyRequest, fields)
        record = await ops.update_key(fields)
        print(f"key {record['token']} ({record.get('key_alias') or 'no alias'}) updated")
        return 0
    if args.action == "delete":
        deleted = await ops.delete_key(record["token"])
        print(f"deleted key {deleted[0] if deleted else record['token']} ({alias})")
        return 0
    record = await ops.set_blocked(record["token"], args.action == "block")
    print(f"key {record['token']} ({alias}) {'blocked' if record['blocked'] else 'unblocked'}")
    return 0


async def _teams(args: argparse.Namespace, ops: Ops) -> int:
    from gateway.admin import schemas

    if args.action == "create":
        fields = _limit_fields(args)
        fields.update(_given(team_alias=args.alias, team_id=args.team_id))
        _validate(schemas.NewTeamRequest, fields)
        record = await ops.create_team(fields)
        print(f"team {record['team_id']} ({record.get('team_alias') or 'no alias'})")
        return 0
    rows = await _all_teams(ops)
    _print(rows, args.json, ("team_id", "team_alias", "spend", "max_budget", "rpm_limit", "tpm_limit", "blocked"),
           f"{len(rows)} teams")
    return 0


async def _spend(args: argparse.Namespace, ops: Ops) -> int:
    end = args.end or datetime.now(UTC).date()
    start = args.start or end - timedelta(days=29)
    if start > end:
        raise Usage("--start is after --end")
    if args.key and not is_key_or_id(args.key):
        raise Usage("--key: give the key (sk-...) or its id (64 hex digits)")
    rows = await ops.spend_report(start=start, end=end, group_by=args.group_by, api_key=args.key,
                                  team_id=args.team)
    columns = {"day": ("date",), "model": ("model",), "model_group": ("model_group",),
               "team": ("team_id", "team_alias"), "key": ("api_key", "key_alias")}[args.group_by]
    _print(rows, args.json, (*columns, "spend", "requests", "failed_requests", "prompt_tokens", "completion_tokens"),
           f"spend {start} .. {end} by {args.group_by}: ${sum(r['spend'] for r in rows):.6f}")
    return 0


# ---- plumbing -----------------------------------------------------------------------------------


def _parser(name: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"decisions-gateway {name}", description=description,
        epilog=f"Give --config (its database) or --url with --api-key (a running gateway; or ${URL_ENV}, "
               f"${KEY_ENV}, or LiteLLM's ${LITELLM_URL_ENV} and ${LITELLM_KEY_ENV}).")
    _where(parser, None)
    return parser


def _where(parser: argparse.ArgumentParser, default: Any) -> None:
    """--config, --url and --api-key, on the command and (hidden) on each action, so they go before or after it."""
    hidden = default is argparse.SUPPRESS
    parser.add_argument("--config", "-c", metavar="PATH", default=default,
                        help=argparse.SUPPRESS if hidden else "work on this LiteLLM-style YAML config's database "
                                                              "(its general_settings.database_url)")
    parser.add_argument("--url", metavar="URL", default=default,
                        help=argparse.SUPPRESS if hidden else "work through this running gateway's admin API "
                                                              f"(default ${URL_ENV}, else ${LITELLM_URL_ENV})")
    parser.add_argument("--api-key", metavar="KEY", default=default,
                        help=argparse.SUPPRESS if hidden else "the master key (or an admin's key) for --url "
                                                              f"(default ${KEY_ENV}, else ${LITELLM_KEY_ENV}; "
                                                              "the variable keeps it out of the process list)")


def _action(sub: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    action: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=help_text)
    _where(action, argparse.SUPPRESS)
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


async def _team_id(ops: Ops, team: str) -> str:
    teams = await _all_teams(ops)
    if any(t["team_id"] == team for t in teams):
        return team
    found = [t["team_id"] for t in teams if t.get("team_alias") == team]
    if len(found) == 1:
        return found[0]
    raise Usage(f"--team: {'several teams are' if found else 'no team is'} called {team!r}; give the team id")


async def _all_teams(ops: Ops) -> list[dict[str, Any]]:
    from gateway.admin.schemas import MAX_PAGE_SIZE

    teams: list[dict[str, Any]] = []
    for page in range(1, MAX_TEAM_PAGES + 1):
        found = await ops.teams(page, MAX_PAGE_SIZE)
        teams.extend(found)
        if len(found) < MAX_PAGE_SIZE:
            break
    return teams


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
          action: Callable[[argparse.Namespace, Ops], Awaitable[int]]) -> int:
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    prog = parser.prog
    try:
        where = _where_to(args)
    except Usage as exc:  # before any import: a forgotten --config costs nothing
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    import asyncio

    from gateway.admin.remote import Refused
    from translators.errors import DecisionError

    try:
        return asyncio.run(_run(args, where, action))
    except Usage as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except (DecisionError, Refused) as exc:
        print(f"{prog}: {exc.message}", file=sys.stderr)
        return 1
    except Exception as exc:  # the database is unreachable, a migration failed: one line, no URL, no key
        print(f"{prog}: {type(exc).__name__}: {_first_line(exc)}", file=sys.stderr)
        return 1


def _where_to(args: argparse.Namespace) -> tuple[str, str, str | None]:
    """("config", path, None) or ("url", url, key): the database the command works on, never a guess."""
    if args.config and args.url:
        raise Usage("give --config (work on its database) or --url (a running gateway), not both")
    if args.config:
        return "config", args.config, None
    url = args.url or os.environ.get(URL_ENV) or os.environ.get(LITELLM_URL_ENV)
    if not url:
        raise Usage("give --config PATH (the gateway's config: its database) or --url URL with --api-key "
                    f"(a running gateway's admin API; or ${URL_ENV} and ${KEY_ENV}); without one there is no "
                    "knowing which database the gateway reads")
    key = args.api_key or os.environ.get(KEY_ENV) or os.environ.get(LITELLM_KEY_ENV)
    if not key:
        raise Usage(f"--url needs --api-key (or ${KEY_ENV}): the master key, or a key allowed to administer")
    if not url.startswith(("http://", "https://")):
        raise Usage(f"--url: give the gateway's address, e.g. http://127.0.0.1:4000 (got {url[:100]!r})")
    return "url", url, key


async def _run(args: argparse.Namespace, where: tuple[str, str, str | None],
               action: Callable[[argparse.Namespace, Ops], Awaitable[int]]) -> int:
    mode, target, key = where
    if mode == "url":
        from gateway.admin.remote import Remote

        async with Remote(target, key or "") as remote:
            return await action(args, remote)
    from gateway.admin.direct import opened

    async with opened(target) as direct:
        return await action(args, direct)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""

