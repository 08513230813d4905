"""The Python API (``from gateway import decisions, adecisions``) against fake upstreams."""

from __future__ import annotations

import pytest

from gateway import adecisions, decisions
from tests.fakes.openai import FakeOpenAI
from tests.fakes.typesafe import FakeTypeSafe
from tests.providers import helpers as h
from translators.errors import DecisionError, RequestInvalid, UpstreamError


@pytest.fixture(scope="module")
def typesafe():
    with FakeTypeSafe("ts-sdk") as fake:
        yield fake


@pytest.fixture(scope="module")
def openai():
    with FakeOpenAI("sk-sdk") as fake:
        yield fake


def test_sync_system_one(typesafe):
    typesafe.reset()
    response = decisions(model="typesafe/jev-latest", state=h.STATE, questions=h.S1_QUESTIONS,
                         api_key="ts-sdk", api_base=typesafe.url, timeout=30,
                         extra_headers={"TypeSafe-Danger-Zone-Long-Context": "true", "X-Trace": "t1"})
    rec = typesafe.last
    assert rec.json == {"model": "jev-latest", "state": h.STATE, "questions": h.S1_QUESTIONS}
    assert rec.header("typesafe-danger-zone-long-context") == "true" and rec.header("x-trace") == "t1"
    assert rec.header("authorization") == "Bearer ts-sdk"
    assert response.model == "jev-1.13-20260917"
    expected = h.fake_distributions("systemone", typesafe, [rec])
    refund = response.answers["refund"]
    assert refund.noul == pytest.approx(expected["refund"][0])
    assert sum(response.answers["team"].probabilities.values()) == pytest.approx(1.0, abs=1e-9)


async def test_async_openai_wire_to_openai(openai):
    openai.reset()
    response = await adecisions(model="openai/gpt-6-luna", input=h.STATE, questions=h.OPENAI_QUESTIONS,
                                api_key="sk-sdk", api_base=openai.url + "/v1", safety_identifier="user-1")
    rec = openai.last
    assert rec.path == "/v1/decisions"
    assert rec.json == {"model": "gpt-6-luna", "input": h.STATE, "questions": h.OPENAI_QUESTIONS,
                        "safety_identifier": "user-1"}
    assert [a.name for a in response.answers] == ["refund", "human", "frustration"]
    assert response.answers[0].probability == pytest.approx(openai.expected_answers(rec)[0]["probability"])


async def test_async_openai_wire_to_a_system_one_provider(typesafe):
    typesafe.reset()
    response = await adecisions(model="typesafe/jev-latest", input=h.STATE, questions=h.OPENAI_QUESTIONS,
                                environ={"TYPESAFE_API_KEY": "ts-sdk", "TYPESAFE_API_BASE": typesafe.url})
    assert typesafe.last.header("authorization") == "Bearer ts-sdk"  # the key from the environment
    assert [a.type for a in response.answers] == ["predicate", "choice", "score"]


async def test_input_and_state_together_is_an_error():
    with pytest.raises(RequestInvalid) as caught:
        await adecisions(model="typesafe/jev-latest", input="a", state="b", questions={})
    assert caught.value.status == 400 and "not both" in caught.value.message


async def test_unknown_provider_lists_the_known_ones():
    with pytest.raises(RequestInvalid) as caught:
        await adecisions(model="nope/model", state="s", questions=h.S1_QUESTIONS)
    assert "typesafe" in caught.value.message and "openai" in caught.value.message
    assert "perplexity" in caught.value.message


async def test_invalid_questions_are_refused_before_any_call(typesafe):
    typesafe.reset()
    with pytest.raises(DecisionError) as caught:
        await adecisions(model="typesafe/jev-latest", state="s", questions={}, api_key="ts-sdk",
                         api_base=typesafe.url)
    assert 400 <= caught.value.status < 500
    assert typesafe.requests == []


async def test_upstream_errors_raise(typesafe):
    typesafe.reset()
    typesafe.fail_next(429, "slow down", headers={"Retry-After": "3"})
    with pytest.raises(UpstreamError) as caught:
        await adecisions(model="typesafe/jev-latest", state="s", questions=h.S1_QUESTIONS, api_key="ts-sdk",
                         api_base=typesafe.url)
    assert caught.value.status == 429 and caught.value.headers["Retry-After"] == "3"


async def test_sync_call_inside_a_running_loop(typesafe):
    """A notebook cell (a running loop) can still use the synchronous API."""
    typesafe.reset()
    response = decisions(model="typesafe/jev-latest", state=h.STATE, questions=h.S1_QUESTIONS, api_key="ts-sdk",
                         api_base=typesafe.url)
    assert set(response.answers) == {"refund", "team", "urgency"} and len(typesafe.requests) == 1


def test_timeout_through_the_sdk(typesafe):
    typesafe.reset()
    questions = h.noul_questions(2)
    typesafe.queue(200, json={"answers": {}}, delay=1.0)
    with pytest.raises(UpstreamError) as caught:
        decisions(model="typesafe/jev-latest", state=h.STATE, questions=questions, api_key="ts-sdk",
                  api_base=typesafe.url, timeout=0.2)
    assert caught.value.status == 504 and caught.value.provider == "typesafe"


async def test_danger_zone_extra_headers_reach_typesafe_only():
    from tests.fakes.perplexity import FakePerplexity

    with FakePerplexity("pplx-sdk") as perplexity:
        await adecisions(model="perplexity/pplx-decider-v1-27b", state=h.STATE, questions=h.S1_QUESTIONS,
                         api_key="pplx-sdk", api_base=perplexity.url,
                         extra_headers={"TypeSafe-Danger-Zone-Images": "true", "X-Trace": "t2"})
        rec = perplexity.last
    assert rec.header("x-trace") == "t2"
    assert not any(name.startswith("typesafe-danger-zone") for name in rec.headers)


@pytest.mark.parametrize("timeout", [0, -1, "5", True])
async def test_bad_timeout_is_refused_before_any_call(typesafe, timeout):
    typesafe.reset()
    with pytest.raises(RequestInvalid) as caught:
        await adecisions(model="typesafe/jev-latest", state="s", questions=h.S1_QUESTIONS, api_key="ts-sdk",
                         api_base=typesafe.url, timeout=timeout)
    assert "timeout" in caught.value.message and typesafe.requests == []


@pytest.mark.parametrize("state", [float("nan"), {"x": float("inf")}, "lone \ud800 surrogate"])
async def test_values_no_json_body_could_carry_are_the_callers_400(typesafe, state):
    typesafe.reset()
    with pytest.raises(RequestInvalid) as caught:
        await adecisions(model="typesafe/jev-latest", state=state, api_key="ts-sdk", api_base=typesafe.url,
                         questions={"q": {"type": "noul", "instructions": "Yes?"}})
    assert caught.value.status == 400 and "valid JSON" in caught.value.message
    assert typesafe.requests == []
