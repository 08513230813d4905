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
ordinary answers. A deployment and kind that never answered has no bound (``None``); while none of
the deployments a request may reach has answered its kind, admission takes its requests one at a
time against a budget (gateway/admission/admission.py); ``bounds`` says how the others are bounded.
The first answer sets the ratio (there is nothing to weigh it against). In this process's memory,
kept across a reload (by deployment id). A deployment without a price whose upstream reports the
cost learns its USD per estimated token the same way (``usd_per_token``), so it is bounded too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gateway.spend.cost import cost_bound, price_for
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

    def usd_per_token(self, dep: Deployment, kind: str) -> float | None:
        """For a deployment without a price whose upstream reports the cost (OpenRouter's
        ``usage.cost``): the learned high quantile of USD per estimated token; None before one."""
        return self._ratios.get(_key(dep, kind + ":usd"))

    def observe(self, dep: Deployment, est: Estimate, counted: int | None, cost_usd: float | None = None) -> None:
        """One answer of ``dep``: ``counted`` input tokens (and, on an unpriced deployment, the
        ``cost_usd`` its upstream reported) for an input estimated at ``est``."""
        if est.tokens <= 0:
            return
        if counted is not None and counted > 0:
            low, high = RATIO_RANGE
            self._learn(_key(dep, est.kind), min(high, max(low, counted / est.tokens)))
        if cost_usd is not None and math.isfinite(cost_usd) and cost_usd > 0 and price_for(dep) is None:
            self._learn(_key(dep, est.kind + ":usd"), min(1.0, cost_usd / est.tokens))

    def _learn(self, key: tuple[str, str], seen: float) -> None:
        ratio = self._ratios.get(key)
        if ratio is None:
            if len(self._ratios) >= MAX_ENTRIES:
                self._ratios.clear()
            self._ratios[key] = seen
        elif seen > ratio:
            self._ratios[key] = min(seen, ratio * STEP)
        else:
            self._ratios[key] = max(seen, ratio / DOWN)


COLD_TOKEN_RATIO = 4.0  # one token per character: the least a deployment that never answered is taken to count


def bounds(ratios: TokenRatios, est: Estimate, deployments: list[Deployment]) -> tuple[int, float | None]:
    """For admission: the tokens to reserve (the largest bound over ``deployments``) and the worst
    case in USD on the dearest of them. None for the worst case when none of them has answered this
    kind yet (cold: nothing is known) or one is unpriced and never reported a cost; once one has
    answered, one that has not (a fallback, a deployment the strategy rarely picks) is taken to count
    at the largest learned ratio, and at least one token per character, so that a group is never
    cold for good."""
    learned = [ratio for dep in deployments if (ratio := ratios.ratio(dep, est.kind)) is not None]
    cold = max([COLD_TOKEN_RATIO, *learned])
    tokens, worst = 0, 0.0
    unbounded = not learned
    for dep in deployments:
        ratio = ratios.ratio(dep, est.kind)
        bound = max(1, math.ceil(est.tokens * (cold if ratio is None else ratio) * MARGIN))
        cost = cost_bound(bound, dep)
        if cost is None and (usd := ratios.usd_per_token(dep, est.kind)) is not None:
            cost = est.tokens * usd * MARGIN  # unpriced, but its upstream reports what it costs
        tokens = max(tokens, bound)
        unbounded = unbounded or cost is None
        worst = max(worst, cost or 0.0)
    return max(1, tokens), None if unbounded else worst
