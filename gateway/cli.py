"""``decisions-gateway``: run the proxy, or ``decisions-gateway backend ...`` for the bundled model server.

    decisions-gateway --config config.yaml [--host 0.0.0.0] [--port 4000] [--workers N] [--graceful-timeout S]

SIGTERM and SIGINT (Ctrl-C: status 130, no traceback) stop it gracefully; SIGHUP reloads the config
file (gateway/reload.py, gateway/edge/workers.py).

Without ``--config`` the embedded default is served: model ``smollm2`` on the bundled backend.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from gateway import __version__
from gateway.config.limits import DEFAULT_LIMITS_SETTINGS, LimitsSettings

# Only argparse at import (and the limits' dataclass): ``--help`` and ``--version`` need nothing else, and the
# subcommands (backend, migrate, keys, teams, spend) import what they need themselves
# (tests/gateway/test_cli_imports.py).
if TYPE_CHECKING:
    from gateway.config.loader import GatewayConfig

DEFAULT_HOST = "0.0.0.0"
DEFAULT_PORT = 4000
DEFAULT_GRACEFUL_TIMEOUT_S = 30.0  # Kubernetes' default terminationGracePeriodSeconds
MAX_HEADER_BYTES = 64 * 1024  # the request line and headers of one request (h11; httptools caps at 80 KiB)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="decisions-gateway",
        description="A multi-provider gateway for decision models: serves OpenAI Decisions (/v1/decisions) and "
                    "TypeSafe System One (/v1/systemone) over every configured provider, translated both ways.",
        epilog="Subcommand: 'decisions-gateway backend --help' runs the bundled decision model server.",
    )
    parser.add_argument("--config", "-c", metavar="PATH",
                        help="LiteLLM-style YAML config (default: the embedded local/smollm2 model)")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})")
    parser.add_argument("--port", "-p", type=int, default=DEFAULT_PORT,
                        help=f"port to bind, 0 for any free port (default {DEFAULT_PORT})")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--graceful-timeout", type=float, default=DEFAULT_GRACEFUL_TIMEOUT_S, metavar="SECONDS",
                        help="on SIGTERM, how long in-flight requests may take to finish before they are "
                             f"cancelled (default {DEFAULT_GRACEFUL_TIMEOUT_S:g}); then the spend outbox drains "
                             "and the pools close")
    parser.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                        help="log level (default info)")
    parser.add_argument("--log-format", default="text", choices=["text", "json"],
                        help="text lines on stderr, or one JSON object a line on stdout (default text); "
                             "keys are redacted in both")
    parser.add_argument("--version", action="version", version=f"decisions-gateway {__version__}")
    return parser


INTERRUPTED = 130  # the shell's status for a command ended by Ctrl-C (128 + SIGINT)


def main(argv: list[str] | None = None) -> int:
    """Ctrl-C (SIGINT) at any point, starting, serving or in a subcommand, ends the command with status
    130 and no traceback: a server stops gracefully first (uvicorn's shutdown, then the outbox drain)
    and re-raises the signal as ``KeyboardInterrupt``, which is not an error to show, and with
    ``--log-format json`` every line on stdout stays a JSON object."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return INTERRUPTED


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "backend":
        return run_backend(argv[1:])
    if argv and argv[0] == "migrate":
        from gateway.db.cli import migrate_main

        return migrate_main(argv[1:])
    if argv and argv[0] in ("outcomes", "calibration", "decision-log"):
        from gateway.calibration import cli as calibration_cli

        return calibration_cli.main(argv)
    if argv and argv[0] in ("keys", "teams", "spend"):
        from gateway.admin import cli as admin_cli

        commands = {"keys": admin_cli.keys_main, "teams": admin_cli.teams_main, "spend": admin_cli.spend_main}
        return commands[argv[0]](argv[1:])
    args = build_parser().parse_args(argv)
    from gateway.config.errors import ConfigError
    from gateway.config.loader import load_config
    from gateway.observability import logs

    logs.configure(args.log_format, args.log_level)
    if args.workers < 1:
        say("decisions-gateway: --workers must be at least 1", error=True)
        return 2
    if not args.graceful_timeout >= 0:
        say("decisions-gateway: --graceful-timeout must be a number of seconds, 0 or more", error=True)
        return 2
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        if len(exc.problems) > 1:
            say(f"decisions-gateway: {len(exc.problems)} config errors in {exc.source or args.config}; "
                "nothing was started:", error=True)
        for problem in exc.problems:  # one line each, every one of them
            say(f"decisions-gateway: config error: {problem}", error=True)
        return 2
    for problem in config.unconfigured.values():  # general_settings.allow_missing_keys: true
        say(f"decisions-gateway: warning: {problem}; the deployment answers 503 until it is set", error=True)
    if args.workers > 1:
        return serve_workers(args, config)
    return serve(args, config)


def run_backend(argv: list[str]) -> int:
    try:
        from backend import cli as backend_cli
    except ImportError as exc:
        print(f"decisions-gateway: the bundled backend is not available ({exc}); "
              "install it with pip install 'decisions-gateway[backend]'", file=sys.stderr)
        return 2
    return int(backend_cli.main(argv) or 0)


def access_line(config: GatewayConfig) -> str:
    """Who may call: every route needs a key when a master key is set; otherwise every route is open."""
    from gateway.auth.keys import master_key_of

    if master_key_of(config.general_settings, os.environ):
        return "decisions-gateway: a master key is set: every route needs a key"
    return ("decisions-gateway: no master key (general_settings.master_key or DECISIONS_GATEWAY_MASTER_KEY): "
            "every route is open")


def loaded_line(config: GatewayConfig) -> str:
    from gateway.config.registry import ModelRegistry

    registry = ModelRegistry.from_config(config)
    models, deployments = len(registry.names), len(registry.deployments)
    return (f"decisions-gateway {__version__}: loaded {models} model{'s' if models != 1 else ''} "
            f"({deployments} deployment{'s' if deployments != 1 else ''}) from {config.source}: "
            f"{registry.listing}")


def serve(args: argparse.Namespace, config: GatewayConfig) -> int:
    import uvicorn

    from gateway.edge.app import create_app

    class AnnouncingServer(uvicorn.Server):
        interrupted = False

        def handle_exit(self, sig: int, frame: Any) -> None:
            # Ctrl-C: exit 130 however SIGINT was disposed at start. uvicorn re-raises the signal after its
            # graceful shutdown, which ends in KeyboardInterrupt only where SIGINT had Python's handler; a
            # process started with SIGINT ignored (a background job of a shell) then exited 0.
            self.interrupted = self.interrupted or sig == signal.SIGINT
            super().handle_exit(sig, frame)

        async def startup(self, sockets=None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                where = f"http://{_display_host(args.host)}:{_bound_port(self, args.port)}"
                say(f"decisions-gateway listening on {where}")

    say(loaded_line(config))
    say(access_line(config))
    from gateway.reload import ignore_sighup_until_started

    ignore_sighup_until_started()
    server = AnnouncingServer(uvicorn_config(create_app(config), config.limits, host=args.host, port=args.port,
                                             log_level=args.log_level,
                                             timeout_graceful_shutdown=args.graceful_timeout))
    server.run()
    if server.interrupted:
        return INTERRUPTED
    return 0 if server.started else 1


def serve_workers(args: argparse.Namespace, config: GatewayConfig) -> int:
    import uvicorn

    from gateway.edge.app import CONFIG_ENV

    if args.config:
        os.environ[CONFIG_ENV] = os.path.abspath(args.config)
    say(loaded_line(config))
    say(access_line(config))
    say(f"decisions-gateway listening on http://{_display_host(args.host)}:{args.port} with {args.workers} workers")
    from gateway.edge.http_protocol import HEADER_TIMEOUT_ENV

    limits = config.limits or DEFAULT_LIMITS_SETTINGS
    os.environ[HEADER_TIMEOUT_ENV] = str(limits.request_header_timeout_s)  # read by each worker's protocol
    from gateway.observability.multiproc import use_metrics_folder

    folder = use_metrics_folder()  # every worker's metrics in one folder (removed at exit), summed by a scrape
    say(f"decisions-gateway: the metrics of the {args.workers} workers are kept in {folder}")
    from gateway.edge.workers import run_workers

    protocol = "gateway.edge.http_protocol:HeaderDeadlineProtocol"
    run_workers(uvicorn.Config("gateway.edge.app:create_app_from_env", factory=True, host=args.host, port=args.port,
                               workers=args.workers, log_level=args.log_level, access_log=False, lifespan="on",
                               timeout_graceful_shutdown=args.graceful_timeout,
                               **uvicorn_settings(limits, protocol=protocol)),
                os.environ.get(CONFIG_ENV))
    return 0


def uvicorn_settings(limits: LimitsSettings | None, protocol: object = None) -> dict:
    """uvicorn's connection limits from the gateway's settings (general_settings; README "Limits and
    hardening settings"): the header deadline protocol, the keep-alive timeout, a cap on one
    request's headers and on concurrent connections (503 beyond it)."""
    from gateway.edge.http_protocol import HeaderDeadlineProtocol

    limits = limits or DEFAULT_LIMITS_SETTINGS
    return {
        "http": protocol or HeaderDeadlineProtocol,
        "timeout_keep_alive": limits.keep_alive_timeout_s,
        "limit_concurrency": limits.max_concurrent_connections,
        "h11_max_incomplete_event_size": MAX_HEADER_BYTES,
        # X-Forwarded-For / X-Forwarded-Proto are the caller's to forge: the gateway trusts no proxy
        # header (and skips the per-request middleware that would read them); no Server banner.
        "proxy_headers": False,
        "server_header": False,
        # uvicorn's lines go through the gateway's log handler (--log-format; gateway/observability/logs.py)
        "log_config": None,
    }


def uvicorn_config(app: Any, limits: LimitsSettings | None, **options: Any):
    """The ``uvicorn.Config`` the gateway serves ``app`` with (``options``: host, port, log_level...)."""
    import uvicorn

    limits = limits or DEFAULT_LIMITS_SETTINGS
    config = uvicorn.Config(app, access_log=False, lifespan="on", **{**uvicorn_settings(limits), **options})
    config.request_header_timeout_s = limits.request_header_timeout_s  # type: ignore[attr-defined]  # read by the header deadline protocol
    return config


def say(text: str, *, error: bool = False) -> None:
    """A start-up line, in the chosen log format."""
    from gateway.observability.logs import announce

    announce(text, error=error)


def _bound_port(server, requested: int) -> int:
    for srv in getattr(server, "servers", []) or []:
        for sock in getattr(srv, "sockets", []) or []:
            return sock.getsockname()[1]
    return requested


def _display_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
