"""Upstream HTTP: one shared, pooled client for the whole process.

The client is the gateway's own (``gateway/upstream/http_client.py``: kept-alive connections on asyncio's
transports and httptools' parser): httpx's pool is slow under concurrency (encode/httpx#3215), and
aiohttp's client spent three times the exchange's own CPU in its objects; see
``bench/upstream_client.py`` and docs/benchmarks.md. URLs ``local://<model-ref>/<path>`` go to the
bundled backend in this process (``backend.inprocess.call``) instead of over HTTP.

Transport failures become ``UpstreamError``: 502 when the upstream cannot be reached, 504 when it
does not answer in time. Messages name the provider and host, never a key or a query string.

An answer is counted as it is decoded (the client inflates gzip and deflate as it reads), so an
answer beyond ``max_response_bytes`` (general_settings.max_upstream_response_bytes,
16 MiB) is dropped as soon as it is over: a 1 MB gzip answer inflating to 1 GiB costs 16 MiB and
a few milliseconds, not the process. ``parse_off_loop`` runs a provider's parsing of a large answer
in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from urllib.parse import unquote, urlsplit

from gateway.config.limits import DEFAULT_LIMITS_SETTINGS
from gateway.json_codec import json_bytes
from gateway.upstream.http_client import AnswerTooLarge, HttpClient
from providers.base import UpstreamRequest, UpstreamResponse
from translators.errors import DecisionError, UpstreamError

log = logging.getLogger("gateway.upstream")

LOCAL_SCHEME = "local://"
# What a failed exchange raises: timeouts and socket errors (the client's protocol errors are OSErrors).
TRANSPORT_ERRORS = (asyncio.TimeoutError, TimeoutError, OSError)
MAX_RESPONSE_BYTES = DEFAULT_LIMITS_SETTINGS.max_upstream_response_bytes
# Answers this large are parsed in a worker thread (json.loads of 16 MiB takes ~0.1 s).
OFF_LOOP_RESPONSE_BYTES = 256 * 1024


class Upstream:
    """Sends ``UpstreamRequest``s over one pooled client. ``start`` once, ``close`` at shutdown."""

    def __init__(self, *, max_connections: int = 1000, keepalive_expiry: float = 30.0,
                 max_response_bytes: int = MAX_RESPONSE_BYTES):
        self._max_connections = max_connections
        self._keepalive_expiry = keepalive_expiry
        self.max_response_bytes = max_response_bytes
        self._client: HttpClient | None = None

    @property
    def started(self) -> bool:
        return self._client is not None

    async def start(self) -> None:
        if self._client is None:
            self._client = HttpClient(self._max_connections, self._keepalive_expiry)

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def __aenter__(self) -> Upstream:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def send(self, request: UpstreamRequest, provider: str = "") -> UpstreamResponse:
        provider = provider or _host(request.url)
        if request.url.startswith(LOCAL_SCHEME):
            return await send_local(request, provider)
        if self._client is None:
            await self.start()
        assert self._client is not None
        content, headers = encode_body(request, provider)
        started = time.perf_counter()
        try:
            answer = await self._client.request(request.method, request.url, headers, content,
                                                timeout_s=request.timeout, max_bytes=self.max_response_bytes)
        except AnswerTooLarge:
            raise response_too_large(provider, self.max_response_bytes) from None
        except ValueError as exc:  # a header that cannot be sent, or a URL that is not http(s)
            raise UpstreamError(502, f"The request for upstream {provider} cannot be sent ({exc}).",
                                provider=provider) from None
        except TRANSPORT_ERRORS as exc:
            raise transport_error(exc, provider, request.url, request.timeout) from None
        return UpstreamResponse(status=answer.status, headers=answer.headers, body=answer.body,
                                elapsed_ms=(time.perf_counter() - started) * 1000.0)


def response_too_large(provider: str, max_bytes: int) -> UpstreamError:
    return UpstreamError(502, f"The upstream {provider} answered more than {max_bytes} bytes (decoded); "
                              "the answer was dropped (the max_upstream_response_bytes limit).",
                         provider=provider, type="upstream_error", code="upstream_response_too_large")


async def parse_off_loop(parse, response: UpstreamResponse, *args):
    """``parse(response, *args)``, in a worker thread when the answer is large (so a big JSON parse
    never stalls every other request), inline otherwise (a thread hop costs more than a small parse)."""
    if len(response.body) >= OFF_LOOP_RESPONSE_BYTES:
        return await asyncio.to_thread(parse, response, *args)
    return parse(response, *args)


def encode_body(request: UpstreamRequest, provider: str) -> tuple[bytes | None, dict[str, str]]:
    """The bytes to send: raw ``content`` as is, or ``json`` compact with a JSON Content-Type."""
    if request.content is not None or request.json is None:
        return request.content, request.headers
    try:
        content = json_bytes(request.json)
    except (TypeError, ValueError) as exc:
        raise UpstreamError(502, f"The request for upstream {provider} cannot be encoded as JSON ({exc}).",
                            provider=provider) from None
    headers = dict(request.headers)
    if not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = "application/json"
    return content, headers


def transport_error(exc: BaseException, provider: str, url: str, timeout: float) -> UpstreamError:
    """502 for an upstream that cannot be reached, 504 for one that does not answer in time."""
    where = f"upstream {provider} at {_host(url)}"
    if _is_timeout(exc):
        return UpstreamError(504, f"The {where} did not answer within {timeout:g} s.", provider=provider,
                             type="timeout", code="upstream_timeout")
    reason = type(_root(exc)).__name__
    return UpstreamError(502, f"Could not reach the {where} ({reason}).", provider=provider,
                         type="upstream_error", code="upstream_unreachable")


def _is_timeout(exc: BaseException) -> bool:
    """A timeout; connection refusals are not timeouts."""
    return isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or isinstance(_root(exc), TimeoutError)


def _root(exc: BaseException) -> BaseException:
    seen = exc
    while seen.__cause__ is not None and seen.__cause__ is not seen:
        seen = seen.__cause__
    return seen


def _host(url: str) -> str:
    if url.startswith(LOCAL_SCHEME):
        return "local"
    parts = urlsplit(url)
    return parts.netloc.rsplit("@", 1)[-1] or url.split("?", 1)[0]


# --------------------------------------------------------------------------------------------
# local:// -> the bundled backend, in process
# --------------------------------------------------------------------------------------------


def split_local_url(url: str) -> tuple[str, str]:
    """``local://<model-ref>/v1/decisions`` -> (model_ref, "/v1/decisions")."""
    rest = url[len(LOCAL_SCHEME):].split("?", 1)[0]
    cut = rest.find("/v1/")
    if cut < 0:
        cut = rest.find("/")
    if cut <= 0:
        raise ValueError(f"local upstream URL {url!r} needs the form local://<model-ref>/<path>")
    return unquote(rest[:cut]), rest[cut:]


async def send_local(request: UpstreamRequest, provider: str = "local") -> UpstreamResponse:
    try:
        model_ref, path = split_local_url(request.url)
    except ValueError as exc:
        raise UpstreamError(502, str(exc), provider=provider) from None
    body = request.json
    if body is None and request.content is not None:
        try:
            body = json.loads(request.content)
        except ValueError:
            raise UpstreamError(502, "The local backend takes JSON bodies only.", provider=provider) from None
    try:
        from backend import inprocess
    except ImportError as exc:
        raise UpstreamError(502, f"The bundled backend is not installed ({exc.name or exc}); "
                                 "install the 'backend' extra.", provider=provider) from None
    started = time.perf_counter()
    try:
        status, payload, headers = await asyncio.wait_for(inprocess.call(model_ref, path, body),
                                                           timeout=request.timeout)
    except TimeoutError:
        raise UpstreamError(504, f"The local backend ({model_ref}) did not answer within {request.timeout:g} s.",
                            provider=provider, type="timeout", code="upstream_timeout") from None
    except DecisionError:
        raise
    except Exception as exc:  # noqa: BLE001 - a backend crash is the upstream's fault, not the caller's
        raise UpstreamError(502, f"The local backend ({model_ref}) failed: {type(exc).__name__}: {exc}",
                            provider=provider) from None
    return UpstreamResponse(
        status=int(status), headers={"content-type": "application/json", **{k.lower(): v for k, v in headers.items()}},
        body=json.dumps(payload).encode(), elapsed_ms=(time.perf_counter() - started) * 1000.0,
    )


async def warm_local_models(model_refs: list[str]) -> dict[str, str]:
    """Load each ``local/`` model once, off the event loop, so the first request does not pay for it.

    Returns the models that failed to load, with the reason (a request to one of them answers 400
    naming it); the gateway keeps serving its other models.
    """
    if not model_refs:
        return {}
    from backend import inprocess
    from backend.loading import ModelLoadError

    failed: dict[str, str] = {}
    for ref in dict.fromkeys(model_refs):
        try:
            await asyncio.to_thread(inprocess.get_service, ref)
        except ModelLoadError as err:
            failed[ref] = str(err)
            log.error("local model %r cannot be loaded: %s", ref, err)
    return failed

