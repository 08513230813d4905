"""``decisions-gateway migrate``: apply the Alembic chain to the configured database, or go back.

    decisions-gateway migrate [--config PATH]            # up to head
    decisions-gateway migrate --config PATH --to REV     # up (or down) to REV
    decisions-gateway migrate --config PATH --downgrade base
    decisions-gateway migrate --config PATH --current    # print the revision, change nothing

The database is ``general_settings.database_url`` of the config (the data directory's SQLite file
without one); ``auto_migrate`` does not matter here. Exit status 0, 2 for a config error, 1 when the
database cannot be reached or a migration fails.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from gateway.db.engine import (
    DatabaseConfigError,
    current_revision,
    database_url_from_settings,
    head_revision,
    migrate,
    open_database,
    safe_url,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="decisions-gateway migrate",
                                     description="Apply the database migrations (Alembic) to the configured "
                                                 "database: general_settings.database_url.")
    parser.add_argument("--config", "-c", metavar="PATH", help="LiteLLM-style YAML config (default: the embedded "
                                                               "one, so the data directory's SQLite file)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--to", metavar="REV", default="head", help="upgrade to this revision (default head)")
    target.add_argument("--downgrade", metavar="REV", help="downgrade to this revision ('base': no tables)")
    target.add_argument("--current", action="store_true", help="print the current revision and change nothing")
    return parser


def migrate_main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    from gateway.config.errors import ConfigError
    from gateway.config.loader import load_config

    try:
        url = database_url_from_settings(load_config(args.config).general_settings)
    except (ConfigError, DatabaseConfigError) as exc:
        print(f"decisions-gateway migrate: config error: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_run(url, args))
    except Exception as exc:  # a database that cannot be reached, a migration that fails: one line, no URL
        print(f"decisions-gateway migrate: {safe_url(url)}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


async def _run(url: str, args: argparse.Namespace) -> int:
    db = await open_database(url, auto_migrate=False)
    try:
        before = await current_revision(db)
        if not args.current:
            if args.downgrade is not None:
                await migrate(db, args.downgrade, downgrade=True)
            else:
                await migrate(db, args.to)
        after = await current_revision(db)
    finally:
        await db.close()
    head = head_revision()
    where = "head" if after == head else f"head is {head}"
    if args.current or before == after:
        print(f"decisions-gateway migrate: {db.safe_url} at revision {after or 'base'} ({where})")
    else:
        print(f"decisions-gateway migrate: {db.safe_url} from {before or 'base'} to {after or 'base'} ({where})")
    return 0
