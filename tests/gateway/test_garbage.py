"""A request leaves no reference cycles behind: what it made is freed by reference counting when it
ends, so the garbage collector has nothing of it to find (a cycle per request once made the collector
walk every request's objects several times: a tenth of the gateway's CPU under load)."""

from __future__ import annotations

import gc
import http.client
import json
from collections import Counter
from urllib.parse import urlsplit

from tests.gateway.conftest import CLIENT_KEY
from tests.settled import tasks_of, wait_settled

QUESTIONS = {"billing": {"type": "noul", "instructions": "Is this about billing?"},
             "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset"}}}
BODIES = {
    "/v1/systemone": {"model": "jev", "state": "I was charged twice.", "questions": QUESTIONS},
    "/v1/decisions": {"model": "jev", "input": "I was charged twice.",
                      "questions": [{"type": "predicate", "name": "billing", "instructions": "Is this about billing?"}]},
}
REQUESTS_PER_ROUTE = 40


def post_all(url: str, rounds: int) -> list[int]:
    """``rounds`` requests to each route on one kept-alive connection; their statuses."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    statuses = []
    try:
        for _ in range(rounds):
            for path, body in BODIES.items():
                conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json",
                                                              "Authorization": f"Bearer {CLIENT_KEY}"})
                response = conn.getresponse()
                response.read()
                statuses.append(response.status)
    finally:
        conn.close()
    return statuses


# What a request is made of: the gateway's own objects, the server's and the framework's, and the
# coroutines, tasks and frames that answer it. (The spend outbox's drain, behind the responses, leaves
# a few of tenacity's objects in cycles per batch, not per request.)
REQUEST_MODULES = ("gateway.", "translators.", "providers.", "starlette.", "uvicorn.")
REQUEST_TYPES = {"coroutine", "Task", "frame", "traceback", "Context"}


def of_a_request(obj: object) -> bool:
    kind = type(obj)
    return kind.__name__ in REQUEST_TYPES or kind.__module__.startswith(REQUEST_MODULES)


def test_answered_requests_leave_no_cyclic_garbage(gateway):
    resting = tasks_of(gateway)
    assert set(post_all(gateway.url, 3)) == {200}  # warm: one-off caches and pools are made now
    wait_settled(gateway, resting, "the warm-up requests' work behind the responses ended")
    gc.collect()
    gc.disable()  # every cycle the requests make stays for the collection below
    try:
        statuses = post_all(gateway.url, REQUESTS_PER_ROUTE)
        # the watchers, the settling and the spend log's drain behind the responses end
        wait_settled(gateway, resting, "the requests' work behind the responses ended")
        gc.set_debug(gc.DEBUG_SAVEALL)  # what the collection finds is kept in gc.garbage to be looked at
        gc.collect()
        found = Counter(type(obj).__qualname__ for obj in gc.garbage if of_a_request(obj))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert set(statuses) == {200}
    # Before the fix each request left its context, its IR, its tasks and a traceback in one cycle.
    assert sum(found.values()) < len(statuses) / 10, f"after {len(statuses)} requests, in cycles: {found.most_common(8)}"
