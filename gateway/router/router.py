"""The router: a model group in, one answer out, whatever its deployments do.

    group chain     the group, then its fallbacks in order (``max_fallbacks``), each with its own retries
    permissions     a fallback or capacity fallback outside the caller's models (``allowed``: its key's and
                    team's) is never tried; the error names the ones skipped (a 403 when nothing the
                    caller may use can take the request)
    pre-call filter deployments that cannot take the request are not picked; when none can, the
                    group's capacity fallbacks are tried, else the caller gets the capacity 400
    split           over the picked deployment's question limit; each chunk is routed, retried and
                    hedged on its own, so a failed chunk never repeats its finished siblings
    attempt         strategy pick -> call (gateway/upstream/call.py); on a retryable failure another healthy
                    deployment of the group, or the same one after a back-off (tenacity's
                    exponential jitter, at least the upstream's Retry-After)
    hedge           ``hedge_after_ms`` without an answer: a second deployment is asked; the first
                    good answer wins and the other call is cancelled
    deadline        ``x-decisions-deadline-ms`` / ``deadline_ms`` bounds all of it: 504 naming the
                    deadline, the call in flight cancelled, no call started after it

Health, load and latency live in the shared state (gateway/router/health.py), so several gateway
processes agree. The first attempt of a request costs no tenacity machinery: only a failure builds
the retry loop.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import tenacity

from gateway.config.registry import ModelRegistry
from gateway.router import policy
from gateway.router.health import Health
from gateway.router.settings import GroupPolicy, RouterSettings
from gateway.router.strategies import choose
from gateway.spend.cost import response_cost
from gateway.upstream import call as calls
from gateway.upstream.split import merge_results
from providers.base import Deployment, Limits
from providers.registry import get_provider
from translators.errors import DecisionError, Unsupported, UpstreamError
from translators.ir import DecisionRequest, DecisionResult

INITIAL_RETRY_DELAY_S = 0.5  # LiteLLM's INITIAL_RETRY_DELAY and MAX_RETRY_DELAY
MAX_RETRY_DELAY_S = 8.0
DEADLINE_HEADER = "x-decisions-deadline-ms"
MIN_ATTEMPT_S = 0.005  # an attempt is not started with less time than this left before the deadline
Able = list[tuple[Deployment, Limits]]  # the deployments that can take a request, with their limits
_BACKOFF = tenacity.wait_exponential_jitter(multiplier=INITIAL_RETRY_DELAY_S, max=MAX_RETRY_DELAY_S)


@dataclass
class Routed:
    """What the router tells the pipeline about one request."""

    result: DecisionResult
    deployments: list[Deployment]  # the deployment that answered each chunk, in chunk order
    cost: float | None
    group: str
    retries: int = 0
    fallbacks: int = 0
    hedged: bool = False
    cooling_tried: bool = False  # a cooling deployment was asked because nothing else was left
    upstream_ms: float = 0.0  # time spent in upstream calls, every attempt's


@dataclass
class _Tally:
    retries: int = 0
    hedged: bool = False
    cooling_tried: bool = False
    fallbacks_tried: list[str] = field(default_factory=list)
    upstream_ms: float = 0.0
    allowed: frozenset[str] | None = None  # the groups the caller may use (None: every one)
    not_allowed: list[str] = field(default_factory=list)  # fallbacks skipped for the caller's permissions

    def permits(self, group: str) -> bool:
        if self.allowed is None or group in self.allowed:
            return True
        if group not in self.not_allowed:
            self.not_allowed.append(group)
        return False


class FallbackNotAllowed(DecisionError):
    """403: the group cannot take the request, and the fallbacks that could are not the caller's to use."""

    def __init__(self, group: str, refusal: DecisionError, skipped: Sequence[str]):
        names = ", ".join(f"'{name}'" for name in skipped)
        super().__init__(status=403, message=f"{refusal.message} Model group '{group}' has capacity fallbacks "
                                             f"({names}), but this key may not use them.",
                         loc=refusal.loc, type="permission_error", code="fallback_not_allowed")


class DeadlineExceeded(UpstreamError):
    def __init__(self, deadline_ms: float, group: str):
        super().__init__(504, f"The request to model group '{group}' did not finish within its deadline of "
                              f"{deadline_ms:g} ms ({DEADLINE_HEADER}); no further upstream call was started.",
                         type="timeout", code="deadline_exceeded", retryable=False)


class Router:
    def __init__(self, registry: ModelRegistry, settings: RouterSettings, health: Health, upstream,
                 rng: random.Random | None = None):
        self.registry = registry
        self.settings = settings
        self.health = health
        self.upstream = upstream
        self.rng = rng or random.Random()
        self.tracing: Any = None  # a span per attempt when traces are on (gateway/observability/tracing.py)

    @classmethod
    def in_memory(cls, registry: ModelRegistry, upstream, settings: RouterSettings | None = None) -> Router:
        """A router with in-process state. Without ``settings``: one call per request, no retries and no
        cooldowns (the Python API's behaviour, as ``litellm.decisions`` without ``num_retries``)."""
        from gateway.router.settings import router_settings
        from gateway.shared_state import MemoryState

        settings = settings or router_settings({"num_retries": 0, "disable_cooldowns": True}, {},
                                               {name: registry.group(name) for name in registry.names})
        return cls(registry, settings, Health(MemoryState(), disable_cooldowns=settings.disable_cooldowns), upstream)

    def reachable_groups(self, group: str, allowed: frozenset[str] | None = None) -> list[str]:
        """The group and every group a request to it may end up in (fallbacks, capacity fallbacks), of
        those the caller may use (``allowed``; None: every one), as ``route`` filters them."""
        group_policy = self.settings.policy(group)
        names = [group, *group_policy.fallbacks[: self.settings.max_fallbacks]]
        for name in list(names):
            names.extend(self.settings.policy(name).capacity_fallbacks)
        return [name for n, name in enumerate(dict.fromkeys(names)) if not n or allowed is None or name in allowed]

    def refusal(self, req: DecisionRequest, group: str, allowed: frozenset[str] | None = None
                ) -> DecisionError | None:
        """The pre-call filter alone, calling nothing: None when a deployment of ``group`` or of its
        capacity fallbacks (those in ``allowed``, when given) can take ``req``, else what ``route``
        would raise: the group's first refusal, or ``FallbackNotAllowed``."""
        first: Unsupported | None = None
        skipped: list[str] = []
        for n, name in enumerate([group, *self.settings.policy(group).capacity_fallbacks]):
            if n and allowed is not None and name not in allowed:
                skipped.append(name)
                continue
            try:
                deployments = self.registry.configured(name) if n == 0 else self.registry.group(name)
            except UpstreamError as err:  # no deployment has its key: the 503 the decision route answers
                return err
            able, why = _able(deployments, req)
            if able:
                return None
            first = first or why
        if skipped and first is not None and self.refusal(req, group) is None:
            return FallbackNotAllowed(group, first, skipped)
        return first

    # ---- the request ------------------------------------------------------------------------------

    async def route(self, req: DecisionRequest, group: str, deadline_ms: float | None = None, *,
                    allowed: frozenset[str] | None = None) -> Routed:
        """``allowed``: the model groups the caller may use (its key's and team's); None, every one."""
        group_policy = self.settings.policy(group)
        deadline_ms = deadline_ms if deadline_ms is not None else group_policy.deadline_ms
        tally = _Tally(allowed=allowed)
        if deadline_ms is None:
            return await self._chain(req, group, tally, None)
        deadline = time.monotonic() + deadline_ms / 1000.0
        try:
            return await asyncio.wait_for(self._chain(req, group, tally, deadline), timeout=deadline_ms / 1000.0)
        except TimeoutError:
            raise DeadlineExceeded(deadline_ms, group) from None

    async def _chain(self, req: DecisionRequest, group: str, tally: _Tally, deadline: float | None) -> Routed:
        first_policy = self.settings.policy(group)
        fallbacks = first_policy.fallbacks[: self.settings.max_fallbacks]
        chain = [group, *(name for name in fallbacks if tally.permits(name))]
        last: UpstreamError | None = None
        for position, name in enumerate(chain):
            if position:
                tally.fallbacks_tried.append(name)
            try:
                return await self._group(req, name, tally, deadline, capacity_chain=True,
                                         has_fallback=position + 1 < len(chain))
            except UpstreamError as err:
                if isinstance(err, DeadlineExceeded):
                    raise
                last = err
        assert last is not None
        raise self._exhausted(group, last, tally)

    def _exhausted(self, group: str, last: UpstreamError, tally: _Tally) -> UpstreamError:
        if tally.fallbacks_tried:
            tried = ", ".join(f"'{name}'" for name in tally.fallbacks_tried)
            fallbacks = f"Fallbacks attempted, in order: {tried}."
        elif tally.not_allowed:
            fallbacks = "No fallback was attempted."
        else:
            fallbacks = "No fallback was attempted (none is configured for this group)."
        if tally.not_allowed:
            skipped = ", ".join(f"'{name}'" for name in tally.not_allowed)
            fallbacks += f" Not tried, as this key may not use them: {skipped}."
        err = UpstreamError(last.status, f"Model group '{group}' failed: {last.message} {fallbacks}",
                            provider=last.provider, type=last.type, code=last.code, headers=dict(last.headers),
                            retryable=last.retryable)
        err.attempts = tally  # type: ignore[attr-defined]  # the true counts, for the response headers
        return err

    async def _group(self, req: DecisionRequest, group: str, tally: _Tally, deadline: float | None,
                     capacity_chain: bool, has_fallback: bool = False) -> Routed:
        group_policy = self.settings.policy(group)
        deployments = self.registry.configured(group)  # not those without their key: a 503 if none is left
        able, refusal = _able(deployments, req)
        if not able:
            assert refusal is not None
            if capacity_chain:
                for name in group_policy.capacity_fallbacks:
                    if not tally.permits(name):
                        continue
                    try:
                        routed = await self._group(req, name, tally, deadline, capacity_chain=False)
                    except Unsupported:
                        continue
                    tally.fallbacks_tried.append(name)
                    return routed
                skipped = [name for name in group_policy.capacity_fallbacks if name in tally.not_allowed]
                if skipped and self.refusal(req, group) is None:  # one the caller may not use could take it
                    raise FallbackNotAllowed(group, refusal, skipped)
            raise refusal
        tally.cooling_tried = False
        first = await self._pick(group_policy, able, req, excluded=(), tally=tally)
        if tally.cooling_tried and has_fallback:
            raise UpstreamError(503, f"Every deployment of model group '{group}' is cooling down.",
                                code="cooling_down")
        chunks = calls.split(req, _limits_of(able, first))
        if len(chunks) == 1:
            answered = [await self._attempts(chunks[0], group_policy, able, first, tally, deadline, has_fallback)]
        else:
            answered = await _gather_all(
                self._attempts(chunk, group_policy, [(d, lim) for d, lim in able if _fits(d, chunk)] or able,
                               first, tally, deadline, has_fallback) for chunk in chunks)
        results = [result for result, _ in answered]
        deps = [dep for _, dep in answered]
        costs = [response_cost(result.usage, dep, result.model) for result, dep in answered]
        result = results[0] if len(results) == 1 else merge_results(results)
        cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
        return Routed(result, deps, cost, group, retries=tally.retries, fallbacks=len(tally.fallbacks_tried),
                      hedged=tally.hedged, cooling_tried=tally.cooling_tried, upstream_ms=tally.upstream_ms)

    # ---- attempts of one chunk -----------------------------------------------------------------------

    async def _attempts(self, chunk: DecisionRequest, group_policy: GroupPolicy, able: Able, first: Deployment,
                        tally: _Tally, deadline: float | None,
                        has_fallback: bool = False) -> tuple[DecisionResult, Deployment]:
        try:
            return await self._hedged(chunk, group_policy, able, first, tally, deadline)
        except UpstreamError as err:
            return await self._retry(chunk, group_policy, able, first, err, tally, deadline, has_fallback)

    async def _retry(self, chunk, group_policy, able, failed_dep: Deployment, failed: UpstreamError, tally: _Tally,
                     deadline: float | None, has_fallback: bool = False) -> tuple[DecisionResult, Deployment]:
        """The retries of one chunk. The next try goes to another deployment of the group that was not
        tried yet, at once; only when every one was tried does it reuse one, after tenacity's
        exponential back-off with jitter (at least the upstream's Retry-After, at most the time left).
        When the upstream's Retry-After asks for a longer wait than the back-off and the group has a
        fallback, the fallback is tried now instead of holding the caller for the wait."""
        dep, err, tried = failed_dep, failed, [failed_dep]
        state = tenacity.RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
        while True:
            allowed = self._retries_for(err, group_policy, dep)
            if not policy.retryable(err) or tenacity.stop_after_attempt(allowed + 1)(state):
                raise err
            state.attempt_number += 1
            nxt = await self._pick(group_policy, able, chunk, excluded=tried, tally=tally)
            if any(nxt is dep_tried for dep_tried in tried):
                backoff, asked = _BACKOFF(state), policy.retry_after_s(err) or 0.0
                if has_fallback and asked > backoff:
                    raise err
                delay = max(backoff, asked)
                if deadline is not None and delay >= deadline - time.monotonic() - MIN_ATTEMPT_S:
                    raise TimeoutError  # no try could start before the deadline: 504 now, not at the deadline
                await asyncio.sleep(delay)
            tally.retries += 1
            try:
                return await self._hedged(chunk, group_policy, able, nxt, tally, deadline)
            except UpstreamError as again:
                dep, err = nxt, again
                tried.append(nxt)

    def _retries_for(self, err: DecisionError, group_policy: GroupPolicy, dep: Deployment) -> int:
        own = dep.params.get("num_retries")
        base = own if isinstance(own, int) and not isinstance(own, bool) and own >= 0 else group_policy.num_retries
        return group_policy.retry_policy.get(policy.error_class(err), base)

    async def _hedged(self, chunk, group_policy: GroupPolicy, able, dep: Deployment, tally: _Tally,
                      deadline: float | None) -> tuple[DecisionResult, Deployment]:
        hedge_ms = _hedge_after(dep, group_policy)
        if hedge_ms is None or len(able) < 2:
            return await self._call(chunk, dep, group_policy, deadline, tally), dep
        first = asyncio.ensure_future(self._call(chunk, dep, group_policy, deadline, tally))
        done, _ = await asyncio.wait({first}, timeout=hedge_ms / 1000.0)
        if done:
            return first.result(), dep
        try:
            second_dep = await self._pick(group_policy, able, chunk, excluded=[dep], tally=tally)
        except BaseException:
            first.cancel()
            raise
        if second_dep is dep:
            return await first, dep
        tally.hedged = True
        second = asyncio.ensure_future(self._call(chunk, second_dep, group_policy, deadline, tally))
        owners = {first: dep, second: second_dep}
        pending = {first, second}
        error: BaseException | None = None
        try:
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if task.exception() is None:
                        return task.result(), owners[task]
                    error = error or task.exception()
            assert error is not None
            raise error
        finally:
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

    async def _call(self, chunk: DecisionRequest, dep: Deployment, group_policy: GroupPolicy,
                    deadline: float | None, tally: _Tally) -> DecisionResult:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= MIN_ATTEMPT_S:
                raise TimeoutError  # the deadline wrapper turns it into the 504
            if left < dep.timeout:
                dep = replace(dep, timeout=left)
        started = time.perf_counter()
        attempt = self.tracing.attempt(dep) if self.tracing is not None else None
        self.health.begin(dep, group_policy)
        try:
            result = await calls.call(self.upstream, chunk, dep, attempt.headers if attempt is not None else None)
        except UpstreamError as err:
            _attempt_ended(tally, started, attempt, error=err)
            await self.health.failed(dep, group_policy, err, (time.perf_counter() - started) * 1000.0)
            raise
        except BaseException as exc:
            _attempt_ended(tally, started, attempt, error=exc)
            self.health.end(dep, group_policy)
            raise
        _attempt_ended(tally, started, attempt, result=result)
        self.health.succeeded(dep, group_policy, (time.perf_counter() - started) * 1000.0, result.usage)
        return result

    # ---- picking -------------------------------------------------------------------------------------

    async def _pick(self, group_policy: GroupPolicy, able: Able, chunk: DecisionRequest,
                    excluded: Sequence[Deployment], tally: _Tally) -> Deployment:
        if len(able) == 1:  # nothing to balance: only whether it is cooling (for the header, the fallback)
            dep = able[0][0]
            if await self.health.is_cooling(dep):
                tally.cooling_tried = True
            return dep
        deps = [dep for dep, _ in able]
        candidates = await self.health.candidates(deps, group_policy, excluded)
        chosen = choose(group_policy.strategy, candidates, self.rng, group_policy.lowest_latency_buffer)
        if chosen.cooling:
            tally.cooling_tried = True
        return chosen.dep


def _able(deployments: Sequence[Deployment], req: DecisionRequest) -> tuple[Able, Unsupported | None]:
    """The deployments that can take ``req`` (the pre-call filter), and the first refusal. The check
    (every question, the token estimate of each chunk) runs once per provider and limits, not once per
    deployment: the deployments of a group mostly share both."""
    able: Able = []
    refusal: Unsupported | None = None
    outcomes: dict[tuple[str, Limits], Unsupported | None] = {}
    for dep in deployments:
        provider = get_provider(dep.provider)
        limits = calls.request_limits(provider, dep, req)
        key = (provider.name, limits)
        if key not in outcomes:
            try:
                calls.check_fit(provider, limits, req)
                outcomes[key] = None
            except Unsupported as err:
                outcomes[key] = err
        why = outcomes[key]
        if why is None:
            able.append((dep, limits))
        else:
            refusal = refusal or why
    return able, refusal


def _limits_of(able: Able, dep: Deployment) -> Limits:
    return next(limits for candidate, limits in able if candidate is dep)


def _fits(dep: Deployment, chunk: DecisionRequest) -> bool:
    try:
        calls.fit(dep, chunk)
    except Unsupported:
        return False
    return True


def _attempt_ended(tally: _Tally, started: float, attempt, result: DecisionResult | None = None,
                   error: BaseException | None = None) -> None:
    """The attempt's time into the request's upstream time; its span (traces on) ends."""
    tally.upstream_ms += (time.perf_counter() - started) * 1000.0
    if attempt is not None:
        attempt.end(result, error)


def _hedge_after(dep: Deployment, group_policy: GroupPolicy) -> float | None:
    own = dep.params.get("hedge_after_ms")
    if isinstance(own, (int, float)) and not isinstance(own, bool) and own > 0:
        return float(own)
    return group_policy.hedge_after_ms


async def _gather_all(calls_):
    """Run the chunks concurrently; on the first failure cancel the rest and raise it."""
    tasks = [asyncio.ensure_future(c) for c in calls_]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
