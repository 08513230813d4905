"""The cache's two pipeline steps: ``cache_lookup`` (before admit) and ``cache_merge`` (after settle).

    cache_lookup  whether the request uses the cache (settings, the key's and team's metadata, the
                  request's Cache-Control / x-decisions-cache); the canonical digests, within the
                  caller's scope (its team by default: ``cache_params.scope``); one batched
                  lookup. Hits wait on ``ctx.cache``; ``ctx.req`` becomes the sub-request of the
                  misses (ids kept), so admit reserves and the router pays only for those; a full hit
                  leaves no question to ask (no reservation, no upstream call, cost 0).
                  ``only-if-cached`` with a miss: 504 naming the missing questions.
    cache_merge   the paid answers stored under the deployment that answered them, then the cached
                  and the paid answers merged back in request order for render; the headers
                  ``x-decisions-cache-hits``, ``x-decisions-cache-misses``, ``x-decisions-cost-saved``.

What the request paid (``ctx.cost``, the spend row's tokens, the budget and tpm settled) counts only
the misses. The body shows each answer as it was paid for (its model, probabilities, and its share
of its call's usage), so a full hit on the same wire answers what was sent the first time.
``ctx.cache`` (a ``CacheOutcome``) keeps the counts for the spend row and the metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from gateway.cache.answer_cache import AnswerCache, Found, Hit
from gateway.cache.keys import image_tokens, input_digest, question_digest, scope_of, scoped
from gateway.cache.store import COST, VERSION, usage_of
from gateway.router.headers import routing_headers
from gateway.spend.cost import format_cost
from translators.errors import DecisionError, RequestInvalid, Where
from translators.ir import DecisionRequest, DecisionResult, Usage

if TYPE_CHECKING:
    from gateway.config.registry import ModelRegistry
    from gateway.context import RequestContext

CACHE_HEADER = "x-decisions-cache"
DIRECTIVES = frozenset({"no-cache", "no-store", "only-if-cached"})
NOTHING_PAID = Usage(input_tokens=0, output_tokens=0)
MAX_NAMED = 20  # missing questions named in a 504


@dataclass(frozen=True, slots=True)
class Control:
    no_cache: bool = False  # skip the lookup, store the answers
    no_store: bool = False  # neither look up nor store
    only_if_cached: bool = False  # a miss is a 504, no upstream call


NO_CONTROL = Control()


class CachePipeline(Protocol):
    """What the cache's steps read of the pipeline that runs them (``gateway.pipeline.Pipeline``)."""

    @property
    def cache(self) -> AnswerCache | None: ...

    @property
    def registry(self) -> ModelRegistry: ...


def read_control(headers: Mapping[str, str] | None) -> Control:
    """``Cache-Control`` (other directives ignored) and ``x-decisions-cache`` (400 for an unknown one)."""
    if headers is None:
        return NO_CONTROL
    standard, ours = headers.get("cache-control"), headers.get(CACHE_HEADER)
    if not standard and not ours:
        return NO_CONTROL
    directives = {part.split("=", 1)[0].strip().lower() for part in (standard or "").split(",")}
    for part in (ours or "").split(","):
        directive = part.strip().lower()
        if directive and directive not in DIRECTIVES:
            raise RequestInvalid(f"{CACHE_HEADER} takes only-if-cached, no-cache or no-store, not "
                                 f"{part.strip()[:40]!r}.", loc=Where(CACHE_HEADER), code="invalid_cache_directive")
        directives.add(directive)
    return Control("no-cache" in directives, "no-store" in directives, "only-if-cached" in directives)


@dataclass(slots=True)
class CacheOutcome:
    """What the cache did for one request (``ctx.cache``)."""

    full_req: DecisionRequest  # the request as asked (``ctx.req`` is the misses' until merged)
    input_sha: bytes
    shas: dict[str, bytes]  # question id -> its digest
    store: bool
    ttl_s: float
    found: Found = field(default_factory=Found)
    stored: int = 0  # entries written after the call
    delivered: bool = False  # the merged answer went to render
    paid_usage: Usage | None = None  # what was paid for (None until merged)

    @property
    def hits(self) -> int:
        return len(self.found.hits)

    @property
    def misses(self) -> int:
        return len(self.found.misses)

    @property
    def cost_saved(self) -> float | None:
        """What the cached answers cost when they were paid for; None when one of those costs was unknown."""
        total = 0.0
        for hit in self.found.hits.values():
            cost = hit.entry[COST]
            if cost is None:
                return None
            total += cost
        return total

    @property
    def cost_saved_known(self) -> float:
        return sum(hit.entry[COST] or 0.0 for hit in self.found.hits.values())


async def cache_lookup(pipeline: CachePipeline, ctx: RequestContext) -> None:
    cache = pipeline.cache
    if cache is None or ctx.req is None or ctx.model_group is None:
        return
    control = read_control(ctx.source.headers if ctx.source is not None else None)
    identity = ctx.identity
    group = cache.group(ctx.model_group, pipeline.registry)
    on = cache.settings.on_for(group.policy, getattr(identity, "metadata", None),
                               getattr(identity, "team_metadata", None))
    lookup, store = on and not (control.no_cache or control.no_store), on and not control.no_store
    if not (lookup or store or control.only_if_cached):
        return
    req = ctx.req
    tokens = image_tokens(req)
    input_sha = scoped(input_digest(req, tokens), scope_of(cache.settings.scope, identity))
    outcome = CacheOutcome(req, input_sha, {q.id: question_digest(q, tokens) for q in req.questions},
                           store, cache.settings.ttl_for(group.policy))
    ctx.cache = outcome
    if lookup:
        outcome.found = await cache.find(req, outcome.input_sha, list(outcome.shas.values()), group.identities)
    else:
        outcome.found.misses = list(range(len(req.questions)))
    if control.only_if_cached and outcome.found.misses:
        raise not_cached(outcome)
    if outcome.found.hits:
        ctx.req = req.with_questions(tuple(req.questions[i] for i in outcome.found.misses))
        if not outcome.found.misses:
            ctx.cost = 0.0  # answered wholly from the cache: nothing is paid


async def cache_merge(pipeline: CachePipeline, ctx: RequestContext) -> None:
    outcome = ctx.cache
    cache = pipeline.cache
    if outcome is None or cache is None or ctx.model_group is None:
        return
    paid = ctx.result  # None when every question was a hit
    found = outcome.found
    if paid is not None and outcome.store and ctx.req is not None:
        outcome.stored = await cache.keep(ctx.req, paid, ctx.tried, ctx.cost, outcome.input_sha, outcome.shas,
                                          outcome.ttl_s, found.retired)
    elif found.retired:
        await cache.retire(found.retired)
    if found.hits:
        ctx.result = merged(outcome.full_req, found.hits, paid)
        if paid is None:
            first = found.hits[min(found.hits)].deployment
            ctx.deployment, ctx.tried = first, [first]
            ctx.headers.update(routing_headers(ctx.model_group, [first], 0, 0, False))
    ctx.req = outcome.full_req
    outcome.paid_usage = paid.usage if paid is not None else NOTHING_PAID
    outcome.delivered = True
    ctx.headers.update(cache_headers(outcome))


def merged(full: DecisionRequest, hits: dict[int, Hit], paid: DecisionResult | None) -> DecisionResult:
    """The cached and the paid answers in request order; the usage of every answer as it was paid for."""
    by_id = {answer.question_id: answer for answer in paid.answers} if paid is not None else {}
    answers = []
    usage = paid.usage if paid is not None else None
    for index, question in enumerate(full.questions):
        hit = hits.get(index)
        if hit is None:
            answer = by_id.get(question.id)
            if answer is not None:  # a missing one is the renderer's 502
                answers.append(answer)
            continue
        answers.append(hit.answer)
        share = usage_of(hit.entry)
        usage = share if usage is None else usage + share
    model = paid.model if paid is not None else hits[min(hits)].entry[VERSION]
    return DecisionResult(model=model, answers=tuple(answers), usage=usage or NOTHING_PAID,
                          extra=dict(paid.extra) if paid is not None else {})


def cache_headers(outcome: CacheOutcome) -> dict[str, str]:
    headers = {"x-decisions-cache-hits": str(outcome.hits), "x-decisions-cache-misses": str(outcome.misses)}
    saved = outcome.cost_saved
    if saved is not None:
        headers["x-decisions-cost-saved"] = format_cost(saved)
    return headers


def not_cached(outcome: CacheOutcome) -> DecisionError:
    """504: replay mode and some questions are not in the cache (named as the caller's wire names them)."""
    questions = outcome.full_req.questions
    missing = [questions[i] for i in outcome.found.misses]
    openai = outcome.full_req.wire == "openai"
    names = [f"'{q.name}'" if q.name else (f"questions[{q.id}]" if openai else f"'{q.id}'") for q in missing]
    listed = ", ".join(names[:MAX_NAMED]) + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")
    headers = {"x-decisions-cache-hits": str(outcome.hits), "x-decisions-cache-misses": str(outcome.misses),
               "x-should-retry": "false"}  # the answer will not change by asking again (OpenAI's clients read it)
    return DecisionError(status=504, message=f"{CACHE_HEADER}: only-if-cached, and {len(missing)} of {len(questions)} "
                         f"question{'s are' if len(questions) != 1 else ' is'} not in the cache: {listed}. No upstream "
                         "call was made.", type="cache_miss", code="not_cached", headers=headers)


def spend_columns(ctx: Any) -> dict[str, Any]:
    """The spend row's cache columns (``cache_hits``, ``cache_misses``, ``cost_saved``), empty without a cache."""
    outcome = ctx.cache
    if not isinstance(outcome, CacheOutcome):
        return {}
    saved = outcome.cost_saved_known if outcome.delivered else 0.0
    return {"cache_hits": outcome.hits, "cache_misses": outcome.misses, "cost_saved": saved}


def paid_usage(ctx: Any) -> Usage | None:
    """The usage a request paid for: the misses' (``ctx.result`` holds every answer's once merged)."""
    outcome = ctx.cache
    if isinstance(outcome, CacheOutcome) and outcome.paid_usage is not None:
        return outcome.paid_usage
    return ctx.result.usage if ctx.result is not None else None
