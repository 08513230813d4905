"""A process the kill -9 tests start and kill: ``python -m tests.db.outbox_child DIR MODE N [URL]``.

``append``: appends rows ``child-0`` .. ``child-<N-1>``, printing ``appended <i>`` after each hundred and
``done`` at the end, then waits to be killed. ``drain``: appends N rows (printing ``appended N``), then
drains them to URL in batches of 7 (printing ``draining``), to be killed in the middle.
"""

from __future__ import annotations

import asyncio
import sys
import time

from gateway.db.engine import open_database
from gateway.db.outbox import SpendOutbox


def row(i: int) -> dict[str, object]:
    return {"request_id": f"child-{i}", "api_key": "hash-child", "model_group": "g", "model": "p/m",
            "spend": 0.25, "prompt_tokens": 2, "completion_tokens": 1, "startTime": "2026-11-30T12:00:00+00:00",
            "status": 200}


def say(line: str) -> None:
    print(line, flush=True)


async def drain(outbox: SpendOutbox, url: str) -> None:
    db = await open_database(url, auto_migrate=False)
    say("draining")
    await outbox.drain_once(db)
    say("done")
    await asyncio.sleep(3600)


def main() -> None:
    directory, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    outbox = SpendOutbox(directory, batch_size=7)
    say(f"file {outbox.own.path.name}")
    for i in range(n):
        outbox.append(row(i))
        if mode == "append" and (i + 1) % 100 == 0:
            say(f"appended {i + 1}")
    say(f"appended {n}")
    if mode == "append":
        say("done")
        time.sleep(3600)
    else:
        asyncio.run(drain(outbox, sys.argv[4]))


if __name__ == "__main__":
    main()
