"""Memory of the gateway serving the bundled model the way ``make run`` does (config.example.yaml,
``local/smollm2`` in-process, CPU fp32): RSS when ready, idle with the weights resident, under load and
after it.

    python -m bench.backend_memory                          # this tree, the converted model already cached
    python -m bench.backend_memory --before /tmp/before     # and an older checkout (git worktree add ...)
    python -m bench.backend_memory --first-run              # also with an empty model cache (GGUF converted)

Each case starts ``decisions-gateway --config config.example.yaml`` with ``PYTHONPATH`` at its code,
pinned to one core while the client runs on another (``--no-pin`` to leave both free), and reads
``/proc/<pid>/status``: *ready* once ``/health/readiness`` answers 200 (the model loaded, its weights
mapped but not yet read), *idle* after one small request has read every weight and 2 s of quiet,
*peak under load* the highest VmRSS sampled every 20 ms while ``--waves`` waves of two concurrent
requests run (8 questions over a ~100-token ticket and 24 over a ~400-token one), *after load* 2 s
after the last answer, and VmHWM (the process's high-water mark, the conversion included on a first
run). The answers of every case are compared with the first case's: the largest difference of any
probability or score is reported. Prints a table and rewrites the "Bundled backend memory" section of
docs/benchmarks.md (``--no-write`` to skip).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable, not this folder
    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    sys.path.insert(0, str(_here.parent))

from bench.docs_section import machine_env, replace_section  # noqa: E402
from bench.processes import (  # noqa: E402
    HOST,
    free_port,
    http_json,
    log_tail,
    pinned_to,
    pinning,
    rss_mib,
    stop,
    this_process_on,
    wait_for_http,
)

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Bundled backend memory"
CONFIG = ROOT / "config.example.yaml"
TICKET = ("Hi, I was charged twice for my March invoice (order 4471) and I need one of the payments refunded "
          "before the end of the week, or my account goes overdrawn. ")
REPORT = ("After updating to 4.2 the app crashes every time I tap Save on a draft that has photos. Steps: open a "
          "draft, attach two photos, tap Save. The screen freezes, then the app closes. It worked fine in 4.1. ")


def question(i: int) -> dict:
    """The playground's shapes (ui/js/presets.js): a predicate, a choice with descriptions, a score."""
    if i % 3 == 0:
        return {"type": "predicate", "name": f"urgent_{i}", "instructions": f"Does the customer need an answer "
                f"within a day? (check {i})"}
    if i % 3 == 1:
        return {"type": "choice", "name": f"team_{i}", "instructions": f"Which team should handle this? ({i})",
                "choices": [{"value": "billing", "description": "Invoices, payments and refunds"},
                            {"value": "technical", "description": "Bugs and outages"},
                            {"value": "sales", "description": "Plans, quotes and upgrades"},
                            {"value": "account", "description": "Access and account settings"}]}
    return {"type": "score", "name": f"severity_{i}", "instructions": f"How severe is the problem? ({i})",
            "levels": [{"label": "Cosmetic"}, {"label": "Minor"}, {"label": "Major"},
                       {"label": "Critical", "description": "the user cannot work"}]}


def request(questions: int, text: str) -> dict:
    return {"model": "smollm2", "input": text, "questions": [question(i) for i in range(questions)]}


WAVE = (request(8, TICKET * 2), request(24, (REPORT + TICKET) * 4))  # ~100 and ~400 input tokens
WARM_UP = request(1, TICKET)


@dataclass
class Case:
    label: str
    code: Path
    first_run: bool = False
    ready: float = 0.0
    idle: float = 0.0
    peak: float = 0.0
    after: float = 0.0
    hwm: float = 0.0
    idle_file: float = 0.0  # of ``idle``: file-backed pages (the mapped weights, the libraries)
    start_s: float = 0.0
    load_s: float = 0.0
    answers: list = field(default_factory=list)
    diff: float | None = None  # largest difference from the first case's answers
    error: str = ""


@dataclass
class Results:
    cases: list[Case]
    env: dict


@contextmanager
def peak_rss(pid: int, period: float = 0.02) -> Iterator[list[float]]:
    """The highest VmRSS of process ``pid`` while the block runs (``[MiB]``), sampled every ``period`` s."""
    peak = [0.0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                peak[0] = max(peak[0], rss_mib(pid)[0])
            except OSError:  # the process is gone
                return
            done.wait(period)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        done.set()
        sampler.join()


def file_backed_mib(pid: int) -> float:
    """RssFile of a process in MiB: pages mapped from files (a mapped weights file, shared libraries)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def numbers(answers) -> list[float]:
    """Every probability and score of a response, in order."""
    out: list[float] = []
    if isinstance(answers, dict):
        for key in sorted(answers):
            out += numbers(answers[key])
    elif isinstance(answers, list):
        for item in answers:
            out += numbers(item)
    elif isinstance(answers, float):
        out.append(answers)
    return out


def ask(base: str, body: dict, timeout: float) -> dict:
    status, answer = http_json("POST", f"{base}/v1/decisions", body, timeout=timeout)
    if status != 200:
        raise RuntimeError(f"/v1/decisions answered {status}: {str(answer)[:300]}")
    return answer


def measure(case: Case, waves: int, cores: set[int] | None, settle: float, timeout: float) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as folder:
        tmp = Path(folder)
        env = dict(os.environ, PYTHONPATH=str(case.code), DECISIONS_GATEWAY_DEVICE="cpu",
                   DECISIONS_GATEWAY_DTYPE="float32")
        if case.first_run:
            env["DECISIONS_GATEWAY_CACHE"] = str(tmp / "cache")
        port = free_port()
        log = tmp / "gateway.log"
        gateway = str(Path(sys.executable).with_name("decisions-gateway"))
        started = time.monotonic()
        with log.open("wb") as out:
            proc = subprocess.Popen([gateway, "--config", str(CONFIG), "--host", HOST, "--port", str(port)],
                                    cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    preexec_fn=pinned_to(cores))
        base = f"http://{HOST}:{port}"
        try:
            wait_for_http(f"{base}/health/readiness", proc, time.monotonic() + timeout, log)
            case.start_s = time.monotonic() - started
            time.sleep(settle)
            case.ready = rss_mib(proc.pid)[0]
            ask(base, WARM_UP, timeout)
            time.sleep(settle)
            case.idle = rss_mib(proc.pid)[0]
            case.idle_file = file_backed_mib(proc.pid)
            t = time.monotonic()
            with peak_rss(proc.pid) as peak, ThreadPoolExecutor(len(WAVE)) as pool:
                for _ in range(waves):
                    case.answers += list(pool.map(lambda body: ask(base, body, timeout)["answers"], WAVE))
            case.load_s = time.monotonic() - t
            case.peak = peak[0]
            time.sleep(settle)
            case.after, case.hwm = rss_mib(proc.pid)
        except Exception as exc:  # noqa: BLE001 - one broken case is reported, the others still run
            case.error = f"{type(exc).__name__}: {exc}\n{log_tail(log, 1500)}"
        finally:
            stop(proc)


def run(codes: list[tuple[str, Path]], *, first_run: bool = False, waves: int = 3, pin: bool = True,
        settle: float = 2.0, timeout: float = 300.0) -> Results:
    for _, code in codes:  # else the editable install's finder would quietly import this tree's packages instead
        if not (code / "backend" / "__init__.py").is_file() or not (code / "gateway" / "__init__.py").is_file():
            raise FileNotFoundError(f"{code} holds no backend/ and gateway/ packages to measure")
    pins = pinning(pin)
    cores, client_cores = pins if pins else (None, None)
    cases = [Case(label, code) for label, code in codes]
    if first_run:
        cases += [Case(label, code, first_run=True) for label, code in codes]
    with this_process_on(client_cores):
        for case in cases:
            measure(case, waves, cores, settle, timeout)
            print(progress_line(case), flush=True)
    compare(cases)
    env = machine_env(waves=waves, requests=waves * len(WAVE), questions=[len(b["questions"]) for b in WAVE],
                      pinned=f"gateway on core {min(cores)}, client on core {min(client_cores)}"
                      if cores and client_cores else "not pinned")
    return Results(cases, env)


def compare(cases: list[Case]) -> None:
    """Set each answered case's ``diff``: the largest difference of any probability or score from the answers
    of the first case that answered (failed cases have none)."""
    reference = next((c for c in cases if not c.error), None)
    for case in cases:
        if reference is not None and not case.error:
            ours, theirs = numbers(case.answers), numbers(reference.answers)
            case.diff = max((abs(a - b) for a, b in zip(ours, theirs, strict=True)), default=0.0)


def progress_line(case: Case) -> str:
    if case.error:
        return f"measured: {case.label}: FAILED {case.error.splitlines()[0]}"
    return (f"measured: {case.label}{' (first run)' if case.first_run else ''}: ready {case.ready:.0f} MiB, "
            f"idle {case.idle:.0f}, peak under load {case.peak:.0f}, after {case.after:.0f}, HWM {case.hwm:.0f}")


HEADER = ("| code | model cache | RSS ready (MiB) | RSS idle, weights resident (of it file-backed) "
          "| peak RSS under load | RSS after load | VmHWM | start s | load s | answers vs first row |")


def format_row(case: Case) -> str:
    cache = "empty (GGUF converted at start)" if case.first_run else "converted"
    if case.error:
        return f"| {case.label} | {cache} | failed: {case.error.splitlines()[0][:120]} |" + " |" * 7
    diff = "—" if case.diff is None else ("identical" if case.diff == 0 else f"{case.diff:.1e}")
    return (f"| {case.label} | {cache} | {case.ready:.0f} | {case.idle:.0f} ({case.idle_file:.0f}) | {case.peak:.0f} "
            f"| {case.after:.0f} "
            f"| {case.hwm:.0f} | {case.start_s:.1f} | {case.load_s:.1f} | {diff} |")


def section(results: Results) -> str:
    env = results.env
    method = (
        f"`python -m bench.backend_memory` — `decisions-gateway --config config.example.yaml` (`local/smollm2`, "
        f"SmolLM2-135M in-process, CPU fp32), {env['python']}, {env['machine']}, {env['cpus']} CPUs, "
        f"{env['pinned']}, load average {env['load_start'][0]:.1f} at the start, {env['date']}. RSS from "
        "/proc/<pid>/status: *ready* when /health/readiness answers (quantised matrices loaded, other weights "
        "mapped, not yet read); *idle* after one 1-question request and 2 s (every weight read); *peak under "
        "load* sampled every 20 ms over "
        f"{env['requests']} requests, two at a time ({' and '.join(map(str, env['questions']))} questions over "
        "~100- and ~400-token inputs, the playground's predicate / choice / score shapes); *after load* 2 s "
        "after the last answer. Times are wall clock on a shared machine, for orientation only.")
    rows = [HEADER, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|", *[format_row(c) for c in results.cases]]
    return "\n".join([SECTION, "", method, "", *rows, "", verdict(results), ""])


TARGET_IDLE_MIB, TARGET_LOAD_MIB = 800, 1024  # issue 18: under 800 MB idle, under 1 GB under load


def verdict(results: Results) -> str:
    ours = next((c for c in results.cases if c.label.startswith("this tree") and not c.first_run and not c.error), None)
    if ours is None:
        return ""
    idle_ok, load_ok = ours.idle < TARGET_IDLE_MIB, ours.peak < TARGET_LOAD_MIB
    return (f"Targets (issue 18): idle under {TARGET_IDLE_MIB} MiB: {ours.idle:.0f}, "
            f"{'met' if idle_ok else 'NOT met'}; under load under {TARGET_LOAD_MIB} MiB: {ours.peak:.0f}, "
            f"{'met' if load_ok else 'NOT met'}. Where the rest goes (the weights, torch, "
            "transformers, the gateway) and what would go further: backend/README.md, *Memory*.")


def code_label(name: str, code: Path, extra: str = "") -> str:
    """``name (commit)``, the commit of the checkout when git can tell it."""
    try:
        sha = subprocess.run(["git", "-C", str(code), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return f"{name} ({sha}{extra})" if sha else name


def write_section(text: str, doc: Path | None = None) -> None:
    replace_section(doc or DOC, SECTION, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="an older checkout to measure first (its code via PYTHONPATH)")
    parser.add_argument("--first-run", action="store_true", help="also start each with an empty model cache")
    parser.add_argument("--waves", type=int, default=3, help="waves of two concurrent requests under load")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds for a start or a request")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the gateway and the client apart")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    codes = ([(code_label("before", args.before.resolve()), args.before.resolve())] if args.before else []) + [
        (code_label("this tree", ROOT, " + working tree"), ROOT)]
    results = run(codes, first_run=args.first_run, waves=args.waves, pin=not args.no_pin, timeout=args.timeout)
    text = section(results)
    print(text)
    if not args.no_write:
        write_section(text)
    return 1 if any(c.error for c in results.cases) else 0


if __name__ == "__main__":
    sys.exit(main())
