"""bench/backend_memory.py on one wave: the gateway started as `make run` starts it, every figure read, the
answers compared, one table printed and written, only its own section of the doc rewritten. No thresholds.

One gateway loads the model (each start is a model load, the bulk of this test's CPU): the case before it is
a checkout whose gateway cannot start, reported in its row while the next case still runs; the comparing is
checked on the measured answers and on a copy of them shifted by a known amount."""

from __future__ import annotations

import dataclasses

import pytest

from bench import backend_memory as bench
from tests.bench_doc import check_rewrites_only_its_section


def shifted(answers, by: float):
    """``answers`` with every probability and score moved by ``by``."""
    if isinstance(answers, dict):
        return {key: shifted(value, by) for key, value in answers.items()}
    if isinstance(answers, list):
        return [shifted(item, by) for item in answers]
    return answers + by if isinstance(answers, float) else answers


def test_the_benchmark_reads_the_gateways_memory_and_rewrites_only_its_own_section(tmp_path, monkeypatch, capsys):
    broken = tmp_path / "broken-checkout"  # holds both packages, but its gateway fails on import
    (broken / "backend").mkdir(parents=True)
    (broken / "backend" / "__init__.py").write_text("")
    (broken / "gateway").mkdir()
    (broken / "gateway" / "__init__.py").write_text("raise ImportError('this checkout cannot start')\n")
    # A wave of two small requests: what is under test is the reading and the comparing, and each
    # question costs the CPU model a forward (the bench's own waves are 8 and 24 questions).
    monkeypatch.setattr(bench, "WAVE", (bench.request(2, bench.TICKET), bench.request(3, bench.TICKET)))
    results = bench.run([("broken", broken), ("this tree", bench.ROOT)], waves=1, settle=0.2,
                        pin=False)  # in a test worker, beside the suite: no core to give each side
    failed, case = results.cases
    assert "exited with" in failed.error and "this checkout cannot start" in failed.error and failed.diff is None
    assert not case.error, case.error
    assert 0 < case.ready <= case.hwm and 0 < case.idle <= case.hwm and 0 < case.after <= case.hwm
    assert case.peak > 0 and case.start_s > 0 and case.load_s > 0
    assert len(case.answers) == len(bench.WAVE)  # one wave: each of its requests answered
    assert len(bench.numbers(case.answers)) >= sum(len(b["questions"]) for b in bench.WAVE)
    assert case.diff == 0  # the reference is the first case that answered
    progress = capsys.readouterr().out.splitlines()
    assert progress[0].startswith("measured: broken: FAILED ") and progress[1].startswith("measured: this tree: ")

    # Another case's answers against these: the largest difference is found, whichever number it is in.
    again = dataclasses.replace(case, label="again", answers=shifted(case.answers, 0.3), diff=None)
    bench.compare([failed, case, again])
    assert case.diff == 0 and again.diff == pytest.approx(0.3) and failed.diff is None
    results.cases.append(again)

    check_rewrites_only_its_section(bench, results, tmp_path, "Bundled backend memory", ["broken", "this tree", "again"])
    text = (tmp_path / "benchmarks.md").read_text()
    assert "| broken | converted | failed: RuntimeError: " in text and "| 3.0e-01 |" in text

    doc = tmp_path / "out.md"
    monkeypatch.setattr(bench, "run", lambda codes, **options: results)
    monkeypatch.setattr(bench, "DOC", doc)
    assert bench.main(["--waves", "1"]) == 1  # a failed case fails the command, after the table is written
    printed = capsys.readouterr().out
    assert printed.count("| code | model cache |") == 1 and doc.read_text().count("| code | model cache |") == 1
