"""Request bodies: plain JSON, ``Content-Encoding: zstd`` / ``gzip``, or ``multipart/form-data``.

typesafe-sdk compresses bodies of 1 KB and more with zstd and sends images as multipart: a part
named ``request`` holding the JSON, then one part per asset (``asset-0``, ...). Decoding is pure
(bytes in, ``DecodedBody`` out); a body that cannot be decoded raises ``BodyError`` with a
sentence the route renders in its own wire's envelope.
"""

from __future__ import annotations

import email.parser
import email.policy
import io
import json
import math
import re
import zlib
from dataclasses import dataclass, field

import zstandard

from translators.wire_errors import json_kind_name

MAX_DECODED_BYTES = 64 * 1024 * 1024  # a decompressed body beyond this is refused (zip bombs)


class BodyError(ValueError):
    """The body cannot be read. ``kind``: encoding | json | multipart | shape."""

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
                max_bytes: int = MAX_DECODED_BYTES) -> DecodedBody:
    data = decompress(raw, content_encoding, max_bytes)
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type == "multipart/form-data":
        payload, parts = split_multipart(data, content_type or "")
        return DecodedBody(parse_json_object(payload, "the 'request' part"), parts,
                           _encoding_name(content_encoding), multipart=True)
    return DecodedBody(parse_json_object(data, "the request body"), {}, _encoding_name(content_encoding))


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


def parse_json_object(data: bytes, what: str) -> dict:
    if not data.strip():
        raise BodyError("json", f"{what[0].upper()}{what[1:]} is empty; send a JSON object.")
    try:
        value = json.loads(data.decode("utf-8-sig"), parse_constant=_reject_constant, parse_float=_finite_float)
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


def split_multipart(data: bytes, content_type: str) -> tuple[bytes, dict[str, tuple[str, bytes]]]:
    """The ``request`` part's bytes, and every other part by name: (content type, bytes)."""
    if "boundary=" not in content_type:
        raise BodyError("multipart", "multipart/form-data needs a boundary parameter in Content-Type.")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1", "replace")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + data)
    if not message.is_multipart():
        raise BodyError("multipart", "The multipart/form-data body could not be split into parts.")
    request: bytes | None = None
    parts: dict[str, tuple[str, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not name:
            raise BodyError("multipart", "Every multipart part needs a Content-Disposition name.")
        payload = part.get_payload(decode=True) or b""
        if name == "request":
            request = payload
        else:
            parts[str(name)] = (part.get_content_type(), payload)
    if request is None:
        raise BodyError("multipart", "The multipart/form-data body has no part named 'request' holding the JSON request.")
    return request, parts


def _unzstd(data: bytes, max_bytes: int) -> bytes:
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)) as reader:
            return _read_capped(reader, max_bytes, "zstd")
    except zstandard.ZstdError as exc:
        raise BodyError("encoding", f"The body says Content-Encoding: zstd but is not valid zstd data ({exc}).") from None


def _inflate(data: bytes, wbits: int, name: str, max_bytes: int) -> bytes:
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(data, max_bytes + 1)
    except zlib.error as exc:
        raise BodyError("encoding", f"The body says Content-Encoding: {name} but is not valid {name} data ({exc}).") from None
    if len(out) > max_bytes:
        raise _too_large(max_bytes)
    if not inflater.eof:
        raise BodyError("encoding", f"The {name} body is truncated.")
    return out


def _read_capped(reader, max_bytes: int, name: str) -> bytes:
    chunks, total = [], 0
    while True:
        chunk = reader.read(1 << 20)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > max_bytes:
            raise _too_large(max_bytes)
        chunks.append(chunk)


def _too_large(max_bytes: int) -> BodyError:
    return BodyError("encoding", f"The decoded body exceeds {max_bytes} bytes.", status=413)


def _encoding_name(content_encoding: str | None) -> str | None:
    value = (content_encoding or "").strip().lower()
    return value or None


