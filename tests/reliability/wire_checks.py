"""One well-formed answer in the caller's wire envelope, and a load driver that records every answer.

``problem(wire, status, headers, body)`` is None when the answer is well formed, else why not:

* every answer carries an ``x-request-id`` and a JSON object body, and no 500 (nor any status the
  gateway never gives: 1xx, 3xx, 0);
* ``systemone`` (System One, the ``/typesafe/...`` pass-through): 200 -> ``answers`` an object of typed
  answers (a validate route: ``{"valid": true, ...}``); an error -> ``{"detail": {"message", "error_type"}}`` or, for a 422, FastAPI's ``detail`` list
  of ``{loc, msg, type}``;
* ``openai`` (OpenAI Decisions, and the admin API, which answers in OpenAI's error envelope): 200 ->
  ``answers`` a list of named typed answers (admin: any JSON); an error -> ``{"error": {"message",
  "type", "param", "code"}}``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import aiohttp

SYSTEMONE, OPENAI, ADMIN = "systemone", "openai", "admin"
STATUSES = set(range(200, 300)) | set(range(400, 500)) | {501, 502, 503, 504}


def wire_of(path: str) -> str:
    if path.startswith(("/v1/systemone", "/systemone", "/typesafe/", "/laya/", "/bespoke/")):
        return SYSTEMONE
    if path.startswith(("/v1/decisions", "/decisions")):
        return OPENAI
    return ADMIN


def problem(wire: str, status: int, headers: Mapping[str, str], body: bytes) -> str | None:
    if status not in STATUSES:
        return f"status {status}"
    if not headers.get("x-request-id"):
        return "no x-request-id"
    try:
        payload = json.loads(body)
    except ValueError:
        return f"not JSON: {body[:200]!r}"
    if 200 <= status < 300 and wire == ADMIN:
        return None  # any JSON (LiteLLM's lists included)
    if not isinstance(payload, dict):
        return f"not a JSON object: {body[:200]!r}"
    if 200 <= status < 300:
        return _answers_problem(wire, payload)
    return _error_problem(wire, status, payload)


def _answers_problem(wire: str, payload: dict[str, Any]) -> str | None:
    if payload.get("valid") is True and "answers" not in payload:  # a validate route's verdict
        return None
    answers = payload.get("answers")
    if wire == SYSTEMONE:
        if not isinstance(answers, dict) or not all(isinstance(a, dict) and "type" in a for a in answers.values()):
            return f"no System One answers: {str(payload)[:200]}"
        return None
    if not isinstance(answers, list) or not all(isinstance(a, dict) and "type" in a and "name" in a
                                                for a in answers):
        return f"no OpenAI answers: {str(payload)[:200]}"
    return None


def _error_problem(wire: str, status: int, payload: dict[str, Any]) -> str | None:
    if wire == SYSTEMONE:
        detail = payload.get("detail")
        if status == 422 and isinstance(detail, list):
            ok = all(isinstance(d, dict) and {"loc", "msg", "type"} <= set(d) for d in detail) and detail
        else:
            ok = isinstance(detail, dict) and isinstance(detail.get("message"), str) and "error_type" in detail
        return None if ok else f"not System One's error envelope: {str(payload)[:300]}"
    error = payload.get("error")
    ok = isinstance(error, dict) and isinstance(error.get("message"), str) and {"type", "param", "code"} <= set(error)
    return None if ok else f"not OpenAI's error envelope: {str(payload)[:300]}"


@dataclass
class Answer:
    path: str
    status: int  # 0: no HTTP answer (a reset, a timeout)
    request_id: str | None
    problem: str | None
    headers: dict[str, str]
    body: bytes
    seconds: float


Request = tuple[str, str, Any, Mapping[str, str]]  # method, path, JSON body (or None), headers


async def one(session: aiohttp.ClientSession, base: str, request: Request, timeout_s: float) -> Answer:
    import aiohttp  # here, not at collection: reliability/conftest.py imports this module in every worker

    method, path, body, headers = request
    started = time.monotonic()
    try:
        async with session.request(method, base + path, json=body, headers=dict(headers),
                                   timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
            data = await resp.read()
            got = {k.lower(): v for k, v in resp.headers.items()}
            return Answer(path, resp.status, got.get("x-request-id"), problem(wire_of(path), resp.status, got, data),
                          got, data, time.monotonic() - started)
    except (aiohttp.ClientError, TimeoutError) as exc:
        return Answer(path, 0, None, f"no answer: {type(exc).__name__}: {exc}", {}, b"", time.monotonic() - started)


async def drive(base: str, requests: Iterable[Request], *, concurrency: int = 16, timeout_s: float = 30,
                on_answer: Callable[[Answer], None] | None = None) -> list[Answer]:
    """Send every request with ``concurrency`` in flight over kept-alive connections; every answer, in
    the order they came back."""
    import aiohttp

    answers: list[Answer] = []
    source = iter(requests)

    async def worker(session: aiohttp.ClientSession) -> None:
        for request in source:
            answer = await one(session, base, request, timeout_s)
            answers.append(answer)
            if on_answer is not None:
                on_answer(answer)

    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    return answers


def bad(answers: Iterable[Answer]) -> list[tuple[str, int, str | None]]:
    """The answers that are not well formed (path, status, why), for an assertion message."""
    return [(a.path, a.status, a.problem) for a in answers if a.problem is not None]


def admin_routes() -> list[tuple[str, str]]:
    """(method, path) of every admin route the gateway mounts (the admin API and /config/reload)."""
    from gateway.admin import admin_router
    from gateway.reload import router as reload_router

    found = []

    def walk(routes) -> None:
        for route in routes:
            inner = getattr(route, "original_router", None)  # an included router
            if inner is not None:
                walk(inner.routes)
            for method in sorted(getattr(route, "methods", None) or ()):
                found.append((method, route.path))

    walk([*admin_router().routes, *reload_router.routes])
    return found
