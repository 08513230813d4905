"""A gateway in front of fake TypeSafe and OpenAI upstreams that echo keys, send bombs or hang."""

from __future__ import annotations

import pytest

from tests.fakes.openai import FakeOpenAI
from tests.fakes.typesafe import FakeTypeSafe
from tests.router_settings import NO_RETRIES

# Distinctive prefixes, so that even four characters of a key showing up in an answer are caught.
TYPESAFE_KEY = "zq7ts-hostile-0123456789abcdef"
OPENAI_KEY = "zq8sk-hostile-0123456789abcdef"


@pytest.fixture(scope="module")
def hostile_typesafe():
    with FakeTypeSafe(api_key=TYPESAFE_KEY) as fake:
        yield fake


@pytest.fixture(scope="module")
def hostile_openai():
    with FakeOpenAI(api_key=OPENAI_KEY) as fake:
        yield fake


def hostile_config(typesafe, openai_fake, **general) -> dict:
    return {
        "model_list": [
            {"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": TYPESAFE_KEY,
                                                      "api_base": typesafe.url, "timeout": 10}},
            {"model_name": "luna", "litellm_params": {"model": "openai/gpt-6-luna", "api_key": OPENAI_KEY,
                                                       "api_base": f"{openai_fake.url}/v1", "timeout": 10}},
        ],
        "general_settings": general,
        "router_settings": NO_RETRIES,  # these tests check what one upstream answer gives the caller
    }


@pytest.fixture(scope="module")
def gateway(gateway_factory, hostile_typesafe, hostile_openai):
    return gateway_factory(hostile_config(hostile_typesafe, hostile_openai))


@pytest.fixture(autouse=True)
def _fresh_fakes(hostile_typesafe, hostile_openai):
    yield
    hostile_typesafe.reset()
    hostile_openai.reset()
