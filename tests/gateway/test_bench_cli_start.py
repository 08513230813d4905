"""bench/cli_start.py on one run of a few commands: every command timed (and its modules counted) for both trees,
the gateway's start to ready included, only its own section of the doc rewritten. No timing assertions."""

from __future__ import annotations

from pathlib import Path

from bench import cli_start as bench
from tests.bench_doc import check_rewrites_only_its_section

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [(label, argv) for label, argv in bench.COMMANDS if label in ("--help", "keys create")]  # one lazy, one admin action


def test_the_benchmark_times_every_command_and_rewrites_only_its_own_section(tmp_path: Path) -> None:
    results = bench.run(runs=1, before=str(ROOT), commands=COMMANDS)  # "before" is this tree too
    labels = [label for label, _ in COMMANDS] + [bench.GATEWAY_READY]
    assert [(c.command, c.tree) for c in results.cases] == [(n, t) for n in labels for t in ("after", "before")]
    assert all(len(c.times_ms) == len(c.cpu_ms) == 1 and c.times_ms[0] > 0 for c in results.cases)
    assert all((c.modules is None) == (c.command == bench.GATEWAY_READY) for c in results.cases)
    assert all(c.modules > 10 for c in results.cases if c.modules is not None)

    check_rewrites_only_its_section(bench, results, tmp_path, "CLI start", labels)
    assert "after / before" in (tmp_path / "benchmarks.md").read_text()
