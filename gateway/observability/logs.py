"""Logs: text or one JSON object a line, keys redacted, written off the event loop.

``configure(fmt, level)`` (the CLI's ``--log-format text|json`` and ``--log-level``) puts one
handler on the root logger, so the gateway's lines, uvicorn's and the libraries' come out alike:
JSON on stdout, text on stderr. The handler only queues the record; a writer thread formats the
records and writes them, many at a time, so a slow terminal or a full pipe never stalls a request.
When the output cannot keep up, records beyond ``QUEUE_SIZE`` are dropped and counted, never held
without bound.

Every line passes the ``Redactor`` before it is written, message and traceback alike: the secrets
the gateway knows (master key, salt, provider keys, pass-through keys; ``protect(values)`` adds
them), anything shaped like a key (``sk-...``), ``Bearer``/``Basic`` credentials, ``api_key=...``
style assignments and the password of a URL.

The record step writes one line per request (``request_line``) on the ``gateway.request`` logger.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import re
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any

import orjson

FORMATS = ("text", "json")
FORMAT_ENV = "DECISIONS_GATEWAY_LOG_FORMAT"  # for worker processes (--workers N)
LEVEL_ENV = "DECISIONS_GATEWAY_LOG_LEVEL"
REDACTED = "[redacted]"
QUEUE_SIZE = 10_000  # records waiting for the writer thread; beyond it they are dropped and counted
BATCH = 512  # records written at once
MIN_SECRET_CHARS = 8  # shorter literal secrets are not searched for (they would blank ordinary words)
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")

# No pattern takes a quote or a backslash, so redacting a JSON line keeps it JSON.
_PATTERNS = (
    (re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{4,}"), "sk-" + REDACTED),
    (re.compile(r"\b([Bb]earer|BEARER|Basic)\s+[A-Za-z0-9._~+/=\-]+"), r"\1 " + REDACTED),
    (re.compile(r"(?i)((?:api[_-]?key|x-api-key|authorization|master[_-]?key|salt[_-]?key|password|secret|token)"
                r"[\"']?\s*[:=]\s*[\"']?)(?!\[redacted\])(?=[^\s\"'\\,;&}\]]*[0-9])[^\s\"'\\,;&}\]]{6,}"),
     r"\1" + REDACTED),  # a value with a digit: "api_key: environment variable ..." is a message, not a key
    (re.compile(r"(://[^/\s:@\"\\]+:)[^@\s/\"\\]+@"), r"\1" + REDACTED + "@"),
)
# Cheap tests first (substring search runs at C speed; the patterns above cost ~30 us a line).
_TRIGGERS = ("sk-", "bearer", "basic", "://", "key", "authorization", "password", "secret", "token")


class Redactor:
    def __init__(self) -> None:
        self.secrets: tuple[str, ...] = ()

    def protect(self, values: Iterable[Any]) -> None:
        """Also blank these exact values (each at least ``MIN_SECRET_CHARS`` long), as written and
        as JSON escapes them."""
        found = set(self.secrets)
        for value in values:
            text = str(value) if value is not None else ""
            if len(text) >= MIN_SECRET_CHARS:
                found.update({text, orjson.dumps(text).decode()[1:-1]})
        self.secrets = tuple(sorted(found, key=len, reverse=True))

    def suspicious(self, text: str) -> bool:
        low = text.lower()
        return any(t in low for t in _TRIGGERS) or any(s in text for s in self.secrets)

    def __call__(self, text: str) -> str:
        if not self.suspicious(text):
            return text
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        for pattern, replacement in _PATTERNS:
            text = pattern.sub(replacement, text)
        return text


REDACT = Redactor()


def protect(values: Iterable[Any]) -> None:
    REDACT.protect(values)


_stamps: tuple[int, str] = (0, "")


def _stamp(created: float) -> str:
    global _stamps
    seconds = int(created)
    if _stamps[0] != seconds:
        _stamps = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)))
    return f"{_stamps[1]}.{int((created - seconds) * 1000):03d}Z"


def _traceback(formatter: logging.Formatter, record: Any) -> str | None:
    if record.exc_info:
        return formatter.formatException(record.exc_info)
    return record.exc_text or None


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", ...fields, "exception"}``; the string values redacted."""

    def format(self, record: Any) -> str:
        out: dict[str, Any] = {"time": _stamp(record.created), "level": record.levelname.lower(),
                               "logger": record.name, "message": record.getMessage()}
        fields = getattr(record, "fields", None)
        if fields:
            out.update(fields)
        trace = _traceback(self, record)
        if trace:
            out["exception"] = trace
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        texts = [value for value in out.values() if isinstance(value, str)]
        if REDACT.suspicious("\x00".join(texts)):
            out = {name: REDACT(value) if isinstance(value, str) else value for name, value in out.items()}
        return orjson.dumps(out, default=str).decode()


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message k=v ...`` and the traceback; message, values and traceback redacted."""

    def format(self, record: Any) -> str:
        parts = [record.getMessage()]
        fields = getattr(record, "fields", None)
        if fields:
            parts.extend(f"{name}={value}" for name, value in fields.items() if value is not None)
        values = [parts[0], *(str(value) for value in fields.values())] if fields else parts
        text = " ".join(parts)
        if REDACT.suspicious("\x00".join(values)):  # the values: the field names hold no secret
            text = " ".join(REDACT(part) for part in parts)
        line = f"{_stamp(record.created)} {record.levelname} {record.name}: {text}"
        trace = _traceback(self, record)
        if trace:
            line += "\n" + REDACT(trace)
        if record.stack_info:
            line += "\n" + REDACT(self.formatStack(record.stack_info))
        return line


class QueuedHandler(logging.Handler):
    """The root logger's handler: puts the record, as it is, on the writer's queue."""

    def __init__(self, writer: Writer):
        super().__init__()
        self.writer = writer

    def handle(self, record: logging.LogRecord) -> bool:  # no lock: the queue is thread-safe
        self.writer.put(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        self.writer.put(record)


class Writer:
    """The thread that formats queued records and writes them, a batch at a time."""

    def __init__(self, formatter: logging.Formatter, stream: Any):
        self.formatter = formatter
        self.stream = stream
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.dropped = 0
        self.thread = threading.Thread(target=self._run, name="gateway-log-writer", daemon=True)
        self.thread.start()

    def put(self, record: Any) -> None:
        if self.queue.qsize() >= QUEUE_SIZE:
            self.dropped += 1
            return
        self.queue.put(record)

    def _run(self) -> None:
        while True:
            batch = [self.queue.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            stop = batch[-1] is None
            flushed = [item for item in batch if isinstance(item, threading.Event)]
            lines = [self._format(record) for record in batch
                     if record is not None and not isinstance(record, threading.Event)]
            if self.dropped:
                dropped, self.dropped = self.dropped, 0
                lines.append(self._format(logging.LogRecord(
                    "gateway.logs", logging.WARNING, __file__, 0,
                    "%d log lines were dropped: the log output could not keep up", (dropped,), None)))
            if lines:
                try:
                    self.stream.write("\n".join(lines) + "\n")
                    self.stream.flush()
                except (OSError, ValueError):  # a closed or broken output: the lines are lost, not the gateway
                    pass
            for event in flushed:
                event.set()
            if stop:
                return

    def _format(self, record: Any) -> str:
        try:
            return self.formatter.format(record)
        except Exception as exc:  # noqa: BLE001 - one unformattable record must not stop the writer
            return f"(a log record of {getattr(record, 'name', '?')} could not be formatted: {type(exc).__name__})"

    def flush(self, timeout: float) -> bool:
        """Wait (up to ``timeout``) until what was queued before has been written."""
        done = threading.Event()
        self.queue.put(done)
        return done.wait(timeout)

    def stop(self) -> None:
        """Write what is queued, then end the thread."""
        self.queue.put(None)
        self.thread.join(timeout=5)


_installed: tuple[QueuedHandler, Writer] | None = None
_before: tuple[int, dict[str, str | None]] = (logging.WARNING, {})  # the root level and env before configure


def configure(fmt: str = "text", level: str = "info", stream: Any = None) -> None:
    """The queued handler on the root logger (replacing one installed before); uvicorn's loggers
    propagate to it. The choice is kept in the environment for worker processes."""
    global _installed, _before
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}")
    unconfigure()
    _before = (logging.getLogger().level, {name: os.environ.get(name) for name in (FORMAT_ENV, LEVEL_ENV)})
    writer = Writer(JsonFormatter() if fmt == "json" else TextFormatter(),
                    stream or (sys.stdout if fmt == "json" else sys.stderr))
    handler = QueuedHandler(writer)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    _installed = (handler, writer)
    os.environ[FORMAT_ENV], os.environ[LEVEL_ENV] = fmt, level


def unconfigure() -> None:
    """Write what is queued and remove the handler ``configure`` installed (at exit too)."""
    global _installed
    if _installed is not None:
        handler, writer = _installed
        _installed = None
        root = logging.getLogger()
        root.removeHandler(handler)
        writer.stop()
        level, environ = _before
        root.setLevel(level)
        for name, value in environ.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def flush(timeout: float = 2.0) -> None:
    """Write what is queued now (at shutdown: a process that dies of the signal it was stopped
    with runs no exit handler)."""
    if _installed is not None:
        _installed[1].flush(timeout)


def configure_from_env() -> None:
    """In a worker process: the format and level the CLI chose (nothing when it chose none)."""
    fmt = os.environ.get(FORMAT_ENV)
    if fmt in FORMATS and _installed is None:
        configure(fmt, os.environ.get(LEVEL_ENV) or "info")


def json_mode() -> bool:
    return _installed is not None and isinstance(_installed[1].formatter, JsonFormatter)


atexit.register(unconfigure)


# ---- the request line ------------------------------------------------------------------------------

REQUEST_LOG = logging.getLogger("gateway.request")
_LEVEL_NAMES = {logging.INFO: "INFO", logging.WARNING: "WARNING"}


class RequestLine:
    """A request's record, lighter than a ``LogRecord`` (the formatters read only these)."""

    __slots__ = ("levelno", "levelname", "created", "fields")
    name = REQUEST_LOG.name
    exc_info = exc_text = stack_info = None

    def __init__(self, level: int, fields: dict[str, Any]):
        self.levelno, self.levelname = level, _LEVEL_NAMES.get(level) or logging.getLevelName(level)
        self.created = time.time()
        self.fields = fields

    def getMessage(self) -> str:  # noqa: N802 - LogRecord's name
        return "request"


def request_line(fields: dict[str, Any], level: int = logging.INFO) -> None:
    """One line for a finished request. With the gateway's handler installed it goes straight to the
    writer's queue (no ``LogRecord``, no caller lookup); otherwise through ``logging`` as usual."""
    installed = _installed
    if installed is not None and REQUEST_LOG.propagate and not REQUEST_LOG.handlers:
        installed[1].put(RequestLine(level, fields))
        return
    REQUEST_LOG.log(level, "request", extra={"fields": fields})


START_LOG = logging.getLogger("gateway.start")


def announce(text: str, *, error: bool = False) -> None:
    """A start-up line: printed as before in text mode (stdout, an error on stderr), a JSON line of
    the ``gateway.start`` logger in JSON mode."""
    if json_mode():
        START_LOG.log(logging.ERROR if error else logging.INFO, text)
    else:
        # One write of the whole line: under PYTHONUNBUFFERED, print() writes the text and its newline
        # separately, and a log line from the writer thread (on stderr, often the same pipe) lands between.
        stream = sys.stderr if error else sys.stdout
        stream.write(REDACT(text) + "\n")
        stream.flush()
