"""Which config each worker of ``--workers N`` runs: one small file per worker in a folder they share.

The supervisor makes the folder (``use_generations_folder``, removed at exit) and names it in
``DECISIONS_GATEWAY_GENERATIONS_DIR`` for its workers. Each worker's reloader ``publish``es its
``Generation`` at start and after every reload attempt: its config generation, the digest of the
file it runs (sha256 of its bytes), how many reloads it attempted and the last one's error. ``running()``
reads those of the workers still alive, so that ``POST /config/reload`` answers success only once every
worker has reloaded to the same file (gateway/reload.py). Without the variable (one process) nothing
is written and ``running()`` is empty.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

GENERATIONS_ENV = "DECISIONS_GATEWAY_GENERATIONS_DIR"


@dataclass(frozen=True)
class Generation:
    pid: int
    generation: int
    digest: str  # of the config file's bytes ("" for a config not read from a file)
    attempts: int = 0  # reloads attempted since start, failed ones included
    error: str | None = None  # the last attempt's, when it failed


def use_generations_folder() -> Path:
    """The supervisor's: make the folder and name it for the workers it starts."""
    folder = tempfile.mkdtemp(prefix="decisions-gateway-generations-")
    os.environ[GENERATIONS_ENV] = folder
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return Path(folder)


def _folder() -> Path | None:
    given = os.environ.get(GENERATIONS_ENV)
    return Path(given) if given else None


def shared() -> bool:
    """Whether this process is one of several workers publishing their generations."""
    return _folder() is not None


def publish(status: Generation) -> None:
    """Write this worker's status (atomically: a reader never sees half a file)."""
    folder = _folder()
    if folder is None:
        return
    path = folder / f"{status.pid}.json"
    partial = folder / f".{status.pid}.json.partial"
    partial.write_text(json.dumps(asdict(status)), encoding="utf-8")
    os.replace(partial, path)


def running() -> dict[int, Generation]:
    """pid -> status of every worker that published one and is still alive."""
    folder = _folder()
    out: dict[int, Generation] = {}
    if folder is None:
        return out
    for path in folder.glob("*.json"):
        try:
            status = Generation(**json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):  # removed meanwhile, or not ours
            continue
        if _alive(status.pid):
            out[status.pid] = status
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's (a reused pid): not a worker of ours
        return False
    return True
