"""The ``calibrate`` step: after ``cache_merge`` (so cached answers are calibrated too: the cache keeps raw
ones) and before ``render``.

Where calibration is on for the request (``x-decisions-calibration: apply | off``, else the key's,
the team's, the group's or the gateway's ``calibration`` setting: gateway/decisionlog/settings.py)
and its group has an active calibrator, each answer of a calibrated site is rendered with the
calibrated probabilities on either wire, and the response says so in headers every client
accepts (the strict ones, Nimble's included, read only the body):

- ``x-decisions-calibration: applied; questions=<k>/<n>; calibrators=<id>,<id>`` (or ``none``
  when calibration was on and no calibrator matched, ``off`` when it was off and one would have);
- ``x-decisions-raw-probabilities``: the raw probabilities of the calibrated questions, a JSON object
  of question id to its list (ASCII: other characters escaped), for a caller that wants both.

The header's value is checked in ``parse`` (``check_header``), before anything is paid for.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Protocol

from gateway.calibration.apply import CalibratorSet, apply
from gateway.calibration.site import SITE_HEX, sites
from gateway.decisionlog.settings import CALIBRATION_HEADER, DecisionLogSettings, read_header
from translators.errors import RequestInvalid, Where

if TYPE_CHECKING:
    from gateway.context import RequestContext

RAW_HEADER = "x-decisions-raw-probabilities"
MAX_RAW_HEADER_BYTES = 16 * 1024  # past it the raw probabilities are left to the decision log


class CalibratingPipeline(Protocol):
    @property
    def calibrators(self) -> CalibratorSet: ...

    @property
    def decision_log(self) -> DecisionLogSettings: ...


def check_header(ctx: RequestContext) -> str | None:
    """``x-decisions-calibration`` as sent (None when absent); 400 naming it for another word."""
    headers = ctx.source.headers if ctx.source is not None else None
    value = headers.get(CALIBRATION_HEADER) if headers is not None else None
    try:
        return read_header(value)
    except ValueError as exc:
        raise RequestInvalid(f"{exc}.", loc=Where(CALIBRATION_HEADER), code="invalid_calibration") from None


async def calibrate(pipeline: CalibratingPipeline, ctx: RequestContext) -> None:
    group = ctx.model_group
    if ctx.result is None or ctx.req is None or group is None or not pipeline.calibrators.covers(group):
        return
    identity = ctx.identity
    on = pipeline.decision_log.calibrate_for(group, getattr(identity, "metadata", None),
                                             getattr(identity, "team_metadata", None), ctx.calibration_header)
    if not on:
        ctx.headers[CALIBRATION_HEADER] = "off"
        return
    shas = getattr(ctx.cache, "shas", None)
    site_list = tuple(shas[q.id].hex()[:SITE_HEX] for q in ctx.req.questions) if shas else sites(ctx.req)
    ctx.sites = site_list  # the decision log's too
    result, applied = apply(ctx.result, site_list, group, pipeline.calibrators)
    if applied is None:
        ctx.headers[CALIBRATION_HEADER] = "none"
        return
    ctx.result, ctx.calibration = result, applied
    used = [i for i in applied.calibrators if i is not None]
    ids = ",".join(str(i) for i in sorted(set(used)))
    ctx.headers[CALIBRATION_HEADER] = f"applied; questions={len(used)}/{len(result.answers)}; calibrators={ids}"
    raw = {a.question_id: list(a.probabilities) for a, i in zip(applied.raw.answers, applied.calibrators,
                                                                 strict=True) if i is not None}
    text = json.dumps(raw, separators=(",", ":"), ensure_ascii=True)  # a header value is ASCII
    if len(text) <= MAX_RAW_HEADER_BYTES:
        ctx.headers[RAW_HEADER] = text
