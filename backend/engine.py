"""The scoring queue: requests wait here, one worker thread runs forward passes off the event loop.

Whatever is queued when the worker becomes free is scored together (``Scorer.score_jobs``), so
concurrent requests are batched. Rows queued or in flight are bounded; past the bound a request is
refused at once with ``EngineBusy`` (503, Retry-After). A request's rows count until its own
coroutine has its result, so the bound is exact from the event loop's point of view. When the queue
is empty after a pass, the freed memory of the passes goes back to the system (``backend.memory``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from backend.errors import EngineBusy
from backend.memory import release_free_memory
from backend.scoring import ScoreOutput, Scorer, ScoreRow


@dataclass
class _Job:
    rows: Sequence[ScoreRow]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future


class ScoringEngine:
    def __init__(self, scorer: Scorer, *, max_queued_rows: int = 1024, max_rows_per_pass: int = 256,
                 retry_after_s: int = 1):
        self.scorer = scorer
        self.max_queued_rows = max_queued_rows
        self.max_rows_per_pass = max_rows_per_pass
        self.retry_after_s = retry_after_s
        self._cond = threading.Condition()
        self._pending: list[_Job] = []
        self._rows_held = 0  # queued + in flight + delivered but not yet picked up
        self._closed = False
        self.passes = 0  # worker passes run (a pass may serve several requests)
        self._thread = threading.Thread(target=self._work, name="decisions-scoring", daemon=True)
        self._thread.start()

    async def score(self, rows: Sequence[ScoreRow]) -> ScoreOutput:
        loop = asyncio.get_running_loop()
        job = _Job(rows, loop, loop.create_future())
        with self._cond:
            if self._closed:
                raise RuntimeError("the scoring engine is closed")
            if self._rows_held and self._rows_held + len(rows) > self.max_queued_rows:
                raise EngineBusy(self.retry_after_s)
            self._rows_held += len(rows)
            self._pending.append(job)
            self._cond.notify()
        try:
            return await job.future
        finally:
            with self._cond:
                self._rows_held -= len(rows)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    # -- worker thread -------------------------------------------------------------------------

    def _take(self) -> list[_Job] | None:
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait()
            if self._closed and not self._pending:
                return None
            taken: list[_Job] = []
            rows = 0
            while self._pending and (not taken or rows + len(self._pending[0].rows) <= self.max_rows_per_pass):
                job = self._pending.pop(0)
                taken.append(job)
                rows += len(job.rows)
            return taken

    def _work(self) -> None:
        while (jobs := self._take()) is not None:
            live = [j for j in jobs if not j.future.cancelled()]
            if not live:
                continue
            try:
                outputs = self.scorer.score_jobs([j.rows for j in live])
                self.passes += 1
                for job, out in zip(live, outputs):
                    _post(job, out, None)
            except BaseException as err:  # noqa: BLE001 - every waiting request must hear about it
                for job in live:
                    _post(job, None, err)
            if self._idle():  # nothing waiting: the pass's freed tensors go back to the system
                release_free_memory()

    def _idle(self) -> bool:
        with self._cond:
            return not self._pending


def _post(job: _Job, result, error) -> None:
    try:
        job.loop.call_soon_threadsafe(_deliver, job.future, result, error)
    except RuntimeError:  # the caller's event loop is gone; nobody is waiting
        pass


def _deliver(future: asyncio.Future, result, error) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
