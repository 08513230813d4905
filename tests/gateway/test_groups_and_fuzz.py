"""Model groups spread over their deployments; random bodies never make the gateway answer 5xx."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fakes.typesafe import FakeTypeSafe
from tests.gateway.systemone_checks import check_systemone_response

KEY = "ts-group-key"
REQUEST = {"model": "grouped", "state": "I was charged twice.",
           "questions": {"billing": {"type": "noul", "instructions": "Is this about billing?"}}}


@pytest.fixture(scope="module")
def two_upstreams():
    with FakeTypeSafe(api_key=KEY) as first, FakeTypeSafe(api_key=KEY) as second:
        yield first, second


def test_a_group_spreads_requests_over_its_deployments(gateway_factory, two_upstreams):
    first, second = two_upstreams
    gateway = gateway_factory({"model_list": [
        {"model_name": "grouped", "litellm_params": {"model": "typesafe/jev-latest", "api_key": KEY,
                                                      "api_base": upstream.url}} for upstream in two_upstreams]})
    gateway.state.pipeline.rng.seed(7)
    with httpx.Client(base_url=gateway.url, timeout=30) as http:
        for _ in range(24):
            resp = http.post("/v1/systemone", json=REQUEST)
            assert resp.status_code == 200
            check_systemone_response(REQUEST, resp.json())
    assert len(first.requests) + len(second.requests) == 24
    assert len(first.requests) >= 1 and len(second.requests) >= 1


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
S1_QUESTION = st.fixed_dictionaries({"type": st.sampled_from(["noul", "choice", "score", "box", "x"])},
                                    optional={"instructions": JSON, "criteria": JSON, "extra": JSON})
OA_QUESTION = st.fixed_dictionaries({"type": st.sampled_from(["predicate", "choice", "score", "noul"])},
                                    optional={"instructions": JSON, "name": JSON, "choices": JSON, "levels": JSON})
BODIES = st.one_of(
    JSON.map(lambda v: ("/v1/systemone", v)),
    JSON.map(lambda v: ("/v1/decisions", v)),
    st.tuples(st.just("/v1/systemone"), st.fixed_dictionaries(
        {"model": st.just("jev"), "state": JSON, "questions": st.dictionaries(st.text(max_size=6), S1_QUESTION,
                                                                             max_size=3)})),
    st.tuples(st.just("/v1/decisions"), st.fixed_dictionaries(
        {"model": st.just("jev"), "input": JSON, "questions": st.lists(OA_QUESTION, max_size=3)})),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=BODIES)
def test_random_bodies_never_get_a_5xx(gateway, case):
    path, body = case
    resp = httpx.post(f"{gateway.url}{path}", json=body, timeout=30)
    assert resp.status_code < 500, resp.text
    if resp.status_code == 200 and path == "/v1/systemone":
        check_systemone_response(body, resp.json())
