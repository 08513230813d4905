"""bench/backend_memory.py on one wave: the gateway started as `make run` starts it, every figure read, the
answers compared, one table printed and written, only its own section of the doc rewritten. No thresholds."""

from __future__ import annotations

from bench import backend_memory as bench
from tests.bench_doc import check_rewrites_only_its_section


def test_the_benchmark_reads_the_gateways_memory_and_rewrites_only_its_own_section(tmp_path, monkeypatch, capsys):
    # A wave of two small requests: what is under test is the reading and the comparing, and each
    # question costs the CPU model a forward (the bench's own waves are 8 and 24 questions).
    monkeypatch.setattr(bench, "WAVE", (bench.request(2, bench.TICKET), bench.request(3, bench.TICKET)))
    results = bench.run([("this tree", bench.ROOT), ("again", bench.ROOT)], waves=1, settle=0.2,
                        pin=False)  # in a test worker, beside the suite: no core to give each side
    first, again = results.cases
    for case in results.cases:
        assert not case.error, case.error
        assert 0 < case.ready <= case.hwm and 0 < case.idle <= case.hwm and 0 < case.after <= case.hwm
        assert case.peak > 0 and case.start_s > 0 and case.load_s > 0
        assert len(case.answers) == len(bench.WAVE)  # one wave: each of its requests answered
        assert len(bench.numbers(case.answers)) >= sum(len(b["questions"]) for b in bench.WAVE)
    assert first.diff == 0 and again.diff is not None and again.diff < 1e-5  # the same code answers the same

    check_rewrites_only_its_section(bench, results, tmp_path, "Bundled backend memory", ["this tree", "again"])

    doc = tmp_path / "out.md"
    monkeypatch.setattr(bench, "run", lambda codes, **options: results)
    monkeypatch.setattr(bench, "DOC", doc)
    assert bench.main(["--waves", "1"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("| code | model cache |") == 1 and doc.read_text().count("| code | model cache |") == 1
