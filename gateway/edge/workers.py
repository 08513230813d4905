"""``--workers N``: uvicorn's supervisor with the gateway's own handling of SIGHUP and SIGTERM.

SIGHUP to the parent: it validates the config file first (``gateway.config.loader.load_config``); an
unusable file is logged, naming the entry, and every worker keeps the running config; a usable
one is forwarded as SIGHUP to every worker, each of which reloads in place without dropping a
request (gateway/reload.py). uvicorn's own SIGHUP would replace every worker by a new process
instead: warm connections, caches and loaded ``local/`` models lost, and a broken file found out
only by a worker failing to start. Nothing a SIGHUP meets ends the supervisor's loop: a failure the
loader did not foresee is logged like an unusable file, and SIGTERM, SIGINT and the next SIGHUP keep
working.

SIGTERM (or SIGINT) to the parent: it closes its copy of the listening socket at once, so that a
new connection is refused once the workers have closed theirs, rather than left in the queue of a
socket nobody accepts on; then every worker shuts down gracefully (in-flight requests finish within
``--graceful-timeout``, the spend outbox drains, pools close) and the parent waits for them.

State is not in the workers: each has its own memory, and what they must agree on (cooldowns and
routing state, limits, budgets, the key cache's invalidations, the deployments' last outcomes)
lives in Redis, the keys and the spend in the database (docs/deploy.md).
"""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

import uvicorn
from uvicorn.supervisors.multiprocess import Multiprocess

from gateway.config.errors import ConfigError
from gateway.config.generations import use_generations_folder
from gateway.config.loader import load_config
from gateway.reload import SUPERVISOR_ENV

log = logging.getLogger("gateway.reload")


class GatewaySupervisor(Multiprocess):
    def __init__(self, config: uvicorn.Config, sockets: list, config_path: str | None) -> None:
        super().__init__(config, sockets)
        self.config_path = config_path

    def handle_hup(self) -> None:
        try:
            self._reload_workers()
        except Exception:  # a bug must not end the loop that handles SIGTERM: log it, keep supervising
            log.exception("config reload on SIGHUP failed; every worker keeps the running config")

    def _reload_workers(self) -> None:
        if self.config_path is None:
            log.error("SIGHUP: there is no config file to reload: the gateway was started without --config")
            return
        try:
            load_config(Path(self.config_path))
        except ConfigError as exc:
            log.error("config reload on SIGHUP failed; every worker keeps the running config: %s", exc)
            return
        log.info("SIGHUP: %s is valid; every worker reloads it", self.config_path)
        for process in self.processes:
            if process.pid is not None and process.process.is_alive():
                os.kill(process.pid, signal.SIGHUP)

    def handle_term(self) -> None:
        self._stop_listening()
        super().handle_term()

    def handle_int(self) -> None:
        self._stop_listening()
        super().handle_int()

    def _stop_listening(self) -> None:
        for sock in self.sockets:
            sock.close()


def run_workers(config: uvicorn.Config, config_path: str | None) -> None:
    """Bind the socket, start ``config.workers`` workers, supervise them until SIGTERM or SIGINT."""
    os.environ[SUPERVISOR_ENV] = str(os.getpid())  # POST /config/reload in a worker signals this process
    use_generations_folder()  # ... and waits there until every worker has reloaded
    sock = config.bind_socket()
    GatewaySupervisor(config, [sock], config_path).run()
