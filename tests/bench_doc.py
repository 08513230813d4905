"""What every bench test checks of the doc it writes: its section replaced (twice over, still once),
the sections around it kept, and a row for each of ``rows``."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType


def check_rewrites_only_its_section(bench: ModuleType, results: object, tmp_path: Path, section: str,
                                    rows: list[str], before: str = "Router", after: str = "Admission") -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# Benchmarks\n\n## {before}\n\nkept\n\n## {section}\n\nold rows\n\n## {after}\n\nkept too\n")
    text = bench.section(results)
    bench.write_section(text, doc)
    bench.write_section(text, doc)
    out = doc.read_text()
    assert "old rows" not in out and out.count(f"## {section}") == 1
    assert f"## {before}\n\nkept\n" in out and f"## {after}\n\nkept too\n" in out
    for name in rows:
        assert f"| {name} | " in out
