"""The pipeline's call step: one deployment answers one request (pure of routing; no retries yet).

    capability checks (options, levels, box, images, context) -> 400 ``Unsupported`` before any call
    split over the provider's question limit (gateway/split.py), chunks run concurrently
    provider.build_request -> Upstream.send -> provider.parse_response
    merge (answers in order, usage summed)

The result is not normalised yet: that is the pipeline's next step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable

from gateway.split import merge_results, split_request
from providers import capabilities
from providers.base import Deployment, Limits, Provider, UpstreamRequest
from providers.limits import limits_for
from providers.registry import get_provider
from translators.errors import UpstreamError
from translators.ir import DecisionRequest, DecisionResult


async def call_deployment(upstream, req: DecisionRequest, dep: Deployment) -> DecisionResult:
    """Ask ``dep`` the whole request (split over its provider's question limit); raw, merged result."""
    provider = get_provider(dep.provider)
    limits = request_limits(provider, dep, req)
    capabilities.check(provider.name, limits, req, inline_images_only=provider.inline_images_only)
    chunks = split_request(req, limits.max_questions)
    for chunk in chunks:
        capabilities.check_context(provider.name, limits, chunk)
    built = [provider.build_request(chunk, dep) for chunk in chunks]  # config errors before any call
    if len(chunks) == 1:
        return await _send(upstream, provider, built[0], chunks[0], dep)
    return merge_results(await _gather_all(_send(upstream, provider, b, c, dep) for b, c in zip(built, chunks)))


def request_limits(provider: Provider, dep: Deployment, req: DecisionRequest) -> Limits:
    """The deployment's limits for this request (a provider may narrow them per request)."""
    return provider.request_limits(limits_for(provider.limits, dep), req, dep=dep)


async def _send(upstream, provider: Provider, upstream_request: UpstreamRequest, chunk: DecisionRequest,
                dep: Deployment) -> DecisionResult:
    try:
        response = await upstream.send(upstream_request, provider.name)
    except UpstreamError as err:
        if not err.provider:
            err.provider = provider.name
        raise
    return provider.parse_response(response, chunk, dep)


async def _gather_all(calls: Iterable[Awaitable[DecisionResult]]) -> list[DecisionResult]:
    """Run the chunk calls concurrently; on the first failure cancel the rest and raise it."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
