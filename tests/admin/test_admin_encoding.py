"""The admin routes read ``Content-Encoding`` as the decision routes do (issue 20 item 6): a zstd,
gzip or deflate body is decoded, then parsed as strictly as a plain one; an encoding the gateway does
not read is a 415, data that is not what the header says a 400, and a body past 64 KiB once decoded
a 413, each in OpenAI's error envelope.

A real gateway (master key, SQLite) over HTTP."""

from __future__ import annotations

import gzip
import json
import zlib

import httpx
import pytest
import zstandard

from gateway.admin.common import MAX_BODY_BYTES
from tests.conftest import start_gateway

MASTER = "sk-master-admin-encoding-0123"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    db = tmp_path_factory.mktemp("admin-encoding") / "gateway.db"
    running = start_gateway({
        "model_list": [{"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": "ts-x"}}],
        "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"}})
    yield running
    running.stop()


def send(gateway, path: str, data: bytes, encoding: str) -> httpx.Response:
    return httpx.post(gateway.url + path, content=data, timeout=20,
                      headers={"Authorization": f"Bearer {MASTER}", "Content-Type": "application/json",
                               "Content-Encoding": encoding})


def error_of(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    return response.json()["error"]


def deflated(data: bytes) -> bytes:
    return zlib.compress(data)


@pytest.mark.parametrize(("encoding", "encode"), [
    ("gzip", gzip.compress), ("zstd", zstandard.ZstdCompressor().compress), ("deflate", deflated),
    ("gzip, zstd", lambda data: zstandard.ZstdCompressor().compress(gzip.compress(data))),
])
def test_an_encoded_body_makes_the_key_it_describes(gateway, encoding, encode):
    alias = f"encoded-{encoding.replace(', ', '-')}"
    made = send(gateway, "/key/generate", encode(json.dumps({"key_alias": alias, "models": ["jev"]}).encode()),
                encoding)
    assert made.status_code == 200, made.text
    assert made.json()["key_alias"] == alias and made.json()["models"] == ["jev"]
    team = send(gateway, "/team/new", encode(json.dumps({"team_alias": alias}).encode()), encoding)
    assert team.status_code == 200 and team.json()["team_alias"] == alias


def test_a_decoded_body_is_parsed_as_strictly_as_a_plain_one(gateway):
    repeated = gzip.compress(b'{"key_alias": "a", "key_alias": "b"}')
    error = error_of(send(gateway, "/key/generate", repeated, "gzip"), 400)
    assert "key_alias" in error["message"]
    unknown = gzip.compress(json.dumps({"spend_limit": 1}).encode())
    assert "spend_limit" in error_of(send(gateway, "/key/generate", unknown, "gzip"), 400)["message"]


def test_an_unreadable_encoding_is_refused_in_the_admin_envelope(gateway):
    body = json.dumps({"key_alias": "never"}).encode()
    error = error_of(send(gateway, "/key/generate", body, "br"), 415)
    assert error["code"] == "unsupported_encoding" and "'br'" in error["message"]
    error = error_of(send(gateway, "/key/generate", body, "gzip"), 400)  # says gzip, is plain JSON
    assert error["code"] == "invalid_encoding" and "gzip" in error["message"]
    bomb = gzip.compress(b" " * (MAX_BODY_BYTES * 16))  # about 1 MiB of spaces in about 1 KiB
    assert len(bomb) < MAX_BODY_BYTES
    error = error_of(send(gateway, "/key/generate", bomb, "gzip"), 413)
    assert error["code"] == "request_too_large" and "once decoded" in error["message"]
    listed = httpx.get(gateway.url + "/key/list", params={"return_full_object": "true"},
                       headers={"Authorization": f"Bearer {MASTER}"}, timeout=10).json()["keys"]
    assert "never" not in {key["key_alias"] for key in listed}  # nothing was written
