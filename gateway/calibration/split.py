"""Which decisions a fit holds out: a split by hash, the same in every process and on every run.

A calibrator is fitted on one part of a site's outcomes and measured on the other. The part is decided
per decision (one question of one request) by the SHA-256 of ``<request id> NUL <question index>``:
its first 8 bytes, read as a fraction of 2**64, below ``share`` means held out. So the split needs no
stored state and no seed, a decision never moves from one part to the other between two fits at the
same share (nor between processes, as Python's salted ``hash`` would move it), and the held-out part
at a larger share contains the one at a smaller share.
"""

from __future__ import annotations

import hashlib

HELD_OUT = 0.3  # the share of the decisions a fit is measured on


def held_out(request_id: str, question_index: int, share: float = HELD_OUT) -> bool:
    """Whether the decision is in the held-out part (with probability ``share`` over decisions)."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share: {share} must be between 0 and 1")
    digest = hashlib.sha256(f"{request_id}\x00{question_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") < share * 2**64
