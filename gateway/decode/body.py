"""Request bodies: plain JSON, ``Content-Encoding: zstd`` / ``gzip``, or ``multipart/form-data``.

typesafe-sdk compresses bodies of 1 KB and more with zstd and sends images as multipart: a part
named ``request`` holding the JSON, then one part per asset (``asset-0``, ...). Decoding is pure
(bytes in, ``DecodedBody`` out); a body that cannot be decoded raises ``BodyError`` with a
sentence the route renders in its own wire's envelope.

Hostile bodies are refused before they cost much (the limits are ``gateway.config.limits``):
a Content-Type other than JSON or multipart (415: a web page's "simple" cross-origin request
cannot send JSON), a body over ``max_request_body_bytes`` as sent or once decompressed (413),
JSON nested deeper than ``max_json_depth`` (found by a bracket scan before parsing), a key that
appears twice in one object (the last one would silently win), more than ``max_multipart_parts``
parts (counted before splitting) or a part over ``max_multipart_part_bytes``.

Reading the body from the client is here too: ``read_body_capped`` (size cap while reading, a
deadline, ``ClientDisconnected`` when the client goes away) and ``HeavyDecodes``, the bounded pool
that decodes large, compressed and multipart bodies off the event loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import io
import json
import math
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

import zstandard
from starlette.requests import ClientDisconnect

from gateway.config.limits import DEFAULT_LIMITS_SETTINGS, LimitsSettings
from gateway.decode.multipart import MultipartError, split_multipart
from gateway.decode.repeats import Repeated, marking_repeats
from translators.json_depth import nesting_exceeds
from translators.wire_errors import json_kind_name

MAX_DECODED_BYTES = DEFAULT_LIMITS_SETTINGS.max_request_body_bytes  # a decompressed body beyond this: 413


class BodyError(ValueError):
    """The body cannot be read. ``kind``: encoding | json | multipart | shape | content_type | size | timeout."""

    def __init__(self, kind: str, message: str, status: int = 400):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status


@dataclass(frozen=True)
class DecodedBody:
    json: dict
    parts: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # asset parts: name -> (type, bytes)
    content_encoding: str | None = None  # as received, e.g. "zstd"
    multipart: bool = False


def decode_body(raw: bytes, content_type: str | None, content_encoding: str | None,
                max_bytes: int | None = None, *, limits: LimitsSettings = DEFAULT_LIMITS_SETTINGS,
                allow_multipart: bool = True) -> DecodedBody:
    """The JSON object (and asset parts) of a request body; ``BodyError`` when it cannot be used.

    ``max_bytes`` (default ``limits.max_request_body_bytes``) caps the decompressed size;
    ``allow_multipart=False`` on routes that take JSON only (``/v1/decisions``).
    """
    kind = check_content_type(content_type, allow_multipart)
    cap = limits.max_request_body_bytes if max_bytes is None else max_bytes
    data = decompress(raw, content_encoding, cap)
    if kind == "multipart":
        try:
            payload, parts = split_multipart(data, content_type or "", max_parts=limits.max_multipart_parts,
                                             max_part_bytes=limits.max_multipart_part_bytes)
        except MultipartError as exc:
            raise BodyError("multipart", exc.message, status=exc.status) from None
        return DecodedBody(parse_json_object(payload, "the 'request' part", limits.max_json_depth), parts,
                           _encoding_name(content_encoding), multipart=True)
    return DecodedBody(parse_json_object(data, "the request body", limits.max_json_depth), {},
                       _encoding_name(content_encoding))


JSON_MEDIA_TYPE = "application/json"
MULTIPART_MEDIA_TYPE = "multipart/form-data"


def check_content_type(content_type: str | None, allow_multipart: bool = True) -> str:
    """``"json"`` or ``"multipart"`` for a Content-Type the decision routes take, else ``BodyError`` 415.

    JSON is ``application/json`` or any ``application/*+json`` (in UTF-8; compressed with
    Content-Encoding zstd or gzip is fine); multipart is ``multipart/form-data`` with a boundary,
    where ``allow_multipart``. Anything else (``text/plain``, form encoding, none at all) is what a
    web page on another origin can send without a preflight, so it is refused before any work.
    """
    media, _, params = (content_type or "").partition(";")
    media = media.strip().lower()
    if media == JSON_MEDIA_TYPE or (media.startswith("application/") and media.endswith("+json")):
        charset = _param(params, "charset")
        if charset and charset.lower() not in ("utf-8", "utf8"):
            raise BodyError("content_type", f"Content-Type {media} with charset={charset} is not supported; "
                                            "send the JSON as UTF-8.", status=415)
        return "json"
    if media == MULTIPART_MEDIA_TYPE and allow_multipart:
        return "multipart"
    accepted = f"{JSON_MEDIA_TYPE}{' or ' + MULTIPART_MEDIA_TYPE if allow_multipart else ''}"
    shown = f"Content-Type '{media[:100]}'" if media else "A body without a Content-Type"
    raise BodyError("content_type", f"{shown} is not accepted here; send {accepted} "
                                    "(compressed with Content-Encoding zstd or gzip if you like).", status=415)


def _param(params: str, name: str) -> str | None:
    for item in params.split(";"):
        key, _, value = item.partition("=")
        if key.strip().lower() == name:
            return value.strip().strip('"')
    return None


def decompress(raw: bytes, content_encoding: str | None, max_bytes: int = MAX_DECODED_BYTES) -> bytes:
    """Undo each listed encoding, last applied first (``Content-Encoding: gzip, zstd``)."""
    encodings = [e.strip().lower() for e in (content_encoding or "").split(",") if e.strip()]
    data = raw
    for encoding in reversed(encodings):
        if encoding == "identity":
            continue
        if encoding == "zstd":
            data = _unzstd(data, max_bytes)
        elif encoding in ("gzip", "x-gzip"):
            data = _inflate(data, zlib.MAX_WBITS | 16, "gzip", max_bytes)
        elif encoding == "deflate":
            data = _inflate(data, zlib.MAX_WBITS, "deflate", max_bytes)
        else:
            raise BodyError("encoding", f"Content-Encoding '{encoding}' is not supported; "
                                        "send the body plain or encoded with zstd, gzip or deflate.", status=415)
    return data


def parse_json_object(data: bytes, what: str, max_depth: int = DEFAULT_LIMITS_SETTINGS.max_json_depth) -> dict:
    if not data.strip():
        raise BodyError("json", f"{what[0].upper()}{what[1:]} is empty; send a JSON object.")
    if nesting_exceeds(data, max_depth):
        raise _too_deep(what, max_depth)
    try:
        text = data.decode("utf-8-sig")
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float,
                           object_pairs_hook=_unique_keys)
    except _DuplicateKey:
        raise _repeated_key(what, text) from None
    except RecursionError:  # the scan above makes this unreachable; kept so a deep body is never a 500
        raise _too_deep(what, max_depth) from None
    except _NonStandardNumber as exc:
        raise BodyError("json", f"Invalid JSON in {what}: {exc.args[0]} is not a {exc.args[1]}; "
                                "send finite numbers only.") from None
    except UnicodeDecodeError:
        raise BodyError("json", f"{what[0].upper()}{what[1:]} is not UTF-8 text; send a JSON object.") from None
    except json.JSONDecodeError as exc:
        raise BodyError("json", f"Invalid JSON in {what}: {exc.msg} at line {exc.lineno} column {exc.colno}.") from None
    if not isinstance(value, dict):
        raise BodyError("shape", f"{what[0].upper()}{what[1:]} must be a JSON object, not {json_kind_name(value)}.")
    if _SURROGATE_ESCAPE.search(data) and _has_lone_surrogate(value):
        raise BodyError("json", f"Invalid JSON in {what}: a string holds an unpaired surrogate escape "
                                "(\\ud800-\\udfff), which is not Unicode text; send valid UTF-8.")
    return value


class _NonStandardNumber(ValueError):
    pass


def _too_deep(what: str, max_depth: int) -> BodyError:
    return BodyError("json", f"{what[0].upper()}{what[1:]} nests arrays and objects more than {max_depth} levels "
                             f"deep (the max_json_depth limit is {max_depth}); send a flatter body.")


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """``object_pairs_hook``: a key given twice would silently replace the first value."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _DuplicateKey()
    return obj


def _repeated_key(what: str, text: str) -> BodyError:
    """Name the first repeated key and where it is (a second, marking parse: the error path only)."""
    root = json.loads(text, object_pairs_hook=marking_repeats)
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(root, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, Repeated):
            where = f"in {_format_path(path)}" if path else "at the top level"
            return BodyError("json", f"{what[0].upper()}{what[1:]} gives the key {_shown(item.repeated)} more "
                                     f"than once {where}; send each key once (the last one would silently win).")
        children = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        stack.extend((child, (*path, key)) for key, child in reversed(list(children)))
    return BodyError("json", f"{what[0].upper()}{what[1:]} gives a key more than once; send each key once.")


def _format_path(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f"{'.' if out else ''}{_shown(part, quote=False)}"
    return out


def _shown(key: str, quote: bool = True) -> str:
    text = key if len(key) <= 80 else key[:80] + "..."
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return f"'{text}'" if quote else text


def _reject_constant(name: str):
    raise _NonStandardNumber(name, "JSON number")


def _finite_float(text: str) -> float:
    """A JSON number such as ``1e999`` overflows to infinity, which no upstream can be sent."""
    value = float(text)
    if not math.isfinite(value):
        raise _NonStandardNumber(text, "finite number (it overflows to infinity)")
    return value


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # only escapes can carry surrogates into a str


def _has_lone_surrogate(value) -> bool:
    """Whether any string (key or value) holds a surrogate that did not pair up (cannot be UTF-8)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _unzstd(data: bytes, max_bytes: int) -> bytes:
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)) as reader:
            return _read_capped(reader, max_bytes, "zstd")
    except zstandard.ZstdError as exc:
        raise BodyError("encoding", f"The body says Content-Encoding: zstd but is not valid zstd data "
                                    f"({exc}).") from None


def _inflate(data: bytes, wbits: int, name: str, max_bytes: int) -> bytes:
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(data, max_bytes + 1)
    except zlib.error as exc:
        raise BodyError("encoding", f"The body says Content-Encoding: {name} but is not valid {name} data "
                                    f"({exc}).") from None
    if len(out) > max_bytes:
        raise _too_large(max_bytes)
    if not inflater.eof:
        raise BodyError("encoding", f"The {name} body is truncated.")
    return out


def _read_capped(reader: Any, max_bytes: int, name: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = reader.read(1 << 20)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > max_bytes:
            raise _too_large(max_bytes)
        chunks.append(chunk)


def _too_large(max_bytes: int) -> BodyError:
    return BodyError("size", f"The decoded body exceeds {max_bytes} bytes (the max_request_body_bytes limit).",
                     status=413)


def _encoding_name(content_encoding: str | None) -> str | None:
    value = (content_encoding or "").strip().lower()
    return value or None




# --------------------------------------------------------------------------------------------
# Reading the body from the client, and decoding heavy bodies off the event loop
# --------------------------------------------------------------------------------------------

# Bodies this large, compressed or multipart are decoded in the heavy-decode pool; smaller plain
# JSON is decoded inline (it costs microseconds and must never wait behind a burst of big ones).
OFF_LOOP_BYTES = 64 * 1024


class ClientDisconnected(ClientDisconnect):
    """The client went away before its body arrived: no one to answer (log one line, record 499)."""

    status = 499


async def read_body_capped(source: Any, max_bytes: int = MAX_DECODED_BYTES, *,
                           timeout_s: float | None = DEFAULT_LIMITS_SETTINGS.request_read_timeout_s) -> bytes:
    """The request body, refused as soon as it is over ``max_bytes`` (``BodyError`` 413).

    ``source`` is a Starlette ``Request`` (its ``Content-Length`` is checked before reading, and
    the body is kept on it so a later ``await request.body()`` returns it) or an ASGI ``receive``
    callable. The whole body must arrive within ``timeout_s`` (``BodyError`` 408); a client that
    disconnects raises ``ClientDisconnected``.
    """
    headers = getattr(source, "headers", None)
    receive = getattr(source, "receive", source)
    if headers is not None:
        cached = getattr(source, "_body", None)
        if cached is not None:
            return _within(cached, max_bytes)
        declared = _content_length(headers.get("content-length"))
        if declared is not None and declared > max_bytes:
            raise _body_too_large(max_bytes, f"Content-Length {declared}")
    chunks: list[bytes] = []
    try:
        async with asyncio.timeout(timeout_s):
            total = 0
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientDisconnected()
                chunk = message.get("body", b"")
                total += len(chunk)
                if total > max_bytes:
                    raise _body_too_large(max_bytes, f"more than {max_bytes} bytes")
                if chunk:
                    chunks.append(chunk)
                if not message.get("more_body", False):
                    break
    except TimeoutError:
        raise BodyError("timeout", f"The request body did not arrive within {timeout_s:g} s "
                                   "(the request_read_timeout_s limit).", status=408) from None
    body = b"".join(chunks)
    if headers is not None:
        source._body = body  # Starlette's own cache: request.body() and request.stream() now return it
    return body


def _within(body: bytes, max_bytes: int) -> bytes:
    if len(body) > max_bytes:
        raise _body_too_large(max_bytes, f"{len(body)} bytes")
    return body


def _content_length(value: str | None) -> int | None:
    if value is None:
        return None
    text = value.strip()
    if not text.isdigit() or len(text) > 19:
        raise BodyError("size", f"Content-Length must be a number of bytes, got {text[:40]!r}.")
    return int(text)


def _body_too_large(max_bytes: int, seen: str) -> BodyError:
    return BodyError("size", f"The request body is too large ({seen}); at most {max_bytes} bytes are accepted "
                             "(the max_request_body_bytes limit).", status=413)


def needs_thread(size: int, content_type: str | None, content_encoding: str | None) -> bool:
    """Work worth the heavy-decode pool: a large body, a compressed one (its size is unknown until
    decoded) or multipart. Everything else is decoded inline."""
    return (size >= OFF_LOOP_BYTES or bool((content_encoding or "").strip())
            or "multipart/" in (content_type or "").lower())


class HeavyDecodes:
    """At most ``max_concurrent`` heavy decodes at once, in threads of their own.

    A burst of compressed or multipart bodies waits here instead of inflating all at once (each may
    reach ``max_request_body_bytes`` decoded), and its own threads keep it from taking the default
    executor's from everything else. A slot is freed when the work has finished, not when a
    cancelled caller stops waiting, so the bound holds under cancellation too.

        heavy = HeavyDecodes(settings.max_concurrent_heavy_decodes)
        decoded = await heavy.run(decode_body, raw, content_type, content_encoding)
        async with heavy: ...   # or hold a slot around work of your own
    """

    def __init__(self, max_concurrent: int = DEFAULT_LIMITS_SETTINGS.max_concurrent_heavy_decodes):
        if max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        self.max_concurrent = max_concurrent
        self._slots = asyncio.Semaphore(max_concurrent)
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self.running = 0

    async def __aenter__(self) -> HeavyDecodes:
        await self._slots.acquire()
        self.running += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._release()

    def _release(self) -> None:
        self.running -= 1
        self._slots.release()

    async def run(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """``func(*args, **kwargs)`` in the pool, once a slot is free."""
        await self.__aenter__()
        loop = asyncio.get_running_loop()
        try:
            future = self._pool().submit(contextvars.copy_context().run, functools.partial(func, *args, **kwargs))
        except BaseException:
            self._release()
            raise
        future.add_done_callback(lambda _: _call_soon(loop, self._release))
        return await asyncio.wrap_future(future)

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(self.max_concurrent,
                                                                   thread_name_prefix="heavy-decode")
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Any) -> None:
    try:
        loop.call_soon_threadsafe(callback)
    except RuntimeError:  # the loop is closed: nothing waits on the slot any more
        pass
