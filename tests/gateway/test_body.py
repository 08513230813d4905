"""Body decoding: JSON, zstd, gzip, multipart (typesafe-sdk's own encoder), and garbage."""

from __future__ import annotations

import gzip
import json
import os

import pytest
import zstandard
from typesafe_sdk._core.compression import COMPRESSORS
from typesafe_sdk._core.multipart import Part, encode_multipart

from gateway.decode.body import BodyError, decode_body

BODY = {"model": "jev", "state": "x" * 3000, "questions": {"q": {"type": "noul", "instructions": "?"}}}
RAW = json.dumps(BODY).encode()


def test_plain_json():
    assert decode_body(RAW, "application/json", None).json == BODY


@pytest.mark.parametrize("encoding, data", [
    ("zstd", COMPRESSORS["zstd"](RAW)),  # exactly what typesafe-sdk sends
    ("zstd", zstandard.ZstdCompressor().compress(RAW)),
    ("gzip", gzip.compress(RAW)),
    ("gzip, zstd", zstandard.ZstdCompressor().compress(gzip.compress(RAW))),
])
def test_compressed_bodies(encoding, data):
    decoded = decode_body(data, "application/json", encoding)
    assert decoded.json == BODY and decoded.content_encoding == encoding


def test_multipart_from_typesafe_sdk_keeps_binary_parts_exact():
    blob = os.urandom(4096) + b"\r\n--\r\n" + os.urandom(64)
    content_type, content = encode_multipart([Part("request", "application/json", RAW),
                                              Part("asset-0", "image/png", blob, "asset-0")])
    decoded = decode_body(COMPRESSORS["zstd"](content), content_type, "zstd")
    assert decoded.json == BODY and decoded.multipart
    assert decoded.parts == {"asset-0": ("image/png", blob)}


@pytest.mark.parametrize("raw, ctype, encoding, kind, status, words", [
    (b"\x28\xb5\x2f\xfdgarbage", "application/json", "zstd", "encoding", 400, "not valid zstd"),
    (b"not gzip", "application/json", "gzip", "encoding", 400, "not valid gzip"),
    (gzip.compress(RAW, mtime=0)[:-20], "application/json", "gzip", "encoding", 400, "truncated"),  # mtime=0: one test id in every process
    (RAW, "application/json", "br", "encoding", 415, "'br' is not supported"),
    (b'{"model": ', "application/json", None, "json", 400, "Invalid JSON"),
    (b"\xff\xfe{}", "application/json", None, "json", 400, "not UTF-8"),
    (b"", "application/json", None, "json", 400, "empty"),
    (b'{"state": NaN}', "application/json", None, "json", 400, "NaN is not a JSON number"),
    (b'{"state": [-Infinity]}', "application/json", None, "json", 400, "-Infinity is not a JSON number"),
    (b'{"state": {"n": 1e999}}', "application/json", None, "json", 400, "1e999 is not a finite number"),
    (b'{"state": "a \\ud800 b"}', "application/json", None, "json", 400, "unpaired surrogate"),
    (b'{"questions": {"\\udfff": 1}}', "application/json", None, "json", 400, "unpaired surrogate"),
    (b"[1, 2]", "application/json", None, "shape", 400, "must be a JSON object, not a list"),
    (b'"text"', "application/json", None, "shape", 400, "not a string"),
    (b"--b\r\n\r\n--b--", "multipart/form-data", None, "multipart", 400, "boundary"),
    (b'--b\r\nContent-Disposition: form-data; name="asset-0"\r\n\r\nxx\r\n--b--\r\n',
     "multipart/form-data; boundary=b", None, "multipart", 400, "no part named 'request'"),
])
def test_garbage_is_a_clear_error(raw, ctype, encoding, kind, status, words):
    with pytest.raises(BodyError) as err:
        decode_body(raw, ctype, encoding)
    assert (err.value.kind, err.value.status) == (kind, status) and words in err.value.message


def test_escapes_that_are_valid_unicode_and_big_finite_numbers_pass():
    raw = b'{"emoji": "\\ud83d\\ude00", "text": "\\\\ud800", "big": 1.7e308, "int": 123456789012345678901234567890}'
    assert decode_body(raw, "application/json", None).json == {
        "emoji": "\U0001f600", "text": "\\ud800", "big": 1.7e308, "int": 123456789012345678901234567890}


def test_decompression_bombs_are_refused():
    bomb = zstandard.ZstdCompressor().compress(b"{" + b" " * (2 * 1024 * 1024) + b"}")
    with pytest.raises(BodyError) as err:
        decode_body(bomb, "application/json", "zstd", max_bytes=1024 * 1024)
    assert err.value.status == 413
    with pytest.raises(BodyError):
        decode_body(gzip.compress(b" " * (2 * 1024 * 1024)), "application/json", "gzip", max_bytes=1024 * 1024)
