"""The calibration bench's verdicts and doc (bench/calibration.py): each target of the issue met or missed,
the tables, and the "Calibration (issue 21)" section of docs/benchmarks.md."""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.calibration_costs import INGEST_BATCH
from bench.calibration_overhead import DEFAULT, OFF, OVERHEAD_SETUPS, STUBBED, _percentile
from bench.calibration_recovery import CONCURRENCY
from bench.docs_section import replace_section

if TYPE_CHECKING:
    from bench.calibration import Results, Sizes

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Calibration (issue 21)"
TARGETS = {"raw_ece": 0.08, "calibrated_ece": 0.02, "temperature_rel": 0.10, "apply_us": 10.0,
           "ingest_per_s": 5000.0, "report_s": 1.0, "log_ms": 0.05}


# ---- the verdicts and the doc -----------------------------------------------------------------------


def judge(results: Results) -> list[str]:
    """One line per target of the issue: met or missed, with the figure (and why, where it is known)."""
    out = []
    for r in results.recoveries:
        raw, cal = r.raw, r.calibrated
        checks = [
            (raw["ece"] >= TARGETS["raw_ece"], f"raw ECE {raw['ece']:.3f} ≥ {TARGETS['raw_ece']}"),
            (cal["ece"] <= TARGETS["calibrated_ece"], f"calibrated ECE {cal['ece']:.4f} ≤ {TARGETS['calibrated_ece']}"),
            (cal["brier"] < raw["brier"], f"Brier {raw['brier']:.4f} → {cal['brier']:.4f}"),
            (cal["log_loss"] < raw["log_loss"], f"log loss {raw['log_loss']:.4f} → {cal['log_loss']:.4f}"),
            (r.temperature_error <= TARGETS["temperature_rel"],
             f"{'temperature' if r.method == 'temperature' else '1/a'} {r.fitted_temperature:.3f} vs "
             f"{r.scenario.sharpen} ({r.temperature_error:.1%} off, target ≤ 10 %)"),
        ]
        missed = [text for ok, text in checks if not ok]
        met = [text for ok, text in checks if ok]
        line = f"{r.scenario.label}: " + ("all targets met" if not missed else "MISSED " + "; ".join(missed))
        line += f" ({'; '.join(met)})" if met else ""
        why = []
        if cal["ece"] > TARGETS["calibrated_ece"] and r.truth and r.what_if:
            w = r.what_if
            why.append(f"the truth itself scores ECE {r.truth['ece']:.4f} on these {r.raw['n']:,.0f} outcomes (the "
                       f"sampling floor of 15 bins at this n) and the exact temperature {w['exact']:.4f}, so the "
                       f"floor is not it: this fit's temperature, {r.temperature_error:.1%} off, costs the rest (the "
                       f"same answers with the true temperature 5 % off score {w['-5%']:.4f} / {w['+5%']:.4f}, 10 % "
                       f"off {w['-10%']:.4f} / {w['+10%']:.4f}): {r.train:,} training outcomes fit the temperature "
                       f"to ±{_sd(r.spread) / r.scenario.sharpen:.1%} (one sd, below), too loose for ECE ≤ 0.02 on "
                       "every draw; the 10 % temperature target admits an ECE above 0.02"
                       if w["exact"] <= TARGETS["calibrated_ece"] else
                       f"the truth itself scores ECE {r.truth['ece']:.4f} on these {r.raw['n']:,.0f} outcomes: the "
                       "sampling floor of 15 bins at this n is above the target")
        if r.temperature_error > TARGETS["temperature_rel"] and r.spread:
            within = sum(abs(t - r.scenario.sharpen) / r.scenario.sharpen <= TARGETS["temperature_rel"]
                         for t in r.spread)
            mean = statistics.mean(r.spread)
            lean = abs(mean - r.scenario.sharpen) / r.scenario.sharpen
            verdict = ("this draw's sampling noise: the fits centre on the truth" if lean <= 0.03 else
                       f"the fits lean {lean:.1%} off the truth on average: a bias, beside the noise")
            why.append(f"the same fit on {len(r.spread)} other draws of {r.train:,} outcomes gives {mean:.3f} ± "
                       f"{_sd(r.spread):.3f}, {within} of {len(r.spread)} within 10 %: {verdict}")
        out.append(line + (". Why: " + "; ".join(why) if why else ""))
    loose = [r for r in results.recoveries if r.what_if and max(r.what_if["-10%"], r.what_if["+10%"]) >
             TARGETS["calibrated_ece"]]
    if loose:
        worst_ece = max(max(r.what_if["-10%"], r.what_if["+10%"]) for r in loose)
        five = max(max(r.what_if["-5%"], r.what_if["+5%"]) for r in results.recoveries)
        out.append(
            "the two recovery targets do not agree at this size: a temperature within the issue's 10 % leaves ECE up "
            f"to {worst_ece:.4f} on these fresh answers (the ±10 % figures), above 0.02, where 5 % off leaves at most "
            f"{five:.4f}; and the fit moves from run to run by the *same fit, other draws* spread (the split follows "
            "the request ids, new every run), so a run of this bench can miss the ECE target with every other target "
            "met")
    if results.applies:
        worst = max(a.apply_us / a.questions for a in results.applies)
        best = max(a.apply_best_us / a.questions for a in results.applies)
        out.append(f"apply: at most {worst:.2f} µs per question, median of the repeats ({best:.2f} µs in the fastest "
                   f"repeat) ({'met' if worst <= TARGETS['apply_us'] else 'MISSED'}: target ≤ "
                   f"{TARGETS['apply_us']:.0f} µs)")
    for ingest in results.ingests:
        ok = ingest.per_s >= TARGETS["ingest_per_s"]
        out.append(f"ingest, {ingest.how}: {ingest.per_s:,.0f} outcomes/s "
                   f"({'met' if ok else 'MISSED'}: target ≥ {TARGETS['ingest_per_s']:,.0f}/s)")
    for report in results.reports:
        median = statistics.median(report.runs_s)
        ok = median < TARGETS["report_s"]
        out.append(f"report, {report.label} ({report.outcomes:,.0f} outcomes of {results.env['sizes'].pg_rows:,}): "
                   f"{median:.3f} s ({'met' if ok else 'MISSED'}: target < 1 s; SQL "
                   f"{report.sql_s:.3f} s, Python {report.python_s:.3f} s)")
    if results.overheads:
        by = {o.label.split(" (")[0]: o for o in results.overheads}
        off, stubbed, default = by[OFF].added_p50, by[STUBBED].added_p50, by[DEFAULT.split(" (")[0]].added_p50
        for what, diff in (("the decision log on (default) against the spend log off, as the issue asks: "
                            "the spend row's outbox append included", default - off),
                           ("the decision rows alone (default against the spend log on without them)",
                            default - stubbed)):
            out.append(f"{what}: {diff:+.3f} ms on the added p50 "
                       f"({'met' if diff <= TARGETS['log_ms'] else 'MISSED'}: target ≤ {TARGETS['log_ms']} ms)")
        cpu = results.log_cpu_us.get("digest", math.nan)
        out.append(f"the decision log's own CPU per request (digest, in process): {cpu:.1f} µs = {cpu / 1000:.3f} ms "
                   f"({'met' if cpu / 1000 <= TARGETS['log_ms'] else 'MISSED'}: target ≤ {TARGETS['log_ms']} ms)")
        if results.drain_us:
            plain, logged_us = results.drain_us["spend rows only"], results.drain_us["with decision rows (digest)"]
            out.append(f"the outbox drain per request: {plain:.0f} µs for the spend row alone, {logged_us:.0f} µs "
                       f"with its 3 decision rows (+{logged_us - plain:.0f} µs), on a thread of the gateway's process "
                       "(its core, its GIL): with the request path's "
                       f"{cpu:.0f} µs, the decision log costs the gateway's core {cpu + logged_us - plain:.0f} µs a "
                       "request, the likely reason the p50 moves by more than the request path's own CPU (not "
                       "proven here: the drain's work and the requests' could also meet in the SQLite file)")
    return out


def _phases(env: dict[str, Any]) -> str:
    names = (("recovery_s", "recovery"), ("ingest_s", "ingest"), ("report_phase_s", "report"),
             ("overhead_s", "overhead"))
    return ", ".join(f"{label} {env[key]:.0f} s" for key, label in names if key in env)


def _sd(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else math.nan


def _what_if(w: dict[str, float]) -> str:
    if not w:
        return "—"
    return (f"{w['exact']:.4f} ({max(w['-5%'], w['+5%']):.4f}, {max(w['-10%'], w['+10%']):.4f}); the fit "
            f"recomputed {w['fit']:.4f}")


def _pm(m: dict[str, Any]) -> str:
    low, high = m.get("ece_interval") or (math.nan, math.nan)
    return f"{m['ece']:.4f} [{low:.3f}, {high:.3f}]"


def tables(results: Results) -> list[str]:
    lines = ["| case | fit (train / held out) | fitted vs truth | same fit, other draws | "
             "fit held-out ECE before → after | fresh n | fresh ECE raw [95 %] | fresh ECE calibrated [95 %] | "
             "truth's own ECE | ECE at the true T (±5 %, ±10 %) | Brier raw → cal (truth) | "
             "log loss raw → cal (truth) | accuracy raw → cal |",
             "|---|---:|---|---|---|---:|---:|---:|---:|---|---|---|---|"]
    for r in results.recoveries:
        held = r.fit["held_out"]
        params = r.fit["params"]
        if r.method == "temperature":
            fitted = f"T {r.fitted_temperature:.3f} vs {r.scenario.sharpen:g} ({r.temperature_error:.1%})"
        else:
            fitted = (f"Platt a {params['a']:.3f} (1/a {r.fitted_temperature:.3f} vs {r.scenario.sharpen:g}, "
                      f"{r.temperature_error:.1%}), b {params['b']:+.3f} vs 0")
        spread = (f"{statistics.mean(r.spread):.3f} ± {_sd(r.spread):.3f} ({len(r.spread)} draws)" if r.spread
                  else "—")
        t = r.truth or {"ece": math.nan, "brier": math.nan, "log_loss": math.nan}
        lines.append(
            f"| {r.scenario.label} | {r.fit['train_n']} / {r.fit['held_out_n']} | {fitted} | {spread} | "
            f"{held['before']['ece']:.3f} → {held['after']['ece']:.3f} | {r.raw['n']:,.0f} | {_pm(r.raw)} | "
            f"{_pm(r.calibrated)} | {t['ece']:.4f} | {_what_if(r.what_if)} | "
            f"{r.raw['brier']:.4f} → {r.calibrated['brier']:.4f} "
            f"({t['brier']:.4f}) | {r.raw['log_loss']:.4f} → {r.calibrated['log_loss']:.4f} ({t['log_loss']:.4f}) | "
            f"{r.raw['accuracy']:.3f} → {r.calibrated['accuracy']:.3f} |")
    lines += ["", "| questions | apply µs/request | apply µs/question (fastest repeat) | calibrate step µs/request "
              "(sites hashed) | step µs/question | step µs/request (cache's digests) |",
              "|---:|---:|---:|---:|---:|---:|"]
    for a in results.applies:
        lines.append(f"| {a.questions} | {a.apply_us:.2f} | {a.apply_us / a.questions:.2f} "
                     f"({a.apply_best_us / a.questions:.2f}) | {a.step_hashing_us:.2f} | "
                     f"{a.step_hashing_us / a.questions:.2f} | {a.step_cached_us:.2f} |")
    lines += ["", "| outcomes ingest (SQLite) | outcomes | seconds | outcomes/s |", "|---|---:|---:|---:|"]
    for i in results.ingests:
        lines.append(f"| {i.how} | {i.outcomes:,} | {i.seconds:.2f} | {i.per_s:,.0f} |")
    if results.reports:
        lines += ["", "| report (PostgreSQL) | sites | outcomes | median s | runs s | SQL s | Python s |",
                  "|---|---:|---:|---:|---|---:|---:|"]
        for rep in results.reports:
            lines.append(f"| {rep.label} | {rep.sites} | {rep.outcomes:,.0f} | {statistics.median(rep.runs_s):.3f} | "
                         f"{', '.join(f'{v:.3f}' for v in rep.runs_s)} | {rep.sql_s:.3f} | {rep.python_s:.3f} |")
    if results.overheads:
        off, stubbed = results.overheads[0], results.overheads[1]
        lines += ["", "| gateway (no auth, /v1/systemone, 3 questions) | n | p50 ms | direct p50 ms | added p50 ms | "
                  "vs spend log off ms | vs no decision rows ms | rounds' added p50 ms | decision log CPU µs |",
                  "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
        for setup, o in zip(OVERHEAD_SETUPS, results.overheads, strict=True):
            cpu = results.log_cpu_us.get(setup.capture, math.nan)
            lines.append(f"| {o.label} | {len(o.latencies):,} | {_percentile(o.latencies, 50):.3f} | "
                         f"{_percentile(o.paired, 50):.3f} | {o.added_p50:.3f} | "
                         f"{o.added_p50 - off.added_p50:+.3f} | {o.added_p50 - stubbed.added_p50:+.3f} | "
                         f"{', '.join(f'{v:.3f}' for v in o.round_added)} | "
                         f"{'—' if math.isnan(cpu) else f'{cpu:.1f}'} |")
    return lines


def section(results: Results) -> str:
    env = results.env
    sizes: Sizes = env["sizes"]
    load1, load5, _ = env["load_start"]
    method = (
        f"`python -m bench.calibration` ({env['python']}, {env['cpus']} CPUs ({env['machine']}), SQLite "
        f"{env['sqlite']}, SQLAlchemy {env['sqlalchemy']}"
        + (f", PostgreSQL {str(env['postgresql']).split()[0]} on loopback (shared_buffers {env['pg_shared_buffers']}, "
           f"work_mem {env['pg_work_mem']})" if env.get("postgresql") else "")
        + f", {env['date']}; load average {load1:.2f} (1 min) / {load5:.2f} (5 min) at the start; the run took "
        f"{env['wall_s']:.0f} s: {_phases(env)}). Targets of the issue: raw ECE ≥ 0.08, calibrated ≤ 0.02, Brier "
        "and log loss improve, the temperature within 10 %; apply ≤ 10 µs a question; ingest ≥ 5,000 outcomes/s; "
        "a report over 1,000,000 answers < 1 s; the decision log ≤ 0.05 ms on the no-auth p50."
    )
    recovery = (
        f"**Recovery.** One gateway (tests/conftest.py `start_gateway`, in the bench's process; SQLite) with "
        f"three model groups, each in front of its own `TemperedTypeSafe` (tests/fakes/tempered.py: a truth "
        "derived from the state and question id, reported at inverse temperature *sharpen*, 6 decimals) with "
        f"`model_info.calibration: apply`. Per group {sizes.train:,} requests (one question each; aiohttp, "
        f"{CONCURRENCY} in flight), outcomes drawn from the truth (seeded) and posted, `POST /calibration/fit` "
        f"for the site (its train / held-out split is the gateway's, by hash); then {sizes.fresh:,} fresh "
        "requests per group answered calibrated, their outcomes posted, and `GET /calibration/report?site=&start=` "
        "from the moment the fresh requests began: *raw* is what the upstream said, *calibrated* what the caller "
        f"got. ECE over 15 bins of the top-1 probability, with the report's bootstrap interval. Fresh requests "
        f"ran at {results.recoveries[0].requests_per_s:,.0f}/s through the in-process gateway. *Same fit, other "
        "draws*: the gateway's fit (`fitting.fit_calibrator`) run offline on outcomes drawn afresh at the same size, "
        "its mean ± sd; *truth's own ECE*: the true probabilities scored on the same fresh outcomes (the sampling "
        "floor); *ECE at the true T*: the fresh answers recalibrated here with the exact temperature (Platt: a = "
        "1/sharpen, b = 0) and with it 5 % and 10 % off (the worse side), and with the fitted calibrator again (which "
        "matches the report's figure)."
        if results.recoveries else "")
    apply_text = (
        f"**Apply.** `apply` on a DecisionResult of 1, 8 and 32 four-option choice answers, each site with an "
        f"active temperature calibrator; timeit, the median of {sizes.apply_repeat} repeats ({env['apply_pinned']}). "
        "The calibrate step is `gateway.calibration.step.calibrate` on a RequestContext (the header's "
        "calibration on): *sites hashed* computes each question's site (`sites(req)`: the cache's digest of the "
        "question) as a request without the cache does; *cache's digests* reuses them as one with the cache on; "
        "both build the `x-decisions-calibration` and raw-probabilities headers.")
    ingest_text = (
        f"**Ingest.** A SQLite file (WAL) with {sizes.ingest:,} logged decisions (one question each) inserted by "
        "`insert_decisions`; `record_outcomes` (one read of the batch's decisions, the checks, one "
        f"UPDATE per outcome in one transaction) over the first half in batches of {INGEST_BATCH}, then the "
        "same again (each outcome replaced), and the second half over HTTP to a gateway on that file (in the "
        "bench's process, one httpx client, after one unrecorded batch: the client's JSON and the route's "
        "validation included).")
    report_text = ""
    if results.reports:
        report_text = (
            f"**Report.** {sizes.pg_rows:,} decisions with outcomes COPYed into a fresh database "
            f"({env.get('pg_load_s', math.nan):.0f} s; {env.get('pg_table_mib', math.nan):,.0f} MiB with its "
            "indexes), in time order over 30 days, 4 model groups, 50 sites (choice, yes/no and score; 40 % "
            "calibrated), 8 teams; `VACUUM ANALYZE`; `service.report(db, Filters(...))` timed "
            f"{sizes.report_runs} times (the first run included); *SQL* is `totals` once "
            "(one scan grouped by raw and calibrated bin, with the sites' labels), *Python* `report.build` once "
            "(its ECE bootstrap intervals: `report.REPORT_DRAWS` draws per site and per model, raw and "
            "calibrated).")
    elif env.get("pg_missing"):
        report_text = f"**Report.** PostgreSQL was not reachable at {env['pg_missing']}: no report rows."
    overhead_text = ""
    if results.overheads:
        overhead_text = (
            "**Decision-log overhead.** `python -m bench.gateway` has no switch for the decision log (its "
            "no-auth configuration logs with the default settings) and runs every configuration and concurrency, "
            "so this bench reuses its pieces: the zero-delay upstream, `decisions-gateway --workers 1` processes "
            f"(five at once, one per setup, {env.get('overhead_pinned', '')}) and its load client at concurrency 1, "
            "each request to a gateway followed by one straight to the upstream (*added* = gateway minus direct). "
            f"{sizes.overhead_rounds} rounds of {sizes.overhead_requests} requests per setup, their order rotated "
            "each round; *added p50* pools the rounds. Config alone cannot have the spend log without the decision "
            "log (`decision_log.capture: none` still logs each answer's probabilities and site; only "
            "`disable_spend_logs: true` drops both, outbox and all), so *vs spend log off* is what the issue asks "
            "and includes the spend row's own outbox append; the *no decision rows* setup is a gateway process "
            "started with `gateway.spend.log.decision_rows` replaced by a stub returning none (this bench's patch, "
            "in that process only), so *vs no decision rows* is the decision log alone. *Decision log CPU* is its "
            "cost per request in this process: `decision_rows` at that capture level plus the larger outbox row's "
            "encoding (timeit, same core as apply); the drain thread's inserts of the rows run later, off the "
            "request, but in the gateway's process.")
    verdicts = ["**Against the targets.**", "", *(f"- {n}" for n in results.notes)]
    diagnosis = report_diagnosis(results)
    plan = ["", "The report's query over everything (`EXPLAIN (ANALYZE, BUFFERS)`):", "", "```",
            *results.plan, "```"] if results.plan else []
    parts = [SECTION, "", method, "", recovery, "", apply_text, "", ingest_text, "", report_text, "", overhead_text,
             "", *tables(results), "", *verdicts, "", diagnosis, *plan, ""]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(parts))


def report_diagnosis(results: Results) -> str:
    """Where the slowest report's time goes and what would bring it under the target ("" when all are under)."""
    slow = [r for r in results.reports if statistics.median(r.runs_s) >= TARGETS["report_s"]]
    if not slow:
        return ""
    worst = max(slow, key=lambda r: statistics.median(r.runs_s))
    intervals = 2 * (worst.sites + worst.models)
    cheapest = min(results.reports, key=lambda r: r.outcomes)
    return (
        f"**Where the report's time goes** ({worst.label}, {statistics.median(worst.runs_s):.2f} s): `report.build` "
        f"spends {worst.python_s:.2f} s on {intervals} ECE bootstrap intervals ({worst.sites} sites and "
        f"{worst.models} models, raw and calibrated; {worst.python_s / intervals * 1000:.1f} ms each: "
        "`measures.ece_interval` in pure Python), a cost set by the number "
        f"of sites, not of rows ({cheapest.label} over {cheapest.outcomes:,.0f} outcomes spends "
        f"{cheapest.python_s:.2f} s there). The SQL, {worst.sql_s:.2f} s, is one aggregate over every row with an "
        "outcome, a parallel sequential scan and hash aggregate (the plan below): CPU-bound on the aggregation, "
        "so no index helps a report over all rows. What would bring it further down: the intervals drawn in bulk "
        "(numpy), or only for the sites a caller asks about, or cached until the next outcome; and for the SQL a "
        "roll-up of the bin totals per day, site and model (as `daily_spend` is for spend) updated by "
        "`record_outcomes` in its transaction, so a report adds up days × sites × bins rows instead of every "
        "decision.")


def write_section(text: str, doc: Path | None = None) -> None:
    """Replace the "Calibration (issue 21)" section of ``doc`` (append it when absent); keep the rest."""
    replace_section(doc or DOC, SECTION, text)

