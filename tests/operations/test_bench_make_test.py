"""bench/make_test.py reads pytest's closing line and its slowest tests out of make's output, and
rewrites only its own section of the doc. (The bench itself runs make test on a fresh clone: minutes.)"""

from __future__ import annotations

from bench import make_test as bench
from bench.docs_section import machine_env

OUTPUT = """\
.venv/bin/pip install -e '.[backend]'
============================= slowest 20 durations =============================
24.42s call     tests/reliability/test_soak.py::test_a_soak
5.43s teardown tests/ui/test_validate_api.py::test_key_info
0.50s setup    tests/ui/test_quality.py::test_every_page[1280]
=========================== short test summary info ============================
SKIPPED [1] tests/ui/test_quality.py:97: chromium is not installed
================= 1867 passed, 27 skipped in 201.50s (0:03:21) =================
"""


def test_the_closing_line_and_the_slowest_tests_are_read_from_the_output():
    closing, seconds = bench.summary_of(OUTPUT)
    assert closing == "1867 passed, 27 skipped in 201.50s (0:03:21)" and seconds == 201.5
    assert bench.slowest_of(OUTPUT) == [(24.42, "tests/reliability/test_soak.py::test_a_soak (call)"),
                                        (5.43, "tests/ui/test_validate_api.py::test_key_info (teardown)"),
                                        (0.5, "tests/ui/test_quality.py::test_every_page[1280] (setup)")]
    assert bench.summary_of("make: *** [Makefile:30: test] Error 2\n") == ("", None)


def test_the_table_is_written_into_its_own_section_only(tmp_path):
    run = bench.TestRun("warm", 250.0, 190.0, "1900 passed in 190.00s (0:03:10)", 0,
                        bench.slowest_of(OUTPUT))
    text = bench.section("abc1234", [run], bench.FirstAnswer(70.0, 712.4), machine_env())
    assert "| `make test`, warm cache | 4 min 10.0 s | 1 min 00.0 s | 3 min 10.0 s | 1900 passed" in text
    assert "| `make run` to the first answer, warm cache | 1 min 10.0 s |" in text and "712 MiB" in text
    assert "| 24.42 | `tests/reliability/test_soak.py::test_a_soak (call)` |" in text
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# Benchmarks\n\n## Before\n\nkept\n\n{bench.SECTION}\n\nold rows\n\n## After\n\nkept too\n")
    bench.replace_section(doc, bench.SECTION, text)
    bench.replace_section(doc, bench.SECTION, text)
    out = doc.read_text()
    assert "old rows" not in out and out.count(bench.SECTION) == 1
    assert "## Before\n\nkept\n" in out and "## After\n\nkept too\n" in out
