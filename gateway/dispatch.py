"""Dispatch: a decision request and a model name -> one or more upstream calls -> one normalised result.

    model name -> Deployment -> Provider
      capability checks (options, levels, box, images) -> 400 ``Unsupported`` before any call
      split over the provider's question limit (gateway/split.py), chunks run concurrently
      provider.build_request -> Upstream.send -> provider.parse_response
      merge (answers in order, usage summed) -> translators.normalize.normalise_result

Deployments of one model group are tried in the order given (the first one serves; balancing,
retries and fallbacks belong to the router, which can call ``decide_on`` with its own choice).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from gateway.split import merge_results, split_request
from providers import capabilities
from providers.base import Deployment, Limits, Provider
from providers.limits import limits_for
from providers.registry import adhoc_deployment, get_provider, resolve
from translators.errors import RequestInvalid, UpstreamError
from translators.ir import DecisionRequest, DecisionResult


class Decided(NamedTuple):
    result: DecisionResult
    deployment: Deployment


class Dispatcher:
    def __init__(self, deployments: Iterable[Deployment], upstream, *, allow_adhoc: bool = False,
                 environ: Mapping[str, str] | None = None):
        self._environ = os.environ if environ is None else environ
        self.deployments = [resolve(dep, self._environ) for dep in deployments]
        self.upstream = upstream
        self.allow_adhoc = allow_adhoc

    # ---- lookup ----------------------------------------------------------------------------

    @property
    def model_names(self) -> list[str]:
        return list(dict.fromkeys(dep.model_name for dep in self.deployments))

    def group(self, model_name: str) -> list[Deployment]:
        return [dep for dep in self.deployments if dep.model_name == model_name]

    def deployment_for(self, model_name: str) -> Deployment:
        group = self.group(model_name)
        if group:
            return group[0]
        if self.allow_adhoc and "/" in (model_name or ""):
            return resolve(adhoc_deployment(model_name), self._environ)
        names = ", ".join(self.model_names) or "(none configured)"
        raise RequestInvalid(
            f"Unknown model '{model_name}': the configured models are {names}.", loc=("model",), code="model_not_found",
        )

    # ---- the call --------------------------------------------------------------------------

    async def decide(self, req: DecisionRequest, model_name: str) -> Decided:
        dep = self.deployment_for(model_name)
        return Decided(await self.decide_on(req, dep), dep)

    async def decide_on(self, req: DecisionRequest, dep: Deployment) -> DecisionResult:
        provider = get_provider(dep.provider)
        limits = request_limits(provider, dep, req)
        capabilities.check(provider.name, limits, req,
                           inline_images_only=getattr(provider, "inline_images_only", True))
        chunks = split_request(req, limits.max_questions)
        for chunk in chunks:
            capabilities.check_context(provider.name, limits, chunk)
        built = [provider.build_request(chunk, dep) for chunk in chunks]  # config errors before any call
        if len(chunks) == 1:
            results = [await self._call(provider, built[0], chunks[0], dep)]
        else:
            results = await _gather_all(self._call(provider, b, c, dep) for b, c in zip(built, chunks))
        from translators.normalize import normalise_result

        try:
            return normalise_result(merge_results(results), req)
        except UpstreamError as err:
            if not err.provider:
                err.provider = provider.name
            raise

    async def _call(self, provider: Provider, upstream_request, chunk: DecisionRequest,
                    dep: Deployment) -> DecisionResult:
        try:
            response = await self.upstream.send(upstream_request, provider.name)
        except UpstreamError as err:
            if not err.provider:
                err.provider = provider.name
            raise
        return provider.parse_response(response, chunk, dep)


def request_limits(provider: Provider, dep: Deployment, req: DecisionRequest) -> Limits:
    limits = limits_for(provider.limits, dep)
    adjust = getattr(provider, "request_limits", None)
    return adjust(limits, req, dep=dep) if adjust else limits


async def _gather_all(calls) -> list[DecisionResult]:
    """Run the chunk calls concurrently; on the first failure cancel the rest and raise it."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
