"""The Python API beside the proxy, as LiteLLM's ``decisions`` / ``adecisions``.

    from gateway import decisions
    r = decisions(model="typesafe/jev-latest", input="I was charged twice.",
                  questions=[{"type": "predicate", "name": "refund", "instructions": "Refund request?"}])
    r.answers[0].probability

``input=`` takes the OpenAI Decisions wire and returns its response; ``state=`` takes the System
One wire (``questions`` a map, optional ``assets``) and returns System One. Passing both is an
error. The request goes through the same validation, provider, splitting and normalisation as the
proxy (``gateway.pipeline``), straight to the upstream. Errors raise ``DecisionError`` subclasses:
``RequestInvalid``, ``Unsupported``, ``UpstreamError``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from translators import openai as openai_wire
from translators import systemone as systemone_wire
from translators.errors import RequestInvalid

DEFAULT_TIMEOUT_S = 60.0
WIRES = {"openai": openai_wire, "systemone": systemone_wire}
RESPONSE_MODELS = {"openai": ("translators.openai_wire", "DecisionResponse"),
                   "systemone": ("translators.systemone_wire", "SystemOneResponse")}


def decisions(*, model: str, questions: Any, input: Any = None, state: Any = None, **kwargs: Any) -> Any:
    """Synchronous ``adecisions``: runs its own event loop.

    Called where a loop is already running (a notebook, a sync helper inside async code), the call
    runs on its own loop in a worker thread and this thread waits for it; async code should
    prefer ``await adecisions(...)``, which does not block the loop.
    """
    def call() -> Any:
        return asyncio.run(adecisions(model=model, questions=questions, input=input, state=state, **kwargs))

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return call()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="decisions") as pool:
        return pool.submit(call).result()


async def adecisions(*, model: str, questions: Any, input: Any = None, state: Any = None,
                     api_key: str | None = None, api_base: str | None = None, timeout: float | None = None,
                     extra_headers: Mapping[str, str] | None = None, assets: Mapping[str, Any] | None = None,
                     safety_identifier: str | None = None, prompt_cache_key: str | None = None,
                     prompt_cache_options: Mapping[str, Any] | None = None,
                     environ: Mapping[str, str] | None = None, upstream: Any = None) -> Any:
    """Ask ``questions`` of ``model`` (``"provider/name"``) about ``input`` (OpenAI) or ``state`` (System One).

    The call goes through the gateway's pipeline (parse, route, call, normalise, render) with a
    one-deployment registry. ``upstream`` may be a started ``gateway.upstream.upstream.Upstream`` to reuse;
    otherwise one is opened for the call. ``environ`` replaces ``os.environ`` for key and base lookup.
    """
    from gateway.config.registry import ModelRegistry
    from gateway.context import RequestContext
    from gateway.decode.body import DecodedBody
    from gateway.edge.request_id import new_request_id
    from gateway.pipeline import IR_STEPS, Pipeline
    from providers.registry import adhoc_deployment, split_model

    wire, body = _caller_body(model, questions, input, state, assets, safety_identifier, prompt_cache_key,
                              prompt_cache_options)
    split_model(model)  # an unknown provider fails here, listing the known ones
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise RequestInvalid(f"timeout must be a positive number of seconds, not {timeout!r}.", loc=("timeout",),
                             code="invalid_parameter")
    _require_json(body)
    params = {"extra_headers": dict(extra_headers)} if extra_headers else {}
    dep = adhoc_deployment(model, api_key=api_key, api_base=api_base,
                           timeout=float(timeout) if timeout is not None else DEFAULT_TIMEOUT_S, params=params)
    registry = ModelRegistry.adhoc(dep, environ)
    headers = {str(k): str(v) for k, v in extra_headers.items()} if extra_headers else {}
    ctx = RequestContext(request_id=new_request_id(), route="python:adecisions", wire=WIRES[wire],
                         body=DecodedBody(body), forwarded_headers=headers)
    if upstream is None:
        from gateway.upstream.upstream import Upstream

        async with Upstream() as own:
            await Pipeline(registry, own).run(ctx, IR_STEPS, raise_errors=True)
    else:
        await Pipeline(registry, upstream).run(ctx, IR_STEPS, raise_errors=True)
    return _response_model(wire, ctx.response)


def _caller_body(model, questions, input, state, assets, safety_identifier, prompt_cache_key,
                 prompt_cache_options) -> tuple[str, dict]:
    if input is not None and state is not None:
        raise RequestInvalid("Pass either input= (OpenAI Decisions) or state= (System One), not both.",
                             loc=("input",), code="conflicting_parameters")
    if input is None and state is None:
        raise RequestInvalid("Pass input= (OpenAI Decisions) or state= (System One): the request has nothing "
                             "to decide on.", loc=("input",), code="missing_required_parameter")
    if input is not None:
        body: dict[str, Any] = {"model": model, "input": input, "questions": questions}
        for key, value in (("safety_identifier", safety_identifier), ("prompt_cache_key", prompt_cache_key),
                           ("prompt_cache_options", prompt_cache_options)):
            if value is not None:
                body[key] = dict(value) if isinstance(value, Mapping) else value
        return "openai", body
    if safety_identifier is not None:
        raise RequestInvalid("safety_identifier belongs to the OpenAI Decisions wire (input=), not System One.",
                             loc=("safety_identifier",), code="unsupported_parameter")
    body = {"model": model, "state": state, "questions": questions}
    if assets is not None:
        body["assets"] = dict(assets)
    return "systemone", body


def _require_json(body: dict) -> None:
    """What the caller passed must be what a JSON body could carry: no NaN or infinity, no lone surrogates."""
    import json

    try:
        json.dumps(body, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except ValueError as err:  # non-finite floats; UnicodeEncodeError is a ValueError too
        raise RequestInvalid(f"The request must be valid JSON: {err}.", loc=("body",), code="invalid_json") from None
    except TypeError as err:
        raise RequestInvalid(f"The request must be valid JSON: {err}.", loc=("body",), code="invalid_json") from None


def _response_model(wire: str, payload: dict) -> Any:
    """The rendered answer as the wire's pydantic response model (a dict when it cannot be built)."""
    import importlib

    module_name, class_name = RESPONSE_MODELS[wire]
    try:
        model_class = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError):
        return payload
    return model_class.model_validate(payload)
