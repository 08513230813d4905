"""gateway/calibration/split.py: the held-out share over many keys, and the split pinned by SHA-256 (so a
process with another hash salt, or a later version, puts every decision in the same part)."""

from __future__ import annotations

import pytest

from gateway.calibration.split import HELD_OUT, held_out


def test_about_the_share_is_held_out():
    assert HELD_OUT == 0.3
    keys = [(f"req-{i}", i % 4) for i in range(10_000)]
    share = sum(held_out(r, q) for r, q in keys) / len(keys)
    assert share == pytest.approx(0.3, abs=0.015)  # 3 standard deviations of a fair 30% draw
    assert sum(held_out(r, q, share=0.1) for r, q in keys) / len(keys) == pytest.approx(0.1, abs=0.01)


def test_the_split_is_pinned_by_the_hash():
    # the first 8 bytes of sha256("req-1\0" "0") are 36a725ee2e89440c: 0.2135 of 2**64; "req-1\0" "1": 0.7873;
    # "req-2\0" "0": 0.5103
    assert held_out("req-1", 0) and not held_out("req-1", 0, share=0.2)
    assert not held_out("req-1", 1) and held_out("req-1", 1, share=0.8)
    assert not held_out("req-2", 0) and held_out("req-2", 0, share=0.52)
    assert [held_out("req-1", 0) for _ in range(3)] == [True] * 3


def test_a_larger_share_holds_out_a_superset_and_the_ends_are_all_or_none():
    keys = [(f"r{i}", 0) for i in range(2000)]
    small = {k for k in keys if held_out(*k, share=0.2)}
    large = {k for k in keys if held_out(*k, share=0.5)}
    assert small < large
    assert not any(held_out(*k, share=0.0) for k in keys) and all(held_out(*k, share=1.0) for k in keys)
    with pytest.raises(ValueError, match="share"):
        held_out("r", 0, share=1.5)
