"""Waiting for a key or team change to reach a gateway, as the product promises it.

``gateway/auth/cache.py`` promises that a change (a key blocked, unblocked, regenerated, a team
blocked...) is seen by every gateway instance within ``CHECK_S`` (250 ms) of it. A test that
measured the whole wait against a fixed wall-clock bound failed whenever the machine stalled; these
helpers check the promise itself, and more strictly: every call that *started* more than
``CHECK_S + MARGIN_S`` after the change returned must see it, however long the machine stalls in
between, and once a call has seen it no later one may stop seeing it (a stale entry never comes
back). They make calls until ``CALLS_AFTER`` of them started past that bound.

``changed, last = await after_change(change, call, seen, what)`` (``after_change_sync`` for a
synchronous client): ``change()`` makes the change and returns its response; ``call()`` is one
request through the instance under test; ``seen(response)`` says whether it shows the change.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import httpx

from gateway.auth.cache import CHECK_S

# The test reads the same monotonic clock as the key cache; the margin only covers reading it
# around the calls (the change has been made, and announced, before its response returns).
MARGIN_S = 0.05
CALLS_AFTER = 3


class Watch:
    """The calls after one change: ``note(started, response)`` says whether enough have been made."""

    def __init__(self, seen: Callable[[httpx.Response], bool], what: str):
        self.changed_at = time.monotonic()  # taken as the change's response has returned
        self.seen, self.what = seen, what
        self.seen_once = False
        self.late_calls = 0

    def note(self, started: float, response: httpx.Response) -> bool:
        after = started - self.changed_at
        shown = self.seen(response)
        assert shown or not self.seen_once, (
            f"{self.what}: a call {after:.3f} s after the change no longer saw it ({response.status_code} "
            f"{response.text[:200]})")
        self.seen_once = self.seen_once or shown
        if after > CHECK_S + MARGIN_S:
            assert shown, (f"{self.what}: a call that started {after:.3f} s after the change returned (more "
                           f"than CHECK_S {CHECK_S} s + {MARGIN_S} s) did not see it: {response.status_code} "
                           f"{response.text[:200]}")
            self.late_calls += 1
        return self.late_calls >= CALLS_AFTER


async def after_change(change: Callable[[], Awaitable[httpx.Response]], call: Callable[[], Awaitable[httpx.Response]],
                       seen: Callable[[httpx.Response], bool], what: str) -> tuple[httpx.Response, httpx.Response]:
    changed = await change()
    watch = Watch(seen, what)
    while True:
        started = time.monotonic()
        response = await call()
        if watch.note(started, response):
            return changed, response
        await asyncio.sleep(0.02)


def after_change_sync(change: Callable[[], httpx.Response], call: Callable[[], httpx.Response],
                     seen: Callable[[httpx.Response], bool], what: str) -> tuple[httpx.Response, httpx.Response]:
    changed = change()
    watch = Watch(seen, what)
    while True:
        started = time.monotonic()
        response = call()
        if watch.note(started, response):
            return changed, response
        time.sleep(0.02)
