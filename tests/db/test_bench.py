"""bench/outbox.py on a tiny count: every case measured, both databases drained, only its own section of the
doc rewritten. No timing assertions."""

from __future__ import annotations

from pathlib import Path

from bench import outbox as bench
from tests.db.conftest import PG_SERVER


def test_the_benchmark_measures_every_case_and_rewrites_only_its_own_section(tmp_path: Path) -> None:
    results = bench.run(rows=40, full_rows=20, warmup=2, pg_url=PG_SERVER, base_dir=str(tmp_path))
    assert [t.call for t in results.appends] == ["encode only (normalise + JSON)", "append, synchronous=NORMAL",
                                                 "append, synchronous=FULL"]
    assert [len(t.latencies_us) for t in results.appends] == [40, 40, 20]
    assert [d.database.split()[0] for d in results.drains] == ["SQLite", "PostgreSQL"]
    assert list(tmp_path.iterdir()) == []  # its temporary files are gone

    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Shared state\n\nkept\n\n## Spend outbox\n\nold rows\n")
    text = bench.section(results)
    bench.write_section(text, doc)
    bench.write_section(text, doc)
    out = doc.read_text()
    assert "old rows" not in out and out.count("## Spend outbox") == 1 and "## Shared state\n\nkept\n" in out
    assert "| append, synchronous=NORMAL | " in out and "| PostgreSQL " in out
