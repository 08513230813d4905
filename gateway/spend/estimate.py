"""What a request's input will count upstream, estimated before the call, and a learned bound on it.

``estimate(req)``: the text at about 4 characters a token (``providers.capabilities.estimate_tokens``)
plus ``IMAGE_TOKENS`` for each image (no provider here documents a per-image count, and an image's
bytes say little about its tokens; the learned ratio of the ``images`` kind scales this figure to
what each deployment really counts). Its ``kind`` is ``images`` when the request has any, else
``text``: the two are learned apart, so an image never moves what text costs.

``TokenRatios``: per deployment and content kind, the ratio of counted to estimated tokens, as a
**decaying high quantile** (``QUANTILE``): each answer moves it up by at most a factor ``STEP``
(however far above it the answer was) or down by ``STEP ** ((1 - QUANTILE) / QUANTILE)`` (the
steps that keep about a tenth of the answers above it), so one outlier, whoever sent it, moves the
bound everyone's admission sees by at most ``STEP`` and fades again over the next ten or so
ordinary answers. A deployment and kind that never answered has no bound (``None``): admission
then takes its requests one at a time against a budget (gateway/admission/admission.py). The first
answer sets the ratio (there is nothing to weigh it against). In this process's memory, kept
across a reload (by deployment id).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gateway.spend.cost import cost_bound
from providers.base import Deployment
from providers.capabilities import estimate_tokens
from translators.ir import DecisionRequest

IMAGE_TOKENS = 1_600  # an image's tokens before a deployment has answered one (a large image's count)
QUANTILE = 0.9
STEP = 1.25  # the most one answer raises a ratio by
DOWN = STEP ** ((1 - QUANTILE) / QUANTILE)  # what one answer below it lowers it by
MARGIN = 1.25  # the worst case is the learned ratio with this margin
RATIO_RANGE = (1e-3, 1e4)  # a ratio is clamped to this (a counted 0, a nonsense count)
MAX_ENTRIES = 10_000


@dataclass(frozen=True, slots=True)
class Estimate:
    tokens: int  # the input's tokens as estimated (text and images)
    kind: str  # "text" | "images"


def estimate(req: DecisionRequest) -> Estimate:
    images = len(req.input.images)
    return Estimate(max(1, estimate_tokens(req) + images * IMAGE_TOKENS), "images" if images else "text")


def _key(dep: Deployment, kind: str) -> tuple[str, str]:
    return (dep.id or f"{dep.provider}/{dep.model}@{dep.api_base}", kind)


class TokenRatios:
    """The learned ratios of one gateway process. See the module docstring."""

    def __init__(self) -> None:
        self._ratios: dict[tuple[str, str], float] = {}

    def ratio(self, dep: Deployment, kind: str) -> float | None:
        """The learned high quantile of counted / estimated tokens; None before the first answer."""
        return self._ratios.get(_key(dep, kind))

    def worst_tokens(self, dep: Deployment, est: Estimate) -> int | None:
        """A bound on what ``dep`` will count for ``est``; None when it has not answered this kind yet."""
        ratio = self.ratio(dep, est.kind)
        return None if ratio is None else max(1, math.ceil(est.tokens * ratio * MARGIN))

    def observe(self, dep: Deployment, est: Estimate, counted: int) -> None:
        """One answer of ``dep``: ``counted`` input tokens for an input estimated at ``est``."""
        if counted <= 0 or est.tokens <= 0:
            return
        low, high = RATIO_RANGE
        seen = min(high, max(low, counted / est.tokens))
        key = _key(dep, est.kind)
        ratio = self._ratios.get(key)
        if ratio is None:
            if len(self._ratios) >= MAX_ENTRIES:
                self._ratios.clear()
            self._ratios[key] = seen
        elif seen > ratio:
            self._ratios[key] = min(seen, ratio * STEP)
        else:
            self._ratios[key] = max(seen, ratio / DOWN)


COLD_TOKEN_RATIO = 4.0  # for the tpm reservation before a deployment answered: one token per character


def bounds(ratios: TokenRatios, est: Estimate, deployments: list[Deployment]) -> tuple[int, float | None]:
    """For admission: the tokens to reserve (the largest bound over ``deployments``) and the worst
    case in USD on the dearest of them (None when one has not answered this kind yet or is unpriced)."""
    tokens, worst = 0, 0.0
    unbounded = False
    for dep in deployments:
        bound = ratios.worst_tokens(dep, est)
        cost = None if bound is None else cost_bound(bound, dep)
        tokens = max(tokens, bound if bound is not None else math.ceil(est.tokens * COLD_TOKEN_RATIO * MARGIN))
        unbounded = unbounded or cost is None
        worst = max(worst, cost or 0.0)
    return max(1, tokens), None if unbounded else worst
