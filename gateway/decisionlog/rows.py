"""A finished request's decisions, as the rows the decision log keeps (``decisions``, ``decision_inputs``).

One row per answered question (a refusal or a box has no probabilities to judge, and none): its site
(``gateway/calibration/site.py``; the cache's digest of the question when the cache already made it),
the question's id and name, its options (the values an outcome may name: the option values,
``[true, false]``, or the level indices), the raw probabilities and the served ones when a calibrator
applied, the figures the reports add up (top-1 index and probability, its bin, the sum of squares),
the model group, the deployment and the model version that answered (a cached answer: the one
that answered when it was paid for), and the input per the capture level: its digest
(``sha256:<hex>``) or, for ``full``, the request body itself (up to ``MAX_INPUT_BYTES``; a larger
one is kept as its digest, with ``"truncated": true``).

The rows travel inside the request's spend row (its ``decisions`` and ``decision_input`` fields)
through the durable outbox, and are inserted with it, idempotently (``gateway/db/decisions.py``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from gateway.cache.keys import image_tokens, input_digest, question_digest
from gateway.cache.steps import CacheOutcome
from gateway.cache.store import VERSION
from gateway.calibration.measures import bin_index, top
from gateway.calibration.site import SITE_HEX

if TYPE_CHECKING:
    from gateway.context import RequestContext
    from gateway.decisionlog.settings import Capture
    from translators.ir import Question

JUDGED_KINDS = frozenset({"yes_no", "choice", "score"})
MAX_INPUT_BYTES = 64 * 1024
MAX_NAME_CHARS = 255


def options_of(question: Question) -> list[Any]:
    """The values an outcome may name for a question, in its order."""
    if question.kind == "yes_no":
        return [True, False]
    if question.kind == "choice":
        return [option.value for option in question.options]
    return list(range(len(question.levels)))


def figures(probabilities: Sequence[float]) -> tuple[int, float, int, float]:
    """(top-1 index, its probability, its reliability bin, the sum of squared probabilities)."""
    best, confidence = top(probabilities)
    confidence = min(1.0, max(0.0, confidence))
    return best, confidence, bin_index(confidence), sum(p * p for p in probabilities)


def decision_rows(ctx: RequestContext, capture: Capture) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The request's decision rows and its captured input (None unless ``full``); none for a failed request."""
    result, req = ctx.result, ctx.req
    if result is None or req is None or ctx.status != 200:
        return [], None
    applied = ctx.calibration
    raw = applied.raw if applied is not None else result
    outcome = ctx.cache if isinstance(ctx.cache, CacheOutcome) else None
    known = ctx.sites  # computed by the calibrate step, when it ran
    # the images' tokens: for the input's digest, and for the sites when neither the step nor the cache made them
    needs_tokens = capture != "none" or (known is None and outcome is None)
    tokens = image_tokens(req) if needs_tokens else {}
    shas = outcome.shas if outcome is not None else None
    identity, dep = ctx.identity, ctx.deployment
    digest = None
    if capture != "none":
        digest = "sha256:" + input_digest(req, tokens).hex()
    rows = []
    for index, (question, answer) in enumerate(zip(req.questions, raw.answers, strict=False)):
        if answer.kind not in JUDGED_KINDS or not answer.probabilities:
            continue
        if known is not None:
            site = known[index]
        else:
            sha = shas.get(question.id) if shas is not None else None
            site = (sha or question_digest(question, tokens)).hex()[:SITE_HEX]
        hit = outcome.found.hits.get(index) if outcome is not None else None
        answered_by = hit.deployment if hit is not None else dep
        served = None
        calibrator = applied.calibrators[index] if applied is not None else None
        if calibrator is not None:
            served = list(result.answers[index].probabilities)
        probabilities = list(answer.probabilities)
        best, confidence, bin_, sum_sq = figures(probabilities)
        cal = figures(served) if served is not None else (best, confidence, bin_, sum_sq)
        rows.append({
            "question_index": index, "question": question.id[:MAX_NAME_CHARS],
            "question_name": question.name[:MAX_NAME_CHARS] if question.name else None,
            "site": site, "kind": question.kind, "options": options_of(question),
            "probabilities": probabilities, "top_index": best, "confidence": confidence, "bin": bin_,
            "sum_sq": sum_sq, "served": served, "calibrator_id": calibrator,
            "cal_top_index": cal[0], "cal_confidence": cal[1], "cal_bin": cal[2], "cal_sum_sq": cal[3],
            "cached": hit is not None,
            "model_group": ctx.model_group,
            "model_id": answered_by.id if answered_by is not None and answered_by.id else None,
            "model": f"{answered_by.provider}/{answered_by.model}" if answered_by is not None else None,
            "model_version": (str(hit.entry[VERSION]) if hit is not None else raw.model) or None,
            "api_key": getattr(identity, "key_hash", None) or "",
            "team_id": getattr(identity, "team_id", None), "user": getattr(identity, "user_id", None),
            "input_digest": digest,
        })
    captured = captured_input(ctx, digest) if capture == "full" and rows else None
    return rows, captured


def captured_input(ctx: RequestContext, digest: str | None) -> dict[str, Any]:
    body = ctx.body.json if ctx.body is not None else None
    try:
        content = orjson.dumps(body).decode() if body is not None else ctx.raw.decode("utf-8", "replace")
    except TypeError:  # a number orjson cannot write (an integer past 64 bits): the body as it came
        content = ctx.raw.decode("utf-8", "replace")
    if len(content) > MAX_INPUT_BYTES:
        content = orjson.dumps({"truncated": True, "bytes": len(content),
                                "sha256": digest or hashlib.sha256(content.encode()).hexdigest()}).decode()
    return {"content": content.replace("\x00", "")}
