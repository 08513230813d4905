"""Hypothesis over the paths around a key's promises (issue 19 items 1-3): the pass-throughs with keys
granted or not, the fallbacks with an upstream failing at random, and the answer cache with random
directives, through a running gateway (master key, SQLite, fake upstreams over HTTP).

Beyond a well-formed answer in the caller's envelope (no 500, wire_checks.problem), each example
checks the promise itself: a key without a pass-through grant, or over its budget, or naming a
model outside its own, never reaches the upstream; a key limited to ``jev`` never reaches ``luna``,
its fallback; ``only-if-cached`` never calls an upstream; a team's answer is never another team's hit."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.admin_calls import admin_ok
from tests.fakes.openai import FakeOpenAI
from tests.fakes.typesafe import FakeTypeSafe
from tests.reliability.wire_checks import OPENAI, STATUSES, SYSTEMONE, problem
from tests.security.conftest import OPENAI_KEY, TYPESAFE_KEY, hostile_config
from tests.security.helpers import gateway_with_env

MASTER = "sk-master-fuzz-keys-0123456789abcdef"
FUZZ = settings(max_examples=80, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
PASSTHROUGHS = ["/typesafe", "/laya/v1/systemone", "/bespoke/v1/systemone"]
BASES = ("TYPESAFE_API_BASE", "LAYA_API_BASE", "BESPOKE_API_BASE")
# Who calls: (admin fields of its key, whether it may reach the pass-throughs at all).
KEYS = {
    "granted": ({"allowed_passthrough_routes": PASSTHROUGHS, "rpm_limit": 100000}, True),
    "ungranted": ({"rpm_limit": 100000}, False),
    "broke": ({"allowed_passthrough_routes": PASSTHROUGHS, "max_budget": 0}, False),
    "jev-only": ({"allowed_passthrough_routes": PASSTHROUGHS, "models": ["jev"]}, True),
}


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    """(client, fakes, keys by name): every pass-through configured, the cache on, jev falling back to luna."""
    with FakeTypeSafe(TYPESAFE_KEY) as typesafe, FakeOpenAI(OPENAI_KEY) as luna:
        env = {"TYPESAFE_API_KEY": TYPESAFE_KEY, **dict.fromkeys(BASES, typesafe.url)}  # one fake serves all three
        config = hostile_config(typesafe, luna, master_key=MASTER,
                                database_url=f"sqlite:///{tmp_path_factory.mktemp('fuzz-keys') / 'gw.db'}")
        config["router_settings"] = {**config["router_settings"], "fallbacks": [{"jev": ["luna"]}]}
        config["litellm_settings"] = {"cache": True}
        with gateway_with_env(config, env) as gw:
            teams = [admin_ok(gw, MASTER, "/team/new", {})["team_id"] for _ in range(2)]
            keys = {name: admin_ok(gw, MASTER, "/key/generate", fields)["key"] for name, (fields, _) in KEYS.items()}
            keys["team-a"], keys["team-b"] = (admin_ok(gw, MASTER, "/key/generate", {"team_id": team})["key"]
                                              for team in teams)
            keys["master"] = MASTER
            with httpx.Client(base_url=gw.url, timeout=10) as client:
                yield client, {"typesafe": typesafe, "luna": luna}, keys


def fresh(fakes) -> None:
    for fake in fakes.values():
        fake.reset()


def sent(fakes) -> int:
    return sum(len(fake.requests) for fake in fakes.values())


TEXT = st.text(max_size=12)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | TEXT,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=10)
MODEL = st.sampled_from(["jev-latest", "jev-preview", "english", "jev", "", None]) | TEXT
STATE = st.sampled_from(["I was charged twice.", "Payouts failing for 3 days.", "Where is my order?"]) | TEXT
QUESTIONS = st.dictionaries(st.sampled_from(["refund", "urgent", "team"]), st.sampled_from([
    {"type": "noul", "instructions": "Refund?"}, {"type": "choice", "criteria": {"billing": None, "tech": None}},
    {"type": "score", "instructions": "How urgent?", "criteria": ["low", "high"]}]), min_size=1, max_size=3)
S1 = st.fixed_dictionaries({"state": STATE, "questions": QUESTIONS}, optional={"model": MODEL, "x": JSON})
FAILURE = st.sampled_from([None, None, 500, 503, 429, 400, 401])
CACHE = st.sampled_from([None, "only-if-cached", "no-cache", "no-store", "only-if-cached, no-store", "bogus"])


def envelope_ok(response: httpx.Response, wire: str) -> None:
    assert response.status_code in STATUSES, (response.status_code, response.text[:300])
    why = problem(wire, response.status_code, response.headers, response.content)
    assert why is None, why


@FUZZ
@given(who=st.sampled_from(list(KEYS)), path=st.sampled_from(["/typesafe/v1/systemone", "/typesafe/v1/models",
                                                              "/laya/v1/systemone", "/bespoke/v1/systemone"]),
       body=S1, raw=st.booleans(), junk=st.binary(max_size=80))
def test_pass_throughs_keep_the_keys_promises(fuzzed, who, path, body, raw, junk):
    client, fakes, keys = fuzzed
    fresh(fakes)
    method = "GET" if path.endswith("/models") else "POST"
    content = junk if raw else json.dumps(body).encode()
    response = client.request(method, path, content=content if method == "POST" else None,
                              headers={"Authorization": f"Bearer {keys[who]}", "Content-Type": "application/json"})
    assert response.status_code in STATUSES, (response.status_code, response.text[:300])
    assert response.headers.get("x-request-id") and isinstance(response.json(), dict)
    _, may_pass = KEYS[who]
    if not may_pass:
        assert response.status_code in (400, 403, 429), response.text[:300]
        assert sent(fakes) == 0, f"{who} reached the upstream"
    if who == "jev-only" and method == "POST":  # only TypeSafe's jev-latest is the jev group's model
        model = None if raw else body.get("model")
        if not (path.startswith("/typesafe/") and (raw or model in (None, "", "jev-latest"))):
            assert response.status_code == 403 and sent(fakes) == 0, response.text[:300]

@FUZZ
@given(who=st.sampled_from(["jev-only", "granted", "master", "team-a", "team-b"]),
       wire=st.sampled_from([SYSTEMONE, OPENAI]), state=STATE, questions=QUESTIONS, failure=FAILURE,
       cache=CACHE, model=st.sampled_from(["jev", "jev", "luna", "nope"]))
def test_fallbacks_and_the_cache_keep_the_keys_promises(fuzzed, who, wire, state, questions, failure, cache,
                                                        model):
    client, fakes, keys = fuzzed
    fresh(fakes)
    if failure is not None:
        fakes["typesafe"].fail_next(failure, "fuzzed failure")
    headers = {"Authorization": f"Bearer {keys[who]}"}
    if cache is not None:
        headers["x-decisions-cache"] = cache
    if wire == SYSTEMONE:
        response = client.post("/v1/systemone", json={"model": model, "state": state, "questions": questions},
                               headers=headers)
    else:
        oa = [{"type": "predicate", "name": name, "instructions": "Refund?"} for name in questions]
        response = client.post("/v1/decisions", json={"model": model, "input": state, "questions": oa},
                               headers=headers)
    envelope_ok(response, wire)
    if who == "jev-only":
        assert fakes["luna"].requests == [], "a key limited to jev reached its fallback luna"
    if cache is not None and "only-if-cached" in cache and response.status_code in (200, 504):
        assert sent(fakes) == 0, "only-if-cached called an upstream"
    if response.status_code == 200:
        scope, asked = PAID.setdefault(who, set()), [(state, canonical(wire, q)) for q in questions.values()]
        hits = int(response.headers.get("x-decisions-cache-hits", "0"))
        known = sum(1 for entry in asked if entry in scope)
        assert hits <= known, f"{who} got {hits} hits for answers its own scope never paid for"
        if cache is None or "no-store" not in cache:
            scope.update(asked)


PAID: dict[str, set[tuple[str, str]]] = {}  # caller -> (state, question) its cache scope paid for (each key's own)


def canonical(wire: str, question: dict) -> str:
    """A question as the cache keys it (both wires alike): the OpenAI predicates sent are "Refund?"."""
    return json.dumps({"type": "noul", "instructions": "Refund?"} if wire == OPENAI else question, sort_keys=True)
