"""The gateway under test in front of fake TypeSafe and OpenAI upstreams (real HTTP both ways)."""

from __future__ import annotations

import pytest

from tests.fakes.openai import FakeOpenAI
from tests.fakes.typesafe import FakeTypeSafe
from tests.router_settings import NO_RETRIES

TYPESAFE_KEY = "ts-test-key"
OPENAI_KEY = "sk-test-openai"
CLIENT_KEY = "sk-client-anything"  # the gateway has no auth yet; clients still need some key


@pytest.fixture(scope="session")
def fake_typesafe():
    with FakeTypeSafe(api_key=TYPESAFE_KEY) as fake:
        yield fake


@pytest.fixture(scope="session")
def fake_openai():
    with FakeOpenAI(api_key=OPENAI_KEY) as fake:
        yield fake


def gateway_config(fake_typesafe, fake_openai) -> dict:
    return {
        "model_list": [
            {"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": TYPESAFE_KEY,
                                                      "api_base": fake_typesafe.url, "timeout": 10}},
            {"model_name": "luna", "litellm_params": {"model": "openai/gpt-6-luna", "api_key": OPENAI_KEY,
                                                       "api_base": f"{fake_openai.url}/v1", "timeout": 10},
             "model_info": {"description": "OpenAI decisions", "release_date": "2026-10-06"}},
        ],
        "general_settings": {"decision_limits": {"max_questions": 400}},
        "router_settings": NO_RETRIES,  # these tests check what one upstream call gives the caller
    }


@pytest.fixture(scope="session")
def gateway(gateway_factory, fake_typesafe, fake_openai):
    return gateway_factory(gateway_config(fake_typesafe, fake_openai))
