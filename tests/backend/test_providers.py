"""providers/sglang.py over real HTTP to the standalone backend, providers/local.py through the gateway's
in-process path, both on the real model."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from gateway.upstream.upstream import send_local, split_local_url
from providers.base import Deployment, UpstreamRequest, UpstreamResponse
from providers.local import LocalProvider
from providers.registry import get_provider
from providers.sglang import SGLangProvider
from tests.backend.conftest import TICKET
from tests.shared_state.conftest import SETTLE_TIMEOUT_S, wait_until
from translators.errors import DecisionError, UpstreamError
from translators.ir import DecisionInput, DecisionRequest, Level, Option, Question

REQUEST = DecisionRequest(model="sglang/smollm2", wire="systemone", input=DecisionInput(state=TICKET), questions=(
    Question(id="team", kind="choice", instructions="Which team should handle this ticket?",
             options=(Option("billing", "invoices, charges, refunds"), Option("technical"), Option("sales"))),
    Question(id="refund", kind="yes_no", instructions="The customer asks for a refund.", criteria={"true": None}),
    Question(id="urgency", kind="score", instructions="How urgent is this?",
             levels=(Level("no rush"), Level("today"), Level("now", "within the hour"))),
))


async def send_http(req: UpstreamRequest) -> UpstreamResponse:
    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=req.timeout) as client:
        resp = await client.request(req.method, req.url, headers=req.headers, json=req.json)
    return UpstreamResponse(resp.status_code, {k.lower(): v for k, v in resp.headers.items()}, resp.content,
                            (time.perf_counter() - started) * 1000)


def test_the_registry_maps_sglang_and_local_to_these_classes():
    assert isinstance(get_provider("sglang"), SGLangProvider) and isinstance(get_provider("local"), LocalProvider)


async def test_sglang_provider_against_the_standalone_backend(backend_url, client):
    provider = SGLangProvider()
    dep = Deployment(model_name="smol", provider="sglang", model="smollm2", api_base=backend_url + "/v1", timeout=120)
    upstream = provider.build_request(REQUEST, dep)
    assert upstream.url == backend_url + "/v1/decisions" and upstream.json["prompt_format_version"] == 1
    result = provider.parse_response(await send_http(upstream), REQUEST, dep)
    direct = (await client.post("/v1/decisions", json=upstream.json)).json()["answers"]
    assert result.model == "smollm2" and [a.question_id for a in result.answers] == ["team", "refund", "urgency"]
    for answer in result.answers:
        wire = direct[answer.question_id]
        assert answer.label_mass == pytest.approx(wire["label_mass"], rel=1e-4)
        assert answer.probabilities == pytest.approx(tuple(wire["probabilities"].values()), abs=1e-5)
    assert result.usage.input_tokens > 0 and result.usage.output_tokens == 0 and result.usage.cached_tokens > 0
    assert result.extra["prompt_format_version"] == 1


async def test_sglang_provider_keeps_the_servers_refusal_behind_its_name(backend_url):
    provider = SGLangProvider()
    pinned = Deployment(model_name="smol", provider="sglang", model="smollm2", api_base=backend_url,
                        params={"prompt_format_version": 2})
    with pytest.raises(UpstreamError) as err:
        provider.parse_response(await send_http(provider.build_request(REQUEST, pinned)), REQUEST, pinned)
    assert err.value.status == 400 and err.value.provider == "sglang"
    assert err.value.message == ("SGLang upstream answered HTTP 400: prompt_format_version 2 is not served, "
                                 "this server uses version 1")
    adapter = Deployment(model_name="smol", provider="sglang", model="base:adapter", api_base=backend_url)
    with pytest.raises(UpstreamError, match="LoRA adapter 'adapter'"):
        provider.parse_response(await send_http(provider.build_request(REQUEST, adapter)), REQUEST, adapter)
    with pytest.raises(DecisionError, match="needs a server address"):
        provider.build_request(REQUEST, Deployment(model_name="s", provider="sglang", model="m"))


def test_sglang_provider_reads_an_upstream_without_our_extras():
    """SGLang itself omits completion_tokens and prompt_tokens_details."""
    body = (b'{"object":"decisions","model":"Qwen/Qwen3.8-27B","prompt_format_version":1,"answers":{'
            b'"team":{"type":"choice","probabilities":{"billing":0.5,"technical":0.3,"sales":0.2},"label_mass":0.9,"choice":"billing"},'
            b'"refund":{"type":"yes_no","probabilities":{"yes":0.8,"no":0.2},"label_mass":0.4},'
            b'"urgency":{"type":"score","probabilities":{"0":0.1,"1":0.6,"2":0.3},"label_mass":0.7,"score":1.2}},'
            b'"usage":{"prompt_tokens":300,"total_tokens":300}}')
    dep = Deployment(model_name="q", provider="sglang", model="Qwen/Qwen3.8-27B", api_base="http://h")
    result = SGLangProvider().parse_response(UpstreamResponse(200, {}, body), REQUEST, dep)
    assert [a.label_mass for a in result.answers] == [0.9, 0.4, 0.7] and result.usage.input_tokens == 300
    with pytest.raises(UpstreamError) as err:
        SGLangProvider().parse_response(UpstreamResponse(200, {}, b'{"answers": {}}'), REQUEST, dep)
    assert err.value.status == 502 and "no answer for question 'team'" in err.value.message


async def test_local_provider_answers_in_process(client):
    provider = LocalProvider()
    dep = Deployment(model_name="smollm2", provider="local", model="smollm2")
    upstream = provider.build_request(REQUEST, dep)
    assert upstream.url == "local://smollm2/v1/decisions" and "prompt_format_version" not in upstream.json
    result = provider.parse_response(await send_local(upstream), REQUEST, dep)
    direct = (await client.post("/v1/decisions", json=upstream.json)).json()["answers"]
    for answer in result.answers:
        assert answer.probabilities == pytest.approx(tuple(direct[answer.question_id]["probabilities"].values()), abs=1e-5)
        assert answer.label_mass == pytest.approx(direct[answer.question_id]["label_mass"], rel=1e-4)
    path_dep = Deployment(model_name="m", provider="local", model="/models/my chat model/v1")
    assert split_local_url(provider.build_request(REQUEST, path_dep).url) == ("/models/my chat model/v1", "/v1/decisions")


async def test_local_provider_refusals_name_the_question():
    provider = LocalProvider()
    dep = Deployment(model_name="smollm2", provider="local", model="smollm2")
    long = DecisionRequest(model="local/smollm2", wire="openai", input=DecisionInput(state="word " * 9000),
                           questions=(Question(id="refund", kind="yes_no", instructions="A refund?"),))
    with pytest.raises(UpstreamError) as err:
        provider.parse_response(await send_local(provider.build_request(long, dep)), long, dep)
    assert err.value.status == 400 and err.value.message.startswith("local backend upstream answered HTTP 400: ")
    assert "question 'refund': the prompt has" in err.value.message


async def test_a_local_model_that_cannot_be_loaded_is_a_clear_400(tmp_path):
    from backend import inprocess

    status, body, _headers = await inprocess.call(str(tmp_path / "no-model"), "/v1/decisions", {"input": "x", "questions": []})
    assert status == 400 and "cannot be loaded" in body["message"] and "no-model" in body["message"]


SYSTEM_ONE_ONLY = DecisionRequest(model="local/smollm2", wire="systemone", input=DecisionInput(state=""), questions=(
    Question(id="sky", kind="yes_no", criteria={"true": "the sky is blue", "false": None}),
    Question(id="pick", kind="choice", options=(Option("red"), Option("blue"))),
    Question(id="only", kind="choice", instructions="Pick one.", options=(Option("the only one"),)),
    Question(id="level", kind="score", instructions="Rate it.", levels=(Level("fine"),)),
))


async def test_local_provider_serves_what_only_system_one_allows_through_the_backends_systemone_route():
    provider = LocalProvider()
    dep = Deployment(model_name="smollm2", provider="local", model="smollm2")
    upstream = provider.build_request(SYSTEM_ONE_ONLY, dep)
    assert upstream.url == "local://smollm2/v1/systemone"
    result = provider.parse_response(await send_local(upstream), SYSTEM_ONE_ONLY, dep)
    sky, pick, only, level = result.answers
    assert 0 <= sky.probability <= 1 and 0 < sky.label_mass <= 1
    assert len(pick.probabilities) == 2 and 0 < pick.label_mass <= 1
    assert only.probabilities == (1.0,) and level.probabilities == (1.0,)
    wide = DecisionRequest(model="local/smollm2", wire="systemone", input=DecisionInput(state=TICKET), questions=(
        Question(id="wide", kind="choice", instructions="Which?", options=tuple(Option(f"o{i}") for i in range(27))),))
    with pytest.raises(UpstreamError) as err:
        provider.parse_response(await send_local(provider.build_request(wide, dep)), wide, dep)
    assert err.value.status == 400 and "question 'wide': the answer label 'AJ' is not one distinct token" in err.value.message


async def test_a_full_local_queue_reaches_the_caller_as_503_with_retry_after(service):
    """The engine's 503 + Retry-After survives the in-process hop and the provider's error mapping."""
    import asyncio

    from backend import inprocess
    from backend.service import DecisionService

    scorer = GatedScorer(service.scorer)  # the first request's rows stay in the scorer until the second is refused
    busy = DecisionService(service.loaded, max_queued_rows=3, scorer=scorer)
    inprocess._services["busy-queue-test"] = busy
    try:
        provider, dep = LocalProvider(), Deployment(model_name="busy", provider="local", model="busy-queue-test")
        first = asyncio.ensure_future(send_local(provider.build_request(REQUEST, dep)))
        await wait_until(scorer.entered.is_set, SETTLE_TIMEOUT_S, "the first request's rows reached the scorer")
        second = await send_local(provider.build_request(REQUEST, dep))
        assert second.status == 503 and second.headers["retry-after"] == "1"
        with pytest.raises(UpstreamError) as err:
            provider.parse_response(second, REQUEST, dep)
        assert err.value.status == 503 and err.value.headers.get("Retry-After") == "1"
        scorer.release.set()
        assert (await first).status == 200
    finally:
        scorer.release.set()
        inprocess._services.pop("busy-queue-test", None)
        busy.close()


class GatedScorer:
    """A scorer whose passes wait for ``release`` (``entered`` is set once one has begun): rows that
    are in flight for as long as a test needs, instead of a sleep betting that they still are."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.entered, self.release = threading.Event(), threading.Event()

    def score_jobs(self, jobs):
        self.entered.set()
        self.release.wait(SETTLE_TIMEOUT_S)
        return self.inner.score_jobs(jobs)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)
