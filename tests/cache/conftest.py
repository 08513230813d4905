"""The answer cache under test: a gateway with ``litellm_settings.cache: true`` in front of fake
upstreams (real HTTP both ways), and helpers for the real clients.

Every test asks about its own input (``fresh_state()``), so the session's gateways can be shared:
what one test cached is never another's hit. What a fake received since a point is
``fake.requests[before:]``.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from typesafe_sdk import TypeSafeClient

from tests.fakes.typesafe import FakeTypeSafe
from tests.gateway import conftest as gateway_fixtures
from tests.gateway.conftest import CLIENT_KEY, OPENAI_KEY, TYPESAFE_KEY
from tests.router_settings import NO_RETRIES

JEV_PRICE = 4.2e-8  # typesafe/jev-latest, USD per input token (gateway/spend/cost.py)

S1_QUESTIONS = {
    "refund": {"type": "noul", "instructions": "Is the customer asking for a refund?"},
    "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset"}},
    "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["can wait", "this week", "today"]},
}
# The same questions on the OpenAI wire (IR-equal to the System One ones).
OA_REFUND = {"type": "predicate", "name": "refund", "instructions": "Is the customer asking for a refund?"}
OA_TONE = {"type": "choice", "name": "tone", "instructions": "Tone?",
           "choices": [{"value": "calm"}, {"value": "angry", "description": "upset"}]}
OA_URGENCY = {"type": "score", "name": "urgency", "instructions": "How urgent?",
              "levels": [{"label": "can wait"}, {"label": "this week"}, {"label": "today"}]}
OA_SPAM = {"type": "predicate", "name": "spam", "instructions": "Is this message spam?"}


class MovingAlias(FakeTypeSafe):
    """TypeSafe whose ``jev-latest`` is answered by ``dated`` (a test moves the alias)."""

    dated = "jev-1.13-20260917"

    def answering_model(self, model: str | None) -> str:
        return self.dated


def fresh_state(label: str = "") -> str:
    return f"Ticket {uuid.uuid4().hex} {label}: I was charged twice for my order and want a refund."


def jev(name: str, fake: FakeTypeSafe, **params: Any) -> dict:
    return {"model_name": name, "litellm_params": {"model": "typesafe/jev-latest", "api_key": TYPESAFE_KEY,
                                                    "api_base": fake.url, "timeout": 10, **params}}


fake_typesafe = gateway_fixtures.fake_typesafe  # the same fakes as tests/gateway's, started for this folder
fake_openai = gateway_fixtures.fake_openai


@pytest.fixture(scope="session")
def fake_alias():
    with MovingAlias(api_key=TYPESAFE_KEY) as fake:
        yield fake


@pytest.fixture(scope="session")
def fake_broken():
    """A TypeSafe that a test makes fail (the fallback test)."""
    with FakeTypeSafe(api_key=TYPESAFE_KEY) as fake:
        yield fake


def cache_config(fake_typesafe, fake_openai, fake_alias, fake_broken) -> dict:
    return {
        "model_list": [
            jev("jev", fake_typesafe),
            {"model_name": "luna", "litellm_params": {"model": "openai/gpt-6-luna", "api_key": OPENAI_KEY,
                                                       "api_base": f"{fake_openai.url}/v1", "timeout": 10}},
            jev("jev-cold", fake_typesafe, temperature=0),
            jev("jev-cold-too", fake_typesafe, temperature=0, rpm=1000, timeout=30),  # same answers as jev-cold
            jev("jev-warm", fake_typesafe, temperature=0.7),
            jev("jev-other-key", fake_typesafe, api_key="ts-another-key-of-the-same-account"),
            jev("jev-split", fake_typesafe, max_questions=2),
            jev("moving", fake_alias),
            {**jev("uncached", fake_typesafe), "model_info": {"cache": False}},
            jev("flaky", fake_broken),
            jev("steady", fake_typesafe, temperature=0.3),
            jev("jev-images", fake_typesafe, danger_zone=["images"]),
        ],
        "litellm_settings": {"cache": True},
        "router_settings": {**NO_RETRIES, "fallbacks": [{"flaky": ["steady"]}]},
    }


@pytest.fixture(scope="session")
def gateway(gateway_factory, fake_typesafe, fake_openai, fake_alias, fake_broken):
    return gateway_factory(cache_config(fake_typesafe, fake_openai, fake_alias, fake_broken))


# ---- the clients ----------------------------------------------------------------------------------


def systemone(gateway, state: str, questions: dict, model: str = "jev", headers: dict | None = None):
    """typesafe-sdk's ``system_one`` through the gateway; the response (``.raw_http_response`` for headers)."""
    with TypeSafeClient(api_key=CLIENT_KEY, base_url=gateway.url, compression=False) as client:
        return client.system_one(state, questions, model=model, extra_headers=headers or {})


def decisions(gateway, state: str, questions: list, model: str = "jev", headers: dict | None = None):
    """openai's ``decisions.create`` through the gateway: (the parsed decision, the HTTP response)."""
    import openai  # here, not at collection: ~0.8 s of CPU in each pytest-xdist worker

    client = openai.OpenAI(api_key=CLIENT_KEY, base_url=f"{gateway.url}/v1", max_retries=0)
    raw = client.decisions.with_raw_response.create(model=model, input=state, questions=questions,
                                                    extra_headers=headers or {})
    return raw.parse(), raw.http_response


def post(gateway, path: str, body: dict, headers: dict | None = None) -> httpx.Response:
    return httpx.post(f"{gateway.url}{path}", json=body, headers={"Authorization": f"Bearer {CLIENT_KEY}",
                                                                  **(headers or {})}, timeout=30)


def s1_body(state: str, questions: dict | None = None, model: str = "jev") -> dict:
    return {"model": model, "state": state, "questions": questions or S1_QUESTIONS}


def cache_counts(response) -> tuple[int, int]:
    headers = response.headers
    return int(headers["x-decisions-cache-hits"]), int(headers["x-decisions-cache-misses"])


def asked(fake, before: int) -> list[list[str]]:
    """The question ids (System One) or names (OpenAI) of each call the fake received since ``before``."""
    out = []
    for rec in fake.requests[before:]:
        questions = rec.json["questions"]
        out.append(list(questions) if isinstance(questions, dict) else [q.get("name") for q in questions])
    return out
