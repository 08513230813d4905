"""Calibration of the bundled model on a labelled set no one here wrote: the VADER sentiment lexicon (issue 21).

    python -m bench.calibration_bundled                # 1,000 words, then 500 fresh ones answered calibrated
    python -m bench.calibration_bundled --quick        # 60 + 40 words: a check of the bench itself
    python bench/calibration_bundled.py --count 400 --fresh 0 --no-write

The labels: ``vader_lexicon.txt`` from the PyPI wheel vaderSentiment==3.3.2 (MIT licence, C.J. Hutto): ~7,500
entries, each the mean of ten human valence ratings from -4 to +4. The wheel is fetched with ``pip download
--no-deps`` into ``--cache`` (default ``$DECISIONS_GATEWAY_CACHE/datasets``, else
``~/.cache/decisions-gateway/datasets``) when it is not there, its SHA-256 checked against the one pinned
here, and the file read out of the zip; the package is never imported nor installed. Words only (letters,
with ``'`` or ``-`` inside; the emoticons are left out) rated at least +1.5 (positive) or at most -1.5
(negative); a seeded, balanced sample of ``--count`` of them, and ``--fresh`` more, disjoint from the first.

The run: ``decisions-gateway`` with no ``--config`` (the embedded default: ``smollm2`` on the bundled backend,
in process, CPU fp32 unless ``DECISIONS_GATEWAY_DEVICE`` / ``_DTYPE`` say otherwise) and a temporary data
directory, so its decision log is a fresh SQLite file. Each word is one ``POST /v1/systemone`` request
(``--concurrency`` at a time over one ``httpx.Client``) with one yes/no question, "Is the sentiment of this
word positive?", state = the word. Then the outcomes (true for a positive word) go to ``POST /v1/outcomes``
(retried while it answers 404: the decision log writes behind the answers), ``GET /calibration/report`` names
the site and gives the whole set's raw figures, and ``POST /calibration/fit`` fits Platt scaling on a hashed
70/30 split and answers the held-out part's figures before and after. Last, the fresh words are asked with
``x-decisions-calibration: apply``, their outcomes posted, and the report over their time range (``start=``)
compares their raw and served (calibrated) probabilities: words neither the fit nor its held-out part saw.

Prints a table and rewrites the "Calibration on the bundled model (issue 21)" section of docs/benchmarks.md
(``--no-write`` to skip).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable, not this folder
    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    sys.path.insert(0, str(_here.parent))

import httpx  # noqa: E402

from bench.docs_section import machine_env, replace_section  # noqa: E402
from bench.processes import HOST, free_port, log_tail, stop, wait_for_http  # noqa: E402
from bench.vader_lexicon import (  # noqa: E402, F401 - the labelled set (re-exported for the bench's test)
    LEXICON,
    PACKAGE,
    THRESHOLD,
    VERSION,
    WHEEL,
    WHEEL_SHA256,
    Entry,
    Lexicon,
    Word,
    candidates,
    default_cache,
    fetch_wheel,
    labelled,
    read_wheel,
    sha256_of,
)
from gateway.calibration.measures import DRAWS  # noqa: E402 - the fit's held-out intervals' draws

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Calibration on the bundled model (issue 21)"

MODEL = "smollm2"
QUESTION_ID = "positive"
QUESTION = {"type": "noul", "instructions": "Is the sentiment of this word positive?"}
APPLY = {"x-decisions-calibration": "apply"}
OUTCOME_BATCH = 1000  # gateway/admin/calibration.py MAX_OUTCOMES


# -- the gateway -----------------------------------------------------------------------------------------


@contextmanager
def serving(data_dir: Path, timeout: float = 600.0) -> Iterator[str]:
    """``decisions-gateway`` on the embedded default (no ``--config``), its data (the SQLite decision log, the
    salt) in ``data_dir``; yields its base URL once ``/health/readiness`` answers (the model loaded)."""
    env = dict(os.environ, DECISIONS_GATEWAY_DATA_DIR=str(data_dir))
    env.setdefault("DECISIONS_GATEWAY_DEVICE", "cpu")
    env.setdefault("DECISIONS_GATEWAY_DTYPE", "float32")
    port = free_port()
    log = data_dir / "gateway.log"
    program = str(Path(sys.executable).with_name("decisions-gateway"))
    with log.open("wb") as out:
        proc = subprocess.Popen([program, "--host", HOST, "--port", str(port), "--log-level", "warning"], cwd=data_dir,
                                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://{HOST}:{port}"
    try:
        wait_for_http(f"{base}/health/readiness", proc, time.monotonic() + timeout, log)
        yield base
    except Exception as exc:
        raise RuntimeError(f"{exc}\n{log_tail(log, 2000)}") from exc
    finally:
        stop(proc)


@dataclass
class Asked:
    word: Word
    request_id: str
    p_yes: float  # what the caller was served
    calibration: str  # the x-decisions-calibration header ("" when absent)
    label_mass: float = float("nan")  # the backend's share of the next-token mass on the yes / no labels


def ask(client: httpx.Client, base: str, word: Word, headers: dict | None = None) -> Asked:
    body = {"model": MODEL, "state": word.text, "questions": {QUESTION_ID: QUESTION}}
    for attempt in range(5):
        response = client.post(f"{base}/v1/systemone", json=body, headers=headers or {})
        if response.status_code != 503 or attempt == 4:  # 503: the backend's queue is full; wait and ask again
            break
        time.sleep(float(response.headers.get("retry-after") or 1))
    if response.status_code != 200:
        raise RuntimeError(f"/v1/systemone answered {response.status_code} for {word.text!r}: {response.text[:300]}")
    answer = response.json()["answers"][QUESTION_ID]
    return Asked(word, response.headers["x-request-id"], float(answer["noul"]),
                 response.headers.get("x-decisions-calibration", ""), float(answer.get("x_label_mass", "nan")))


def ask_all(client: httpx.Client, base: str, words: list[Word], concurrency: int,
            headers: dict | None = None) -> tuple[list[Asked], float]:
    """Every word asked, ``concurrency`` at a time; and the seconds it took."""
    started = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        asked = list(pool.map(lambda w: ask(client, base, w, headers), words))
    return asked, time.monotonic() - started


def post_outcomes(client: httpx.Client, base: str, asked: list[Asked], wait_s: float = 120.0) -> float:
    """Each word's outcome (true: positive) posted, in batches; a batch is refused whole (404) while one of its
    requests is not in the decision log yet, so it is posted again until it is taken. Returns the seconds
    waited for the log."""
    started = time.monotonic()
    deadline = started + wait_s
    for start in range(0, len(asked), OUTCOME_BATCH):
        batch = [{"request_id": a.request_id, "question": QUESTION_ID, "outcome": a.word.positive}
                 for a in asked[start:start + OUTCOME_BATCH]]
        while True:
            posted = client.post(f"{base}/v1/outcomes", json={"outcomes": batch})
            if posted.status_code == 200:
                break
            if posted.status_code != 404 or time.monotonic() > deadline:
                raise RuntimeError(f"/v1/outcomes answered {posted.status_code}: {posted.text[:300]}")
            time.sleep(0.1)
    return time.monotonic() - started


def report(client: httpx.Client, base: str, **params: str) -> dict:
    got = client.get(f"{base}/calibration/report", params={"model_group": MODEL, **params})
    if got.status_code != 200:
        raise RuntimeError(f"/calibration/report answered {got.status_code}: {got.text[:300]}")
    return got.json()


def the_site(found: dict) -> dict:
    sites = [s for s in found["sites"] if s["model_group"] == MODEL]
    if len(sites) != 1:
        raise RuntimeError(f"the report names {len(sites)} sites of {MODEL}, not one: {sites}")
    return sites[0]


def auc(asked: list[Asked]) -> float:
    """The chance that a positive word gets a higher P(yes) than a negative one (ties half): calibration-free,
    and the same after Platt scaling (monotone)."""
    ranked = sorted(asked, key=lambda a: a.p_yes)
    pos = sum(a.word.positive for a in ranked)
    neg = len(ranked) - pos
    if not pos or not neg:
        return float("nan")
    rank_sum, i = 0.0, 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j].p_yes == ranked[i].p_yes:
            j += 1
        mid = (i + 1 + j) / 2  # the mean 1-based rank of the tie
        rank_sum += mid * sum(a.word.positive for a in ranked[i:j])
        i = j
    return (rank_sum - pos * (pos + 1) / 2) / (pos * neg)


def spread(asked: list[Asked]) -> dict:
    """How far the raw P(yes) strays from 0.5: its 5th and 95th percentiles, how often it is 0.5 or more, and
    the backend's mean label mass."""
    ps = sorted(a.p_yes for a in asked)
    if not ps:
        return {}

    def at(q: float) -> float:
        return ps[min(len(ps) - 1, int(q * len(ps)))]

    masses = [a.label_mass for a in asked if a.label_mass == a.label_mass]
    return {"p05": at(0.05), "p95": at(0.95), "yes_share": sum(p >= 0.5 for p in ps) / len(ps),
            "label_mass": sum(masses) / len(masses) if masses else float("nan")}


# -- the run ---------------------------------------------------------------------------------------------


@dataclass
class Results:
    env: dict
    lexicon: dict
    count: int
    fresh: int
    site: str = ""
    first_s: float = 0.0
    first_wait_s: float = 0.0
    whole: dict = field(default_factory=dict)  # the report's raw figures over the first set
    fit: dict = field(default_factory=dict)  # POST /calibration/fit's answer
    fresh_s: float = 0.0
    fresh_report: dict = field(default_factory=dict)  # {"raw": ..., "calibrated": ...} over the fresh set
    applied: int = 0  # fresh answers with "x-decisions-calibration: applied"
    first_auc: float = float("nan")
    mean_p_yes: dict = field(default_factory=dict)  # first set: mean raw P(yes) of the positive and negative words
    spread: dict = field(default_factory=dict)  # first set: raw P(yes)'s 5th and 95th percentiles, share >= 0.5
    interval: str = ""  # the report's words for the ECE interval
    total_s: float = 0.0
    load_end: float = 0.0


def run(lexicon: Lexicon, count: int, fresh: int, *, seed: int = 21, concurrency: int = 4,
        base: str | None = None, data_dir: Path | None = None) -> Results:
    """The whole bench on ``lexicon``; ``base``: a gateway already serving the embedded default with a decision
    log (a test's), else one is started with its data in ``data_dir`` (else a temporary folder)."""
    first, second = labelled(lexicon, count, fresh, seed)
    positive, negative = candidates(lexicon)
    info = {"package": f"{PACKAGE}=={VERSION}", "file": LEXICON, "licence": lexicon.licence,
            "licence_line": lexicon.licence_line, "sha256": lexicon.sha256, "entries": len(lexicon.entries),
            "positive": len(positive), "negative": len(negative), "seed": seed}
    results = Results(machine_env(concurrency=concurrency), info, len(first), len(second))
    started = time.monotonic()
    with _gateway(base, data_dir) as url, httpx.Client(timeout=300) as client:
        ask(client, url, Word("warm-up", True, 0.0))  # the first answer reads every weight; not in the figures
        asked, results.first_s = ask_all(client, url, first, concurrency)
        print(f"measured: {len(asked)} words in {results.first_s:.0f} s", flush=True)
        results.first_wait_s = post_outcomes(client, url, asked)
        found = report(client, url)
        site = the_site(found)
        results.site, results.whole, results.interval = site["site"], site["raw"], found["binning"]["interval"]
        results.first_auc = auc(asked)
        for side, name in ((True, "positive"), (False, "negative")):
            ps = [a.p_yes for a in asked if a.word.positive is side]
            results.mean_p_yes[name] = sum(ps) / len(ps) if ps else float("nan")
        results.spread = spread(asked)
        fitted = client.post(f"{url}/calibration/fit", json={"model_group": MODEL, "site": results.site})
        if fitted.status_code != 200:
            raise RuntimeError(f"/calibration/fit answered {fitted.status_code}: {fitted.text[:300]}")
        results.fit = fitted.json()
        print(f"fitted: {results.fit['method']} {results.fit['params']}", flush=True)
        if second:
            since = dt.datetime.now(dt.UTC).isoformat()
            calibrated, results.fresh_s = ask_all(client, url, second, concurrency, APPLY)
            print(f"measured: {len(calibrated)} fresh words in {results.fresh_s:.0f} s", flush=True)
            results.applied = sum(a.calibration.startswith("applied") for a in calibrated)
            post_outcomes(client, url, calibrated)
            later = the_site(report(client, url, site=results.site, start=since))
            results.fresh_report = {"raw": later["raw"], "calibrated": later["calibrated"]}
    results.total_s = time.monotonic() - started
    results.load_end = os.getloadavg()[0]
    return results


@contextmanager
def _gateway(base: str | None, data_dir: Path | None) -> Iterator[str]:
    if base is not None:
        yield base
        return
    if data_dir is not None:
        data_dir.mkdir(parents=True, exist_ok=True)
        with serving(data_dir) as url:
            yield url
        return
    with tempfile.TemporaryDirectory(prefix="bench-calibration-") as tmp, serving(Path(tmp)) as url:
        yield url


# -- the table and the doc -------------------------------------------------------------------------------


HEADER = "| words | answers | n | accuracy | Brier | log loss | ECE (95 % interval) |"


def _fmt(x: Any, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


BELOW = "†"
BELOW_NOTE = (f"{BELOW} the ECE lies below its own bootstrap interval: a resampled ECE adds sampling noise to the "
              "gaps (an absolute value cannot cancel it), so the percentile interval sits above an ECE near 0.")


def row(words: str, answers: str, m: dict) -> str:
    low, high = m.get("ece_interval") or (None, None)
    below = BELOW if m.get("ece") is not None and low is not None and m["ece"] < low else ""
    ece = f"{_fmt(m.get('ece'))}{below} ({_fmt(low)}–{_fmt(high)})" if m.get("ece") is not None else "—"
    return (f"| {words} | {answers} | {m.get('n', 0):.0f} | {_fmt(m.get('accuracy'))} | {_fmt(m.get('brier'), 4)} "
            f"| {_fmt(m.get('log_loss'), 4)} | {ece} |")


def table(results: Results) -> list[str]:
    held = results.fit["held_out"]
    lines = [HEADER, "|---|---|---:|---:|---:|---:|---|",
             row(f"held-out 30 % of the {results.count} (hashed split)", "raw", held["before"]),
             row(f"held-out 30 % of the {results.count} (hashed split)", "Platt-calibrated", held["after"])]
    if results.fresh_report:
        lines += [row(f"{results.fresh} fresh words (not in the fit)", "raw", results.fresh_report["raw"]),
                  row(f"{results.fresh} fresh words (not in the fit)", "served, calibrated",
                      results.fresh_report["calibrated"])]
    lines.append(row(f"all {results.count} of the first set (report)", "raw", results.whole))
    return lines


def section(results: Results) -> str:
    env, lex, fit = results.env, results.lexicon, results.fit
    params = fit.get("params", {})
    sp = results.spread
    dataset = (
        f"**Labelled set**: the VADER sentiment lexicon, `{lex['file']}` from the PyPI wheel `{lex['package']}` "
        f"(licence in its metadata: *{lex['licence']}*; LICENSE.txt: \"{lex['licence_line']}\"; wheel SHA-256 "
        f"`{lex['sha256'][:16]}…`, pinned in the bench; read out of the zip, never installed). {lex['entries']:,} "
        "entries, each the mean of ten people's valence ratings from -4 to +4. Words only (letters, `'` or `-` "
        f"inside: emoticons left out) rated ≥ +{THRESHOLD} (positive: {lex['positive']:,}) or ≤ -{THRESHOLD} "
        f"(negative: {lex['negative']:,}); a balanced sample (seed {lex['seed']}) of {results.count} words and "
        f"{results.fresh} fresh ones, disjoint.")
    method = (
        f"**Method**: `python -m bench.calibration_bundled` — `decisions-gateway` with no `--config` (the embedded "
        "default: `smollm2`, SmolLM2-135M-Instruct on the bundled backend, CPU fp32) and a fresh SQLite decision "
        f"log; {env['python']}, {env['machine']}, {env['cpus']} CPUs, load average {env['load_start'][0]:.1f} at "
        f"the start, {env['date']}. One `POST /v1/systemone` per word, {env['concurrency']} at a time: System One "
        f"`{{\"type\": \"noul\", \"instructions\": \"{QUESTION['instructions']}\"}}`, state = the word. Outcomes "
        "(true for a positive word) through `POST /v1/outcomes`, then `POST /calibration/fit` on the site: Platt "
        "scaling for yes/no fitted on the train part of the gateway's hashed 70/30 split "
        f"({fit.get('train_n')} train, {fit.get('held_out_n')} held out), figures on the held-out part. Then the "
        "fresh words with `x-decisions-calibration: apply` "
        f"({results.applied} of {results.fresh} answers `applied`), and `GET /calibration/report?start=` over "
        "their time range: raw against served (calibrated). Accuracy is top-1 (P(yes) ≥ 0.5 means yes); ECE over "
        f"15 equal bins of the top-1 probability; intervals the gateway's: the report's {results.interval}, the "
        f"fit's held-out ones {DRAWS} draws.")
    timing = (f"Times: {results.count} words in {results.first_s:.0f} s "
              f"({results.count / results.first_s:.1f} requests/s)" if results.first_s else "Times: —")
    if results.fresh_s:
        timing += f", {results.fresh} fresh in {results.fresh_s:.0f} s"
    timing += (f"; the log took {results.first_wait_s:.1f} s to take the outcomes; {results.total_s:.0f} s in all, "
               f"load average {env['load_start'][0]:.1f} at the start and {results.load_end:.1f} at the end (a shared "
               "machine: other jobs slow the requests; the figures do not depend on it). With the defaults "
               "(1,000 words, 500 fresh) a run took 2.5 minutes on 2 idle cores and up to 13 beside another "
               "suite's tests.")
    fitted = (f"Fitted: Platt a = {params.get('a', float('nan')):.3f}, b = {params.get('b', float('nan')):.3f} "
              "(P' = sigmoid(a·logit(P) + b)). Raw P(yes), mean over the positive words "
              f"{results.mean_p_yes.get('positive', float('nan')):.3f}, over the negative ones "
              f"{results.mean_p_yes.get('negative', float('nan')):.3f}; AUC {results.first_auc:.3f} (0.5 is chance; "
              "Platt scaling is monotone, so it cannot change it). Raw P(yes) stays close to 0.5: 5th to 95th "
              f"percentile {sp.get('p05', float('nan')):.3f}–{sp.get('p95', float('nan')):.3f}, 0.5 or more for "
              f"{100 * sp.get('yes_share', float('nan')):.0f} % of the words; the backend's label mass (the share of "
              f"the next-token probability on the yes / no labels) is {sp.get('label_mass', float('nan')):.3f} on "
              "average." + (" So the raw answers are already close to calibrated in ECE's sense (a confidence near 0.5 "
                            "and an accuracy near 0.5), and there is little for a calibrator to correct."
                            if sp.get("p95", 1.0) - sp.get("p05", 0.0) < 0.2 else ""))
    caveat = (
        "**Read with care**: SmolLM2-135M is the offline test model, near chance on this task; these figures "
        "show the calibration loop working end to end on labels no one here wrote, not the quality of a model. "
        "Platt scaling is monotone, so it cannot add discrimination: it rescales (a) and shifts (b) the "
        "probabilities, which moves the ECE, Brier and log loss and, through the 0.5 cut, the accuracy.")
    rows = table(results)
    note = [BELOW_NOTE, ""] if any(BELOW in r for r in rows[2:]) else []
    return "\n".join([SECTION, "", dataset, "", method, "", *rows, "", *note, verdict(results), "", fitted, "",
                      timing, "", caveat, ""])


def verdict(results: Results) -> str:
    """What the calibrator did, on the held-out part and on the fresh words: lower or not, and the ECE's change
    set against its interval's width (a small set's ECE moves by chance as much)."""
    parts = [("held out", results.fit["held_out"]["before"], results.fit["held_out"]["after"])]
    if results.fresh_report:
        parts.append(("fresh", results.fresh_report["raw"], results.fresh_report["calibrated"]))
    said = []
    for name, raw, cal in parts:
        moves = []
        for key, label in (("ece", "ECE"), ("brier", "Brier"), ("log_loss", "log loss")):
            if raw.get(key) is not None and cal.get(key) is not None:
                lower = "lower" if cal[key] < raw[key] else "NOT lower"
                digits = 3 if key == "ece" else 4
                moves.append(f"{label} {raw[key]:.{digits}f} → {cal[key]:.{digits}f} ({lower})")
        low, high = raw.get("ece_interval") or (None, None)
        width = ""
        if low is not None and high is not None and raw.get("ece") is not None and cal.get("ece") is not None:
            inside = abs(cal["ece"] - raw["ece"]) < (high - low) / 2
            width = (f"; the raw ECE's interval is {high - low:.3f} wide, so the ECE's change is "
                     + ("well inside the noise" if inside else "larger than half of it"))
        said.append(f"{name} ({raw.get('n', 0):.0f}): " + ", ".join(moves) + width)
    return ("Calibrated against raw: " + "; ".join(said) + ". The split hashes the gateway's request ids, new on "
            "every run, so the held-out part and the fit differ from run to run (the first set's own figures "
            "repeat).")



def write_section(text: str, doc: Path | None = None) -> None:
    replace_section(doc or DOC, SECTION, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000, help="words of the first set, fitted on (default 1000)")
    parser.add_argument("--fresh", type=int, default=500,
                        help="fresh words asked calibrated after the fit (default 500; 0: none)")
    parser.add_argument("--quick", action="store_true", help="60 words and 40 fresh ones (a check of the bench)")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight (default 4)")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--cache", type=Path, default=None, help="where the wheel is kept (default: "
                        "$DECISIONS_GATEWAY_CACHE/datasets, else ~/.cache/decisions-gateway/datasets)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    count, fresh = (60, 40) if args.quick else (args.count, args.fresh)
    if count < 50:
        parser.error("--count: a fit needs at least 50 outcomes")
    lexicon = read_wheel(fetch_wheel(args.cache or default_cache()))
    results = run(lexicon, count, fresh, seed=args.seed, concurrency=args.concurrency)
    text = section(results)
    print("\n" + text)
    if not args.no_write:
        write_section(text)
        print(f"wrote the '{SECTION[3:]}' section of {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
