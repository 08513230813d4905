"""What a new user waits for on a fresh clone: ``make test`` (the install included) and ``make run`` to
its first answer.

    python -m bench.make_test [--rev HEAD] [--cache warm|cold|both] [--no-run] [--no-write]

Each case clones ``--rev`` of this repository into a temporary folder (a fresh clone: no venv, no
bytecode) and runs the README's commands there:

* ``make test`` with ``PYTEST_ARGS="--durations=20"``: the wall time of the whole command, the install
  part (the whole less pytest's own "in N s"), pytest's counts and its 20 slowest tests. ``warm`` uses
  the user's package caches (uv's, which the Makefile installs with, and pip's, which installs uv);
  ``cold`` an empty ``UV_CACHE_DIR`` and ``PIP_CACHE_DIR`` (every wheel downloaded again from the
  registry; torch comes from the machine's local build either way).
* ``make run`` (warm cache only): from the command's start until ``POST /v1/systemone`` to the bundled
  model answers 200 (polled every 0.5 s), and the served process's VmRSS then.

Prints a table and rewrites the "Test suite and first run" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from bench.docs_section import machine_env, replace_section
from bench.processes import free_port

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## Test suite and first run"
FIRST_ANSWER_TIMEOUT_S = 900.0
QUESTION = {"model": "smollm2", "state": "I was charged twice, please refund one payment.",
            "questions": {"refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}}}


@dataclass
class TestRun:
    cache: str
    wall_s: float
    pytest_s: float | None
    summary: str
    returncode: int
    slowest: list[tuple[float, str]] = field(default_factory=list)

    @property
    def install_s(self) -> float | None:
        return None if self.pytest_s is None else self.wall_s - self.pytest_s


@dataclass
class FirstAnswer:
    wall_s: float
    rss_mib: float | None


def clone(rev: str, into: Path) -> Path:
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(into)], check=True)
    subprocess.run(["git", "-C", str(into), "checkout", "--quiet", rev], check=True)
    return into


def summary_of(output: str) -> tuple[str, float | None]:
    """pytest's closing line ("1900 passed, 3 skipped in 201.5s (0:03:21)") and its seconds."""
    lines = [line.strip("= ") for line in output.splitlines() if re.search(r"\b(passed|failed|error)", line)]
    closing = next((line for line in reversed(lines) if re.search(r" in [0-9.]+s", line)), "")
    seconds = re.search(r" in ([0-9.]+)s", closing)
    return closing, float(seconds.group(1)) if seconds else None


def slowest_of(output: str) -> list[tuple[float, str]]:
    found = re.findall(r"^([0-9.]+)s (call|setup|teardown)\s+(\S+)", output, re.MULTILINE)
    return [(float(s), f"{test} ({phase})") for s, phase, test in found][:20]


def make_test(rev: str, cache: str, work: Path) -> TestRun:
    tree = clone(rev, work / f"test-{cache}")
    env = dict(os.environ)
    if cache == "cold":
        env["UV_CACHE_DIR"] = str(work / "empty-uv-cache")
        env["PIP_CACHE_DIR"] = str(work / "empty-pip-cache")
    started = time.monotonic()
    done = subprocess.run(["make", "test", "PYTEST_ARGS=--durations=20 -p no:cacheprovider"], cwd=tree, env=env,
                          capture_output=True, text=True)
    wall = time.monotonic() - started
    output = done.stdout + done.stderr
    (work / f"make-test-{cache}.log").write_text(output)
    closing, seconds = summary_of(output)
    return TestRun(cache, wall, seconds, closing, done.returncode, slowest_of(output))


def post(url: str) -> int:
    request = urllib.request.Request(url, data=json.dumps(QUESTION).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


def rss_mib(port: int) -> float | None:
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            cmdline = (status.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            if "decisions-gateway" in cmdline and f"--port {port}" in cmdline:
                kib = re.search(r"^VmRSS:\s+(\d+) kB", status.read_text(), re.MULTILINE)
                return int(kib.group(1)) / 1024 if kib else None
        except OSError:
            continue
    return None


def make_run(rev: str, work: Path) -> FirstAnswer:
    tree = clone(rev, work / "run")
    port = free_port()
    started = time.monotonic()
    with open(work / "make-run.log", "wb") as log:
        proc = subprocess.Popen(["make", "run", f"PORT={port}", "HOST=127.0.0.1"], cwd=tree, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while post(f"http://127.0.0.1:{port}/v1/systemone") != 200:
            if proc.poll() is not None:
                raise RuntimeError(f"make run exited ({proc.returncode}): see {work / 'make-run.log'}")
            if time.monotonic() - started > FIRST_ANSWER_TIMEOUT_S:
                raise RuntimeError(f"no answer within {FIRST_ANSWER_TIMEOUT_S:.0f} s")
            time.sleep(0.5)
        return FirstAnswer(time.monotonic() - started, rss_mib(port))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


def minutes(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s" if seconds >= 60 else f"{seconds:.1f} s"


def section(rev: str, tests: list[TestRun], first: FirstAnswer | None, env: dict) -> str:
    load = ", ".join(f"{x:.2f}" for x in env["load_start"])
    lines = [SECTION, "",
             f"`python -m bench.make_test` on {env['date']}: a fresh `git clone` of {rev} per case, the README's "
             f"commands run in it ({env['python']}, {env['machine']}, {env['cpus']} CPUs, load average at the start "
             f"{load}). *warm*: the user's package caches (uv's, pip's); *cold*: an empty `UV_CACHE_DIR` and "
             "`PIP_CACHE_DIR` (torch still comes from the machine's local CPU build). The install part is the whole "
             "command less pytest's own time.", "",
             "| case | whole command | install | pytest | pytest's summary |", "|---|---:|---:|---:|---|"]
    for run in tests:
        lines.append(f"| `make test`, {run.cache} cache | {minutes(run.wall_s)} | {minutes(run.install_s)} | "
                     f"{minutes(run.pytest_s)} | {run.summary or f'exit {run.returncode}'} |")
    if first is not None:
        rss = f"{first.rss_mib:.0f} MiB" if first.rss_mib is not None else "-"
        lines.append(f"| `make run` to the first answer, warm cache | {minutes(first.wall_s)} | | | "
                     f"VmRSS of the served process then: {rss} |")
    if tests and tests[0].slowest:
        lines += ["", f"The 20 slowest tests of the {tests[0].cache}-cache run (wall time in their worker):", "",
                  "| seconds | test |", "|---:|---|"]
        lines += [f"| {seconds:.2f} | `{test}` |" for seconds, test in tests[0].slowest]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--cache", choices=("warm", "cold", "both"), default="both")
    parser.add_argument("--no-run", action="store_true", help="leave out make run's first answer")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.rev], check=True,
                         capture_output=True, text=True).stdout.strip()
    env = machine_env()
    with tempfile.TemporaryDirectory(prefix="bench-make-test-") as tmp:
        work = Path(tmp)
        caches = ["warm", "cold"] if args.cache == "both" else [args.cache]
        tests = [make_test(rev, cache, work) for cache in caches]
        first = None if args.no_run else make_run(rev, work)
        text = section(rev, tests, first, env)
    print(text)
    if not args.no_write:
        replace_section(DOC, SECTION, text)
    return 0 if all(run.returncode == 0 for run in tests) else 1


if __name__ == "__main__":
    raise SystemExit(main())
