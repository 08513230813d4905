"""How long each ``decisions-gateway`` command takes from process start to exit, and the gateway's start to ready.

    python -m bench.cli_start [--runs 15] [--before PATH] [--no-write]

Hyperfine-like: each command is run ``--runs`` times as a fresh process (``python -c "from gateway.cli
import main; ..."``, what the ``decisions-gateway`` console script runs), after one unrecorded run
(bytecode compiled, the database file made), and the median wall time from ``Popen`` to exit is
reported, with the minimum and the maximum. The admin commands run against a SQLite file in a temporary
data directory, with a config that has one remote model (``openai/gpt-4o-mini``) and no Redis.
*gateway start to ready* is ``decisions-gateway --config ... --port P`` from ``Popen`` until
``GET /health/readiness`` answers 200 (polled every 5 ms), then stopped with SIGTERM.

``--before PATH`` also runs every command from another checkout (``PYTHONPATH=PATH``, e.g. a ``git
worktree`` of the commit before a change), interleaved run by run with this tree's, so both share the
machine's moment. Prints a table and rewrites the "CLI start" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.docs_section import machine_env, replace_section
from bench.processes import free_port

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
SECTION = "## CLI start"
ENTRY = "import sys; from gateway.cli import main; sys.exit(main())"
READY_TIMEOUT_S = 30.0
POLL_S = 0.005

# (label, argv after ``decisions-gateway``); "{config}" is the benchmark's config file
COMMANDS: list[tuple[str, list[str]]] = [
    ("--help", ["--help"]),
    ("keys --help", ["keys", "--help"]),
    ("teams --help", ["teams", "--help"]),
    ("spend --help", ["spend", "--help"]),
    ("keys create", ["keys", "create", "--config", "{config}"]),
    ("keys list", ["keys", "list", "--config", "{config}"]),
    ("teams create", ["teams", "create", "--config", "{config}"]),
    ("spend report", ["spend", "report", "--config", "{config}"]),
]
GATEWAY_READY = "gateway start to ready (remote model only)"


@dataclass
class Case:
    command: str
    tree: str  # "after" (this checkout) or "before" (--before PATH)
    times_ms: list[float] = field(default_factory=list)  # wall, Popen to exit (or to ready)
    cpu_ms: list[float] = field(default_factory=list)  # the process's user + system time
    modules: int | None = None  # modules imported (``-X importtime`` lines), the commands only

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu_ms)


@dataclass
class Results:
    env: dict[str, Any]
    cases: list[Case]

    def case(self, command: str, tree: str) -> Case | None:
        return next((c for c in self.cases if c.command == command and c.tree == tree), None)


def write_config(folder: Path) -> Path:
    config = folder / "config.yaml"
    config.write_text(json.dumps({
        "model_list": [{"model_name": "gpt", "litellm_params": {"model": "openai/gpt-4o-mini",
                                                                 "api_key": "sk-bench-not-a-real-key"}}],
        "general_settings": {"master_key": "sk-bench-master-key-0123456789",
                             "database_url": f"sqlite:///{folder / 'bench.db'}",
                             "salt_key": "bench-salt-0123456789abcdef"},
    }))
    return config


def environ(folder: Path, tree: str | None) -> dict[str, str]:
    """The commands' environment: the data directory in ``folder``, the code from ``tree`` (else this checkout)."""
    env = {**os.environ, "DECISIONS_GATEWAY_DATA_DIR": str(folder / "data")}
    for name in ("DECISIONS_GATEWAY_MASTER_KEY", "DECISIONS_GATEWAY_SALT_KEY", "DECISIONS_GATEWAY_CONFIG"):
        env.pop(name, None)
    env["PYTHONPATH"] = tree or str(ROOT)  # this checkout, whatever the venv's install points at
    return env


def time_command(argv: list[str], env: dict[str, str], cwd: Path,
                 flags: tuple[str, ...] = ()) -> tuple[float, float, str]:
    """One run of ``decisions-gateway argv``: its wall time and its CPU time (user + system) in ms, its stderr."""
    cpu_before = _children_cpu_s()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *flags, "-c", ENTRY, *argv], env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False)
    elapsed = (time.perf_counter() - started) * 1000
    cpu = (_children_cpu_s() - cpu_before) * 1000
    stderr = done.stderr.decode(errors="replace")
    if done.returncode != 0:
        raise RuntimeError(f"decisions-gateway {' '.join(argv)} exited with {done.returncode}: {stderr[-2000:]}")
    return elapsed, cpu, stderr


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the processes waited for so far
    return usage.ru_utime + usage.ru_stime


def _process_cpu_s(pid: int) -> float:
    """A running process's user + system time (Linux: /proc/PID/stat), else NaN."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def count_modules(argv: list[str], env: dict[str, str], cwd: Path) -> int:
    """How many modules ``decisions-gateway argv`` imports beyond the interpreter's start (``-X importtime``)."""
    stderr = time_command(argv, env, cwd, flags=("-X", "importtime"))[2]
    return sum(1 for line in stderr.splitlines() if line.startswith("import time:") and "|" in line) - 1  # header


def time_gateway_ready(config: Path, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """The wall time from ``Popen`` until readiness answers 200, and the gateway's CPU time by then, in ms."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/health/readiness"
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", ENTRY, "--config", str(config), "--host", "127.0.0.1",
                             "--port", str(port)], env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    if response.status == 200:
                        return (time.perf_counter() - started) * 1000, _process_cpu_s(proc.pid) * 1000
            except (urllib.error.URLError, OSError):
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"the gateway exited with {proc.returncode} before it was ready")
            if time.perf_counter() - started > READY_TIMEOUT_S:
                raise RuntimeError(f"{url} did not answer 200 within {READY_TIMEOUT_S:g} s")
            time.sleep(POLL_S)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run(runs: int = 15, before: str | None = None, gateway: bool = True,
        commands: list[tuple[str, list[str]]] | None = None) -> Results:
    commands = COMMANDS if commands is None else commands
    trees: list[tuple[str, str | None]] = [("after", None)] + ([("before", before)] if before else [])
    env_info = machine_env(runs=runs, before=before, gateway=gateway)
    cases: list[Case] = []
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        folder = Path(tmp)
        config = write_config(folder)
        envs = {tree: environ(folder, path) for tree, path in trees}
        jobs: list[tuple[str, list[str] | None]] = [
            (label, [a.format(config=config) for a in argv]) for label, argv in commands]
        if gateway:
            jobs.append((GATEWAY_READY, None))
        for label, argv in jobs:
            def job(env: dict[str, str], argv: list[str] | None = argv) -> tuple[float, float]:
                return time_command(argv, env, folder)[:2] if argv else time_gateway_ready(config, env, folder)

            timed = {tree: Case(label, tree) for tree, _ in trees}
            for tree, _ in trees:  # unrecorded: bytecode, the database file, the migrations; the module count
                job(envs[tree])
                if argv:
                    timed[tree].modules = count_modules(argv, envs[tree], folder)
            for _ in range(runs):
                for tree, _ in trees:
                    wall, cpu = job(envs[tree])
                    timed[tree].times_ms.append(wall)
                    timed[tree].cpu_ms.append(cpu)
            cases.extend(timed.values())
    return Results(env_info, cases)


def section(results: Results) -> str:
    env = results.env
    load1, load5, _ = env["load_start"]
    has_before = any(c.tree == "before" for c in results.cases)
    commands = list(dict.fromkeys(c.command for c in results.cases))
    method = (
        f"`python -m bench.cli_start --runs {env['runs']}"
        + (" --before <worktree>`" if has_before else "`")
        + f" ({env['python']}, {env['cpus']} CPUs ({env['machine']}), {env['date']}; load average "
        f"{load1:.2f} (1 min) / {load5:.2f} (5 min) at the start). Hyperfine-like: every command a fresh "
        "process (`python -c \"from gateway.cli import main; ...\"`, what the console script runs), one "
        f"unrecorded run, then {env['runs']} timed runs from `Popen` to exit: the median wall time, with the "
        "minimum and the maximum, and the median CPU time of the process (user + system; on a shared machine it "
        "moves less with the load than the wall time does). The admin commands on a SQLite file (the Alembic "
        "chain checked at each open, as the gateway does), a config with one remote model and no Redis. "
        "*Gateway start to ready*: from `Popen` until `GET /health/readiness` answers 200 (polled every 5 ms), "
        "same config; its CPU time read from `/proc` at that moment. *Modules imported*: the `import time:` "
        "lines of one more run under `python -X importtime` (modules beyond the interpreter's own start).")
    if has_before:
        method += (" *Before*: the same runs from a worktree of the commit before the change "
                   "(`PYTHONPATH=<worktree>`), interleaved run by run with *after*.")
        rows = ["| command | before: wall ms, median (min–max) | after: wall ms, median (min–max) | after / before "
                "| CPU ms, before / after | modules imported, before / after |", "|---|---:|---:|---:|---:|---:|"]
    else:
        rows = ["| command | wall ms, median | min | max | CPU ms | modules imported |",
                "|---|---:|---:|---:|---:|---:|"]
    for command in commands:
        after = results.case(command, "after")
        before = results.case(command, "before")
        if after is None:
            continue
        if has_before and before is not None:
            rows.append(f"| {command} | {_spread(before)} | {_spread(after)} | {after.median / before.median:.2f} "
                        f"| {before.cpu_median:.0f} / {after.cpu_median:.0f} | {_count(before)} / {_count(after)} |")
        else:
            rows.append(f"| {command} | {after.median:.0f} | {min(after.times_ms):.0f} | {max(after.times_ms):.0f} "
                        f"| {after.cpu_median:.0f} | {_count(after)} |")
    return "\n".join([SECTION, "", method, "", *rows, ""])


def _count(case: Case) -> str:
    return "–" if case.modules is None else f"{case.modules:,}"


def _spread(case: Case) -> str:
    return f"{case.median:.0f} ({min(case.times_ms):.0f}–{max(case.times_ms):.0f})"


def write_section(text: str, doc: Path | None = None) -> None:
    """Replace the "CLI start" section of ``doc`` (append it when absent); keep the rest."""
    replace_section(doc or DOC, SECTION, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command (after one unrecorded)")
    parser.add_argument("--before", metavar="PATH", help="also run each command from this checkout (PYTHONPATH)")
    parser.add_argument("--no-gateway", action="store_true", help="leave out the gateway's start to ready")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    text = section(run(args.runs, args.before, gateway=not args.no_gateway))
    if not args.no_write:
        write_section(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
