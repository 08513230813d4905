"""bench/gateway.py on a tiny count: the real upstream and our gateway as processes in the three
configurations, every case measured, LiteLLM's absence said in the tables, only the bench's own sections
of the doc rewritten. No timing assertions (a shared machine makes them meaningless), and no LiteLLM
install (far too slow for the suite): the venv it is pointed at does not exist."""

from __future__ import annotations

import importlib.util
import re

from bench import gateway as bench
from bench import gateway_report as report
from bench import litellm

CASES = [("/v1/systemone", 1), ("/v1/decisions", 1), ("/v1/systemone", 4), ("/v1/decisions", 4)]
OLD_DOC = ("# Benchmarks\n\n## Upstream client\n\nkept\n\n## Gateway overhead\n\nold rows\n\n"
           "## Gateway overhead with keys, limits and spend logs\n\nold keyed rows\n\n"
           "## Before and after (issues 7 to 10)\n\nkept too\n")


def test_every_configuration_is_measured_and_litellm_missing_is_said(tmp_path):
    missing = tmp_path / "no-litellm-venv"
    results = bench.run(sequential=6, concurrent=8, concurrencies=(4,), litellm_sequential=3, litellm_concurrent=4,
                        timeout=180, warmup=2, litellm_venv=missing, install=False)
    assert not missing.exists()  # nothing was installed
    assert [r.mode for r in results.runs] == ["none", "master", "auth", "cache"]
    for run in results.runs:
        assert [(c.name, c.concurrency) for c in run.upstream] == [("upstream alone: POST /v1/systemone", 1),
                                                                  ("upstream alone: POST /v1/systemone", 4)]
        ours, theirs = run.servers
        assert (ours.name, theirs.name) == ("ours", "litellm")
        assert [(c.route, c.concurrency) for c in ours.cases] == CASES
        for case in run.upstream + ours.cases:
            assert case.errors == 0, case.first_error
            assert len(case.latencies) == (6 if case.concurrency == 1 else 8) and not case.cut_short
        assert all(len(c.paired) == 6 for c in ours.cases if c.concurrency == 1)  # interleaved direct calls
        assert all(len(c.round_rps) == 3 for c in ours.cases if c.concurrency > 1)  # the median of 3 rounds
        assert ours.ready_s > 0 and 0 < ours.rss_warm_mib and 0 < ours.rss_after_mib and not ours.error
        assert ours.sent == 2 * 2 + sum(c.sent for c in ours.cases) and 0 <= ours.upstream_calls <= ours.sent
        assert "no LiteLLM venv at" in theirs.error and not any(c.latencies for c in theirs.cases)
    none, master, auth, cache = results.runs
    assert none.servers[0].upstream_calls == none.servers[0].sent  # no cache: every request went upstream
    assert {c.key for c in master.servers[0].cases} == {bench.MASTER_KEY}
    keys = {c.key for c in auth.servers[0].cases}
    assert len(keys) == 1 and keys != {bench.MASTER_KEY} and next(iter(keys)).startswith("sk-")  # a virtual key
    hits = report.cache_hits(cache.servers[0])
    assert hits == (importlib.util.find_spec("gateway.cache") is not None)  # hits exactly when the cache is built

    doc = tmp_path / "benchmarks.md"
    doc.write_text(OLD_DOC)
    sections = report.sections(results)
    report.write(sections, doc)
    report.write(sections, doc)  # a re-run replaces its sections again, nothing doubles
    out = doc.read_text()
    assert "old rows" not in out and "old keyed rows" not in out
    assert "## Upstream client\n\nkept\n" in out and "## Before and after (issues 7 to 10)\n\nkept too\n" in out
    for heading in (report.SUMMARY, *report.HEADINGS.values()):
        assert out.count(heading + "\n") == 1, heading
    assert out.index("## Gateway overhead\n") < out.index("## Before and after") < out.index(report.SUMMARY)

    summary = sections[report.SUMMARY]
    assert "LiteLLM could not run, ours is reported alone" in summary and str(missing) in summary
    for title in report.TITLES.values():
        for route, _ in CASES[:2]:
            assert re.search(rf"^\| {re.escape(title)} \| `{route}` \| added p50, concurrency 1 \| [+-]\d+\.\d\d ms "
                             r"\| – \| – \| <= ", summary, re.MULTILINE), (title, route)
    assert summary.count("| added p99, concurrency 1 |") == 8 and summary.count("| requests/s, concurrency 4 |") == 8
    assert re.search(r"^\| no auth \| this gateway \| \d+\.\d\d s \| \d+ MiB \| \d+ MiB \| [\d,]+ / [\d,]+ \|",
                     summary, re.MULTILINE)
    assert summary.count("| LiteLLM 1.110.2 | – | – | – | – | no LiteLLM venv at") == 4
    assert ("| cache hit | this gateway |" in summary) and (("**no cache hits**" in summary) != hits)
    for mode, heading in report.HEADINGS.items():
        text = sections[heading]
        for route, concurrency in CASES:
            label = next(label for path, label, _ in bench.ROUTES if path == route)
            total = 6 if concurrency == 1 else 8
            assert re.search(rf"^\| this gateway {re.escape(label)} \| {concurrency} \| {total} \| 0 \|", text,
                             re.MULTILINE), (mode, route, concurrency)
        assert "Not measured: LiteLLM 1.110.2: no LiteLLM venv at" in text


def test_the_command_line_runs_ours_alone_and_writes_its_sections(tmp_path, monkeypatch, capsys):
    doc = tmp_path / "benchmarks.md"
    doc.write_text(OLD_DOC)
    monkeypatch.setattr(report, "DOC", doc)
    code = bench.main(["--modes", "none", "--requests", "3", "--concurrent-requests", "4", "--concurrency", "2",
                       "--warmup", "1", "--no-litellm", "--timeout", "120"])
    assert code == 0
    printed = capsys.readouterr()
    out = doc.read_text()
    assert "## Gateway overhead\n" in out and report.SUMMARY in out and "old rows" not in out
    assert "old keyed rows" in out  # the configuration that did not run keeps its section
    assert "LiteLLM was left out (`--no-litellm`)" in out and "`python -m bench.gateway --modes none" in out
    assert "| requests/s, concurrency 2 |" in printed.out and "run took" in printed.err


def test_a_missing_venv_is_reported_without_installing(tmp_path):
    venv = litellm.prepare(tmp_path / "absent", install=False)
    assert not venv.ready and "no LiteLLM venv at" in venv.note and not (tmp_path / "absent").exists()


def test_litellm_is_configured_like_ours_on_the_same_upstream():
    open_proxy = litellm.config("http://127.0.0.1:1", "up-key")
    assert open_proxy["general_settings"] == {"dangerously_permit_weak_or_unset_master_key": True}
    keyed = litellm.config("http://127.0.0.1:1", "up-key", master_key="sk-m", cache=True)
    assert keyed["general_settings"] == {"master_key": "sk-m"}
    assert keyed["litellm_settings"] == {"cache": True, "cache_params": {"type": "local"}}
    ours = bench.ours_config("cache", "http://127.0.0.1:1", "/tmp")
    assert ours["litellm_settings"] == keyed["litellm_settings"]
    assert ours["model_list"][0]["litellm_params"]["model"] == keyed["model_list"][0]["litellm_params"]["model"]


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert bench.percentile(values, 50) == 50.0 and bench.percentile(values, 99) == 99.0
    assert bench.percentile([3.0], 99) == 3.0
