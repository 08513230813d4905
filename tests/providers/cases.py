"""The providers under conformance test: each with its fake upstream and what its requests must look like."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from providers.base import Deployment
from tests.fakes.cloudflare import FakeCloudflare
from tests.fakes.harness import FakeServer
from tests.fakes.openai import FakeOpenAI
from tests.fakes.openrouter import FakeOpenRouter
from tests.fakes.perplexity import FakePerplexity
from tests.fakes.selfhosted import FakeLaya, FakeNimble
from tests.fakes.strands import FakeStrands
from tests.fakes.systemone import SystemOneFake
from tests.fakes.typesafe import FakeTypeSafe


@dataclass
class Case:
    provider: str
    make_fake: Callable[[], FakeServer]
    model: str  # the upstream model in the deployment
    body_model: str  # the model the upstream must receive in the body
    path: str  # the path the upstream must receive
    api_key: str | None  # the deployment's key (None: the upstream needs none)
    base: Callable[[FakeServer], str]  # the deployment's api_base for a running fake
    wire: str = "systemone"  # the body the upstream takes: "systemone" or "openai"
    images: str | None = None  # how images travel: openai | assets | state_parts | images_field | None
    question_limit: int | None = None  # the provider's own max_questions
    answering_model: str | None = None  # the model the result must name (default: body_model)
    params: dict = field(default_factory=dict)

    def deployment(self, fake: FakeServer, **changes) -> Deployment:
        values = dict(model_name=f"{self.provider}-group", provider=self.provider, model=self.model,
                      api_key=self.api_key, api_base=self.base(fake), timeout=10.0, params=dict(self.params))
        values.update(changes)
        return Deployment(**values)

    @property
    def id(self) -> str:
        return self.provider


def _root(fake: FakeServer) -> str:
    return fake.url


CASES = [
    Case("openai", lambda: FakeOpenAI("sk-test-openai"), "gpt-6-luna", "gpt-6-luna", "/v1/decisions",
         "sk-test-openai", lambda f: f.url + "/v1", wire="openai", images="openai"),
    Case("typesafe", lambda: FakeTypeSafe("ts-test-key"), "jev-latest", "jev-latest", "/v1/systemone",
         "ts-test-key", _root, images="assets", answering_model="jev-1.13-20260917"),
    Case("perplexity", lambda: FakePerplexity("pplx-test-key"), "pplx-decider-v1-27b", "pplx-decider-v1-27b",
         "/v1/decisions", "pplx-test-key", _root, images="state_parts", question_limit=128),
    Case("openrouter", lambda: FakeOpenRouter("or-test-key"), "typesafe/jev-latest", "~typesafe/jev-latest",
         "/api/alpha/decisions", "or-test-key", lambda f: f.url + "/api", images="assets",
         answering_model="typesafe/jev-1.14"),
    Case("cloudflare", lambda: FakeCloudflare("cf-test-token", "acc123"), "clef", "clef",
         "/client/v4/accounts/acc123/ai/run/@cf/cloudflare/clef", "cf-test-token",
         lambda f: f.url + "/client/v4/accounts/acc123/ai/run", images="images_field", question_limit=64),
    Case("strands_decider", lambda: FakeStrands(None), "strands-decider-2B-hobson-v19",
         "strands-decider-2B-hobson-v19", "/v1/systemone", None, _root,
         answering_model="strands-decider-E2B-gemma4-v2-2611"),
    Case("laya", lambda: FakeLaya("laya-key"), "english", "english", "/v1/systemone", "laya-key", _root,
         answering_model="laya-rl-agent"),
    Case("bespoke", lambda: FakeNimble(None), "nimble-latest", "nimble-latest", "/v1/systemone", None, _root,
         question_limit=64),
    Case("systemone", lambda: SystemOneFake("gen-key"), "qwen3-decider", "qwen3-decider", "/v1/systemone",
         "gen-key", lambda f: f.url + "/v1"),
]

BY_NAME = {case.provider: case for case in CASES}
IMAGE_CASES = [c for c in CASES if c.images]
TEXT_ONLY_CASES = [c for c in CASES if not c.images]
