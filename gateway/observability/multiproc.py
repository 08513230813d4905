"""The metrics folder of ``--workers N``: prometheus-client's multiprocess mode.

``use_metrics_folder()`` (the CLI, before the workers start) points ``PROMETHEUS_MULTIPROC_DIR`` at
a fresh temporary folder, unless the operator named one (then it is used as it is: prometheus-client
wants it emptied between runs), and removes the folder it made when the gateway exits. Each worker
writes its values there (prometheus-client reads the variable when it is first imported, which in a
worker process is after the CLI set it); a scrape of any worker sums them. ``worker_exited()`` drops
a stopping worker's live gauges (in flight, outbox depth).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from gateway.observability.metrics import MULTIPROC_ENV


def use_metrics_folder() -> str:
    given = os.environ.get(MULTIPROC_ENV)
    if given:
        os.makedirs(given, exist_ok=True)
        return given
    folder = tempfile.mkdtemp(prefix="decisions-gateway-metrics-")
    os.environ[MULTIPROC_ENV] = folder
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def worker_exited(pid: int | None = None) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(os.getpid() if pid is None else pid)
