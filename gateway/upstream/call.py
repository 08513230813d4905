"""One deployment and one request: can it take it (pure), and one upstream call (the call step).

    fit(dep, req)       capability checks (options, levels, box, images; context per chunk)
                        -> the deployment's limits, or 400 ``Unsupported`` before any call
    split(req, limits)  consecutive chunks within the provider's question limit
    call(upstream, chunk, dep)
                        provider.build_request -> Upstream.send -> provider.parse_response
                        -> normalised result (translators.normalize)

The router (gateway/router/) decides which deployment each chunk goes to, retries and falls back.
"""

from __future__ import annotations

from dataclasses import replace

from gateway.upstream.split import split_request
from gateway.upstream.upstream import parse_off_loop
from providers import capabilities
from providers.base import Deployment, Limits, Provider
from providers.limits import limits_for
from providers.registry import get_provider
from translators.errors import UpstreamError
from translators.ir import DecisionRequest, DecisionResult
from translators.normalize import normalise_result


def fit(dep: Deployment, req: DecisionRequest) -> Limits:
    """The deployment's limits for this request; ``Unsupported`` (400) when it cannot take it."""
    provider = get_provider(dep.provider)
    limits = request_limits(provider, dep, req)
    check_fit(provider, limits, req)
    return limits


def check_fit(provider: Provider, limits: Limits, req: DecisionRequest) -> None:
    """``Unsupported`` (400) when a deployment of ``provider`` with ``limits`` cannot take ``req``; it
    depends on nothing else, so deployments that share both share the outcome."""
    capabilities.check(provider.name, limits, req, inline_images_only=provider.inline_images_only)
    if limits.max_context_tokens is not None:
        for chunk in split(req, limits):
            capabilities.check_context(provider.name, limits, chunk)


def split(req: DecisionRequest, limits: Limits) -> list[DecisionRequest]:
    return split_request(req, limits.max_questions)


def request_limits(provider: Provider, dep: Deployment, req: DecisionRequest) -> Limits:
    """The deployment's limits for this request (a provider may narrow them per request)."""
    return provider.request_limits(limits_for(provider.limits, dep), req, dep=dep)


async def call(upstream, chunk: DecisionRequest, dep: Deployment,
               trace_headers: dict[str, str] | None = None) -> DecisionResult:
    """One upstream call for a chunk that fits ``dep``; the answer checked and normalised.
    ``trace_headers`` (the attempt's ``traceparent``, traces on) go with the request."""
    provider = get_provider(dep.provider)
    upstream_request = provider.build_request(chunk, dep)
    if trace_headers:
        upstream_request = replace(upstream_request, headers={**upstream_request.headers, **trace_headers})
    try:
        response = await upstream.send(upstream_request, provider.name)
        return normalise_result(await parse_off_loop(provider.parse_response, response, chunk, dep), chunk)
    except UpstreamError as err:
        err.provider = err.provider or provider.name
        raise
