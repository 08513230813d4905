"""The real SmolLM2 default, loaded once per test session, and the backend served over real HTTP.

``service`` is the same instance ``backend.inprocess`` serves for ``local/smollm2``, so the in-process
path and these tests share one model. ``backend_url`` is the standalone app (uvicorn in a thread).
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING

import httpx
import pytest
import uvicorn

if TYPE_CHECKING:
    from backend.service import DecisionService

# backend's model modules (torch, transformers: ~4 s of CPU) are imported by the fixtures that load the
# model, not when a worker collects the suite: a worker that runs no backend test never imports them.

# The invariants are checked at 1e-5, which holds in fp32 (bf16 is not batch-invariant): CPU fp32 unless the
# environment asks for something else (e.g. DECISIONS_GATEWAY_DEVICE=cuda DECISIONS_GATEWAY_DTYPE=float32).
os.environ.setdefault("DECISIONS_GATEWAY_DEVICE", "cpu")
os.environ.setdefault("DECISIONS_GATEWAY_DTYPE", "float32")

TICKET = "I was charged twice for my subscription this month, please refund one of the payments."


@pytest.fixture(scope="session")
def service() -> DecisionService:
    from backend import inprocess

    return inprocess.get_service("default")


@pytest.fixture(scope="session")
def decider(service):
    return service.decider


@pytest.fixture(scope="session")
def tokenizer(service):
    return service.loaded.tokenizer


@pytest.fixture(scope="session")
def backend_url(service):
    from backend.server import create_app

    server = uvicorn.Server(uvicorn.Config(create_app(service), host="127.0.0.1", port=0, log_level="warning",
                                           access_log=False))
    thread = threading.Thread(target=server.run, name="backend-under-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the backend server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
async def client(service):
    """The backend app over httpx's ASGI transport (no socket)."""
    from backend.server import create_app

    transport = httpx.ASGITransport(app=create_app(service))
    async with httpx.AsyncClient(transport=transport, base_url="http://backend", timeout=120) as c:
        yield c


def choice_question(qid: str = "team", **extra) -> dict:
    return {"id": qid, "type": "choice", "question": "Which team should handle this ticket?",
            "options": [{"name": "billing", "description": "invoices, charges, refunds, payment methods"},
                        {"name": "technical", "description": "bugs, errors, outages, login problems"},
                        {"name": "sales"}], **extra}


def yes_no_question(qid: str = "refund", **extra) -> dict:
    return {"id": qid, "type": "yes_no", "question": "The customer asks for a refund.", **extra}


def score_question(qid: str = "urgency", **extra) -> dict:
    return {"id": qid, "type": "score", "question": "How urgent is this ticket?",
            "levels": ["no rush", "this week", "today", "immediately"], **extra}
