"""Oversized bodies, compression bombs and deeply nested JSON on every route family that takes a body
(both decision routes, both validate routes, the TypeSafe pass-through, the admin API): a 4xx in the
caller's envelope within a deadline, never a 500, and no memory blow-up. (test_body_limits.py and
test_json_bodies.py go deep on the decision routes.)"""

from __future__ import annotations

import time

import httpx
import pytest
import zstandard

from tests.fakes.harness import gzip_bomb
from tests.reliability.wire_checks import ADMIN, OPENAI, SYSTEMONE, problem
from tests.security.conftest import TYPESAFE_KEY
from tests.security.helpers import PeakRss, gateway_with_env

MASTER = "sk-master-bodies-0123456789abcdef"
MIB = 1024 * 1024
ROUTES = [("/v1/systemone", SYSTEMONE), ("/v1/decisions", OPENAI), ("/v1/systemone/validate", SYSTEMONE),
          ("/v1/decisions/validate", OPENAI), ("/typesafe/v1/systemone", SYSTEMONE), ("/key/generate", ADMIN),
          ("/team/new", ADMIN), ("/key/update", ADMIN), ("/config/reload", ADMIN)]


@pytest.fixture(scope="module")
def bodies_gateway(hostile_typesafe, tmp_path_factory):
    config = {"model_list": [{"model_name": "jev", "litellm_params": {
        "model": "typesafe/jev-latest", "api_key": TYPESAFE_KEY, "api_base": hostile_typesafe.url}}],
        "general_settings": {"master_key": MASTER,
                             "database_url": f"sqlite:///{tmp_path_factory.mktemp('bodies') / 'gw.db'}"}}
    env = {"TYPESAFE_API_KEY": TYPESAFE_KEY, "TYPESAFE_API_BASE": hostile_typesafe.url}
    with gateway_with_env(config, env) as gw:
        yield gw


def post(gw, path: str, content: bytes, **headers: str) -> httpx.Response:
    return httpx.post(gw.url + path, content=content, timeout=30, headers={
        "Authorization": f"Bearer {MASTER}", "Content-Type": "application/json", **headers})


def answered(response: httpx.Response, wire: str, path: str) -> None:
    assert 400 <= response.status_code < 500, (path, response.status_code, response.text[:300])
    if path.startswith("/typesafe/") and "x-typesafe-request-id" in response.headers and \
            response.headers.get("x-request-id", "").startswith("req-"):
        return  # relayed from the upstream as it answered
    why = problem(wire, response.status_code, response.headers, response.content)
    assert why is None, (path, why)


@pytest.mark.parametrize("path, wire", ROUTES, ids=[p for p, _ in ROUTES])
def test_deeply_nested_json_is_a_4xx_on_every_route(bodies_gateway, path, wire):
    for deep in (b"[" * 100_000 + b"]" * 100_000, b'{"model": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5001):
        answered(post(bodies_gateway, path, deep), wire, path)


@pytest.mark.parametrize("path, wire", ROUTES, ids=[p for p, _ in ROUTES])
def test_an_oversized_body_is_a_413_on_every_route(bodies_gateway, path, wire):
    r = post(bodies_gateway, path, b'{"state": "' + b"x" * (17 * MIB) + b'"}')
    assert r.status_code == 413, (r.status_code, r.text[:200])
    answered(r, wire, path)


@pytest.mark.parametrize("path, wire", ROUTES, ids=[p for p, _ in ROUTES])
def test_a_compression_bomb_is_refused_on_every_route_without_the_memory(bodies_gateway, path, wire):
    bombs = (("gzip", gzip_bomb(1024 * MIB)), ("zstd", zstandard.ZstdCompressor(level=3).compress(b" " * (256 * MIB))))
    for encoding, bomb in bombs:
        started = time.monotonic()
        with PeakRss() as memory:
            r = post(bodies_gateway, path, bomb, **{"Content-Encoding": encoding})
        answered(r, wire, path)
        assert time.monotonic() - started < 10 and memory.growth < 300 * MIB, (path, encoding, memory.growth)
