"""Big, compressed and multipart bodies are decoded and validated off the event loop; small plain
ones stay on it (a thread hop would only add latency)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import zstandard

from gateway import pipeline
from tests.gateway.systemone_checks import check_systemone_response

QUESTIONS = {"billing": {"type": "noul", "instructions": "Is this about billing?"},
             "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset"}}}


def on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@pytest.fixture
def where_work_ran(monkeypatch):
    """Wraps the real decode and parse steps to note whether each ran on the event loop thread."""
    seen: dict[str, bool] = {}
    real_decode, real_parse = pipeline.decode_request_body, pipeline.parse_body

    def decode(*args):
        seen["decode"] = on_event_loop()
        return real_decode(*args)

    def parse(*args):
        seen["parse"] = on_event_loop()
        return real_parse(*args)

    monkeypatch.setattr(pipeline, "decode_request_body", decode)
    monkeypatch.setattr(pipeline, "parse_body", parse)
    return seen


@pytest.mark.parametrize("state, encoding, on_loop", [
    ("I was charged twice.", None, True),
    ("I was charged twice. " * 4000, None, False),
    ("I was charged twice.", "zstd", False),
])
def test_heavy_bodies_are_handled_in_a_worker_thread(gateway, where_work_ran, state, encoding, on_loop):
    body = {"model": "jev", "state": state, "questions": QUESTIONS}
    raw = json.dumps(body).encode()
    headers = {"content-type": "application/json"}
    if encoding:
        raw, headers["content-encoding"] = zstandard.ZstdCompressor().compress(raw), encoding
    resp = httpx.post(f"{gateway.url}/v1/systemone", content=raw, headers=headers, timeout=30)
    assert resp.status_code == 200, resp.text
    check_systemone_response(body, resp.json())
    assert where_work_ran == {"decode": on_loop, "parse": on_loop}


def test_an_invalid_heavy_body_still_gets_its_422(gateway, where_work_ran):
    body = {"model": "jev", "state": "x" * (pipeline.OFF_LOOP_BYTES + 1), "questions": {"q": {"type": "noul"}}}
    resp = httpx.post(f"{gateway.url}/v1/systemone", json=body, timeout=30)
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["body", "questions", "q", "noul"]
    assert where_work_ran == {"decode": False, "parse": False}
