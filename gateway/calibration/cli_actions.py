"""What each ``decisions-gateway outcomes|calibration|decision-log`` command does (gateway/calibration/cli.py)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from typing import Any

import orjson

from gateway.calibration import service
from gateway.db.calibration_report import Filters
from gateway.db.engine import Database
from gateway.db.outcomes import OutcomeIn, OutcomeRefused, Scope, record_outcomes
from gateway.decisionlog.settings import DecisionLogSettings
from gateway.utc import utc

EVERYTHING = Scope(everything=True)


def say(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def refuse(message: str) -> int:
    print(f"decisions-gateway: {message}", file=sys.stderr)
    return 1


def _filters(args: argparse.Namespace) -> Filters:
    start, end = getattr(args, "start", None), getattr(args, "end", None)
    return Filters(EVERYTHING, model_group=args.model_group, model_version=getattr(args, "model_version", None),
                   site=args.site, start=utc(start) if start else None, end=utc(end) if end else None)


def _item(line: str, number: int) -> OutcomeIn:
    try:
        value = json.loads(line)
    except ValueError as exc:
        raise ValueError(f"line {number}: not JSON ({exc})") from None
    if not isinstance(value, dict) or not {"request_id", "question", "outcome"} <= set(value):
        raise ValueError(f"line {number}: needs request_id, question and outcome")
    weight = value.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight <= 1e6:
        raise ValueError(f"line {number}: weight must be a number above 0")
    observed = value.get("observed_at")
    return OutcomeIn(str(value["request_id"]), value["question"], value["outcome"], float(weight),
                     utc(dt.datetime.fromisoformat(observed)) if isinstance(observed, str) else None)


async def outcomes_import(db: Database, args: argparse.Namespace, _settings: DecisionLogSettings) -> int:
    if not 1 <= args.batch <= 1000:
        return refuse("--batch must be from 1 to 1000")
    written = replaced = 0
    batch: list[tuple[int, OutcomeIn]] = []

    async def flush() -> None:
        nonlocal written, replaced
        try:
            done = await record_outcomes(db, [item for _, item in batch], EVERYTHING)
        except OutcomeRefused as exc:
            raise ValueError(f"line {batch[exc.index][0]}: {exc.message.split(': ', 1)[-1]} (the lines before "
                             f"its batch were recorded: {written})") from None
        written, replaced = written + done.written, replaced + done.replaced
        batch.clear()

    with open(args.file, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                batch.append((number, _item(line, number)))
            if len(batch) >= args.batch:
                await flush()
    if batch:
        await flush()
    print(f"decisions-gateway outcomes import: {written} outcomes recorded ({replaced} replaced earlier ones)")
    return 0


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, dt.datetime) else v for k, v in row.items()}


async def outcomes_export(db: Database, args: argparse.Namespace, _settings: DecisionLogSettings) -> int:
    from gateway.db.decision_export import export_rows

    rows = export_rows(db, _filters(args), with_outcomes_only=args.with_outcomes)
    if args.format == "parquet":
        return await _parquet(rows, args.output)
    out = open(args.output, "wb") if args.output else sys.stdout.buffer  # noqa: SIM115 - stdout is not closed
    count = 0
    try:
        async for row in rows:
            out.write(orjson.dumps(_jsonable(row)) + b"\n")
            count += 1
    finally:
        if args.output:
            out.close()
    print(f"decisions-gateway outcomes export: {count} rows", file=sys.stderr)
    return 0


async def _parquet(rows: Any, output: str | None) -> int:
    if not output:
        return refuse("a parquet export needs --output FILE")
    try:
        import pyarrow as pa  # type: ignore[import-not-found,import-untyped,unused-ignore]
        import pyarrow.parquet as pq  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return refuse("a parquet export needs pyarrow: pip install 'decisions-gateway[parquet]'")
    writer = None
    chunk: list[dict[str, Any]] = []
    count = 0

    def write() -> None:
        nonlocal writer
        table = pa.Table.from_pylist([{k: json.dumps(v) if k in ("options", "outcome") else v
                                       for k, v in row.items()} for row in chunk])
        if writer is None:
            writer = pq.ParquetWriter(output, table.schema)
        writer.write_table(table.cast(writer.schema))
        chunk.clear()

    async for row in rows:
        chunk.append(row)
        count += 1
        if len(chunk) >= 1000:
            write()
    if chunk:
        write()
    if writer is not None:
        writer.close()
    print(f"decisions-gateway outcomes export: {count} rows", file=sys.stderr)
    return 0


async def calibration_report(db: Database, args: argparse.Namespace, settings: DecisionLogSettings) -> int:
    report = await service.report(db, _filters(args), settings.sites)
    if args.json:
        say(report)
        return 0
    print(f"{'model group':<20} {'site':<32} {'question':<20} {'n':>8} {'acc':>6} {'brier':>7} {'logloss':>8} "
          f"{'ECE':>6} {'ECE 95%':>13} {'cal ECE':>8}")
    for row in report["sites"]:
        raw, cal = row["raw"], row["calibrated"]
        low, high = raw["ece_interval"] or (0.0, 0.0)
        print(f"{row['model_group'][:20]:<20} {row['site']:<32} {str(row['name'] or row['question'])[:20]:<20} "
              f"{raw['n']:>8.0f} {raw['accuracy']:>6.3f} {raw['brier']:>7.4f} {raw['log_loss']:>8.4f} "
              f"{raw['ece']:>6.3f} {f'{low:.3f}-{high:.3f}':>13} {cal['ece']:>8.3f}")
    return 0


async def calibration_fit(db: Database, args: argparse.Namespace, _settings: DecisionLogSettings) -> int:
    try:
        say(await service.fit(db, args.model_group, args.site, "cli"))
    except service.Refused as exc:
        return refuse(exc.message)
    return 0


async def calibration_rollback(db: Database, args: argparse.Namespace, _settings: DecisionLogSettings) -> int:
    try:
        say(await service.rollback(db, args.model_group, args.site))
    except service.Refused as exc:
        return refuse(exc.message)
    return 0


async def calibration_thresholds(db: Database, args: argparse.Namespace, _settings: DecisionLogSettings) -> int:
    try:
        say(await service.threshold(db, _filters(args), _option(args.option), args.metric, args.target, "served"))
    except service.Refused as exc:
        return refuse(exc.message)
    return 0


def _option(value: str | None) -> Any:
    return {"true": True, "false": False}.get(value, value) if value is not None else None


async def calibration_check(db: Database, args: argparse.Namespace, settings: DecisionLogSettings) -> int:
    filters = _filters(args)
    short: list[str] = []
    for metric in ("precision", "recall", "accuracy"):
        bound = getattr(args, f"min_{metric}")
        if bound is None:
            continue
        try:
            found = await service.threshold(db, filters, _option(args.option), metric, bound, "served")
        except service.Refused as exc:
            short.append(f"{metric} {bound}: {exc.message}")
            continue
        held = found["held_out"][metric]
        if held is None or held < bound:
            short.append(f"{metric} {bound}: held-out {metric} is {held} at threshold {found['threshold']:.4f}")
        else:
            print(f"ok: {metric} {held:.4f} >= {bound} on the held-out split at threshold {found['threshold']:.4f}")
    if args.max_ece is not None:
        report = await service.report(db, filters, settings.sites)
        for row in report["sites"]:
            ece = row["calibrated"]["ece"]
            if ece is None or ece > args.max_ece:
                short.append(f"ECE {ece} > {args.max_ece} for site {row['site']} of {row['model_group']}")
            else:
                print(f"ok: ECE {ece:.4f} <= {args.max_ece} for site {row['site']} of {row['model_group']}")
        if not report["sites"]:
            short.append("no outcomes for this site")
    for line in short:
        print(f"short: {line}", file=sys.stderr)
    return 1 if short else 0


async def decision_log_purge(db: Database, args: argparse.Namespace, settings: DecisionLogSettings) -> int:
    from gateway.db.decision_export import purge_inputs
    from gateway.decisionlog.settings import retention_seconds

    seconds = retention_seconds(args.older_than) if args.older_than else settings.full_retention_s
    before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds)
    gone = await purge_inputs(db, before)
    print(f"decisions-gateway decision-log purge: {gone} captured inputs older than {before.isoformat()} deleted")
    return 0
