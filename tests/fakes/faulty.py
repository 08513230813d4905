"""Fake TypeSafe upstreams that misbehave on every request while a fault is set, for load under faults.

``FaultyTypeSafe(api_key)`` answers as ``FakeTypeSafe`` until ``fault(kind, **options)`` is set (and
again after ``fault("ok")``); unlike the harness's ``*_next`` methods a fault holds for every request,
which is what a load of concurrent requests needs:

* ``"down"``: 503 in TypeSafe's envelope;
* ``"slow"``: the right answer after ``delay`` seconds;
* ``"flap"``: healthy and failing (500) in turns of ``period`` seconds, starting healthy, or failing
  first with ``failing_first=True`` (two fakes with opposite phases: one is always up);
* ``"reset"``: the TCP connection reset, before answering or (``mid_body=True``) in the middle of the
  body; ``every`` > 1 resets only each n-th request;
* ``"storm"``: 429 with ``Retry-After: <retry_after>``, for ``seconds`` (then healthy again by itself).

``ok`` counts the complete 200 answers it gave (each a decision some caller may have got);
``requests`` (the harness's record) every request that reached it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from tests.fakes.harness import Recorded, Scripted
from tests.fakes.typesafe import FakeTypeSafe

KINDS = ("ok", "down", "slow", "flap", "reset", "storm")


class FaultyTypeSafe(FakeTypeSafe):
    def __init__(self, api_key: str | None = "ts-test-key") -> None:
        super().__init__(api_key)
        self.kind, self.options = "ok", {}
        self.since = time.monotonic()
        self.ok = 0
        self._n = 0
        self._count_lock = threading.Lock()

    def fault(self, kind: str, **options: Any) -> None:
        if kind not in KINDS:
            raise ValueError(f"fault: one of {KINDS}")
        self.kind, self.options, self.since = kind, options, time.monotonic()

    def handle(self, rec: Recorded) -> Scripted:
        with self._count_lock:
            self._n += 1
            n = self._n
        answer = self._faulty(rec, n)
        if answer.status == 200 and not answer.reset:
            with self._count_lock:
                self.ok += 1
        return answer

    def _faulty(self, rec: Recorded, n: int) -> Scripted:
        kind, opts = self.kind, self.options
        elapsed = time.monotonic() - self.since
        if kind == "down":
            return self.error(503, "TypeSafe is down for maintenance", "service_unavailable")
        if kind == "slow":
            return replace(super().handle(rec), delay=float(opts.get("delay", 1.0)))
        if kind == "flap":
            failing = int(elapsed / float(opts.get("period", 0.2))) % 2 == (0 if opts.get("failing_first") else 1)
            return self.error(500, "flapping", "internal_error") if failing else super().handle(rec)
        if kind == "reset" and n % int(opts.get("every", 1)) == 0:
            return Scripted(200, {"Content-Type": "application/json"}, b'{"answers": {"refund": {"type": "noul"',
                            reset="mid_body" if opts.get("mid_body") else "before")
        if kind == "storm" and elapsed < float(opts.get("seconds", 1e9)):
            return self.error(429, "Too many requests", "rate_limited",
                              headers={"Retry-After": str(opts.get("retry_after", 1))})
        return super().handle(rec)
