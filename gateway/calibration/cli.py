"""``decisions-gateway outcomes|calibration|decision-log``: the decision layer from a shell, on a config's database.

    decisions-gateway outcomes import FILE.jsonl --config PATH [--batch 500]
    decisions-gateway outcomes export --config PATH [--format jsonl|parquet] [--output FILE] [--model-group G]
                                      [--site S] [--with-outcomes] [--start T] [--end T]
    decisions-gateway calibration report --config PATH [--model-group G] [--site S] [--model-version V] [--json]
    decisions-gateway calibration fit --config PATH --model-group G [--site S]
    decisions-gateway calibration rollback --config PATH --model-group G [--site S]
    decisions-gateway calibration thresholds --config PATH --model-group G --site S [--option O]
                                             [--metric precision|recall|accuracy] --target X
    decisions-gateway calibration check --config PATH --site S [--model-group G] [--min-precision X]
                                        [--min-recall X] [--min-accuracy X] [--max-ece X]
    decisions-gateway decision-log purge --config PATH [--older-than 7d]

The database is the config's ``general_settings.database_url`` (as for ``decisions-gateway migrate``);
the operations are those of the HTTP routes (gateway/calibration/service.py), as a proxy admin. An
import is one ``POST /v1/outcomes`` per batch of lines: a bad line stops the import naming its
line number, the batches before it kept. ``check`` exits 1 when the site falls short of any bound
given (the held-out figures, so a CI gate reads what a new answer will do), 0 when it meets them.
Exit status: 0; 2 for a usage or config error; 1 for a refusal, a shortfall or a database that
cannot be reached. A parquet export needs pyarrow (``pip install 'decisions-gateway[parquet]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import sys
from collections.abc import Sequence
from typing import Any

PROG = "decisions-gateway"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Outcomes, calibration and the decision log.")
    groups = parser.add_subparsers(dest="group", required=True)

    def command(group: Any, name: str, text: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = group.add_parser(name, help=text, description=text)
        sub.add_argument("--config", "-c", metavar="PATH", help="the gateway's config (its database_url)")
        return sub

    outcomes = groups.add_parser("outcomes").add_subparsers(dest="action", required=True)
    imp = command(outcomes, "import", "Post outcomes from a JSONL file, one {request_id, question, outcome, "
                                      "weight?, observed_at?} a line")
    imp.add_argument("file")
    imp.add_argument("--batch", type=int, default=500)
    exp = command(outcomes, "export", "One row per answered question with its outcome, model version and input")
    exp.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl")
    exp.add_argument("--output", "-o", help="file to write (default: stdout; parquet needs a file)")
    exp.add_argument("--with-outcomes", action="store_true", help="only decisions that have an outcome")
    calibration = groups.add_parser("calibration").add_subparsers(dest="action", required=True)
    report = command(calibration, "report", "Accuracy, Brier, log loss and ECE per site and per model")
    report.add_argument("--json", action="store_true")
    fit = command(calibration, "fit", "Fit and activate a calibrator for a site or a model group")
    rollback = command(calibration, "rollback", "Deactivate the active calibrator; the version before applies")
    thresholds = command(calibration, "thresholds", "The threshold that reaches a target on the held-out split")
    thresholds.add_argument("--option", help="for a choice site: the option thresholded")
    thresholds.add_argument("--metric", choices=["precision", "recall", "accuracy"], default="precision")
    thresholds.add_argument("--target", type=float, required=True)
    check = command(calibration, "check", "Exit 1 when a site falls short of the bounds given (for CI)")
    for bound in ("--min-precision", "--min-recall", "--min-accuracy", "--max-ece"):
        check.add_argument(bound, type=float)
    check.add_argument("--option", help="for a choice site: the option whose precision or recall is checked")
    for sub in (report, fit, rollback, thresholds, check, exp):
        sub.add_argument("--model-group", help="the model group")
        sub.add_argument("--site", help="a site (32 hex characters)")
    for sub in (report, exp):
        sub.add_argument("--model-version")
        sub.add_argument("--start", type=dt.datetime.fromisoformat, help="ISO time, included")
        sub.add_argument("--end", type=dt.datetime.fromisoformat, help="ISO time, excluded")
    log = groups.add_parser("decision-log").add_subparsers(dest="action", required=True)
    purge = command(log, "purge", "Delete the full captures older than the retention")
    purge.add_argument("--older-than", help="a duration (7d, 12h); default general_settings.decision_log."
                                            "full_retention")
    return parser


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    from gateway.config.errors import ConfigError
    from gateway.config.loader import load_config
    from gateway.db.engine import DatabaseConfigError, database_url_from_settings
    from gateway.decisionlog.settings import decision_log_settings

    try:
        config = load_config(args.config)
        url = database_url_from_settings(config.general_settings)
        settings = decision_log_settings(config.general_settings, config.deployments)
    except (ConfigError, DatabaseConfigError) as exc:
        print(f"{PROG}: config error: {exc}", file=sys.stderr)
        return 2
    if args.group == "calibration" and args.action in ("fit", "rollback", "thresholds") and not args.model_group:
        print(f"{PROG}: --model-group is required", file=sys.stderr)
        return 2
    if args.action in ("thresholds", "check") and not args.site:
        print(f"{PROG}: --site is required", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_run(url, args, settings))
    except (OSError, ValueError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1


async def _run(url: str, args: argparse.Namespace, settings: Any) -> int:
    from gateway.db.engine import open_database

    try:
        db = await open_database(url)
    except Exception as exc:  # noqa: BLE001 - one line, no URL
        print(f"{PROG}: the database cannot be opened: {type(exc).__name__}", file=sys.stderr)
        return 1
    try:
        from gateway.calibration import cli_actions

        action = getattr(cli_actions, f"{args.group.replace('-', '_')}_{args.action}")
        return int(await action(db, args, settings))
    finally:
        await db.close()

