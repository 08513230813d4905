"""A question's *site*: the fingerprint of what it asks, the same across requests and across both wires.

Outcomes, calibration and thresholds are kept per site: "is this ticket a refund?" asked on
``/v1/systemone`` (``refund``) and on ``/v1/decisions`` (named ``refund``, or unnamed) is one site,
whatever the input. The site covers the question's kind, instructions, options (their System One text
and descriptions, in the caller's order) or levels, and yes/no criteria, with each image an
instruction refers to replaced by the hash of its bytes: exactly what the answer cache keys a question
by (``gateway.cache.keys.question_digest``), so a site and a cache entry never disagree on which
questions are the same. Never the question's id or name (``Decision.question`` keeps those).
"""

from __future__ import annotations

from gateway.cache.keys import image_tokens, question_digest
from translators.ir import DecisionRequest

SITE_HEX = 32  # 128 bits of the SHA-256: no two questions a gateway sees share one


def sites(req: DecisionRequest) -> tuple[str, ...]:
    """Each question's site, in request order."""
    tokens = image_tokens(req)
    return tuple(question_digest(question, tokens).hex()[:SITE_HEX] for question in req.questions)
