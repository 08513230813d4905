"""Which answers are kept: a moved alias retires the old version's, refusals and errors are never
cached, and a fallback's answer is kept under the deployment that gave it."""

from __future__ import annotations

from tests.cache.conftest import (
    S1_QUESTIONS,
    asked,
    cache_counts,
    fresh_state,
    post,
    s1_body,
    systemone,
)

OLD, NEW = "jev-1.13-20260917", "jev-1.14-20270115"


def test_an_alias_that_moved_never_serves_the_old_versions_answers(gateway, fake_alias):
    fake_alias.dated = OLD
    state = fresh_state("alias")
    first = systemone(gateway, state, S1_QUESTIONS, model="moving")
    assert first.model == OLD
    hit = systemone(gateway, state, S1_QUESTIONS, model="moving")
    assert cache_counts(hit.raw_http_response) == (3, 0) and hit.model == OLD

    fake_alias.dated = NEW  # jev-latest is now answered by a newer dated model
    # Nothing tells the gateway until it sees the new version answer (any question of this deployment).
    seen = systemone(gateway, fresh_state("another input"), {"spam": {"type": "noul", "instructions": "Spam?"}},
                     model="moving")
    assert seen.model == NEW
    before = len(fake_alias.requests)
    again = systemone(gateway, state, S1_QUESTIONS, model="moving")
    assert asked(fake_alias, before) == [["refund", "tone", "urgency"]], "the old version's answers are misses"
    assert cache_counts(again.raw_http_response) == (0, 3) and again.model == NEW
    before = len(fake_alias.requests)
    replay = systemone(gateway, state, S1_QUESTIONS, model="moving")
    assert fake_alias.requests[before:] == [] and replay.model == NEW
    assert cache_counts(replay.raw_http_response) == (3, 0)
    fake_alias.dated = OLD


def test_errors_are_not_cached(gateway, fake_typesafe):
    state = fresh_state("error")
    fake_typesafe.fail_next(500, "the upstream broke")
    failed = post(gateway, "/v1/systemone", s1_body(state))
    assert failed.status_code == 502 and "x-decisions-cache-hits" not in failed.headers
    before = len(fake_typesafe.requests)
    ok = post(gateway, "/v1/systemone", s1_body(state))
    assert ok.status_code == 200 and cache_counts(ok) == (0, 3) and len(asked(fake_typesafe, before)) == 1
    fake_typesafe.queue(200, json={"model": "jev-1.13-20260917", "answers": {"refund": {"type": "noul", "noul": 2.5}},
                                   "usage": {"input_tokens": 5, "output_tokens": 0}})
    unusable = post(gateway, "/v1/systemone", s1_body(fresh_state(), {"refund": S1_QUESTIONS["refund"]}))
    assert unusable.status_code == 502  # an unusable answer is an error too: nothing of it is kept


def test_refusals_are_not_cached(gateway, fake_typesafe):
    state = fresh_state("refusal")
    questions = {**S1_QUESTIONS, "secret": {"type": "noul", "instructions": "REFUSE to say whether it is secret."}}
    first = post(gateway, "/v1/systemone", s1_body(state, questions))
    assert first.json()["refusals"] == ["secret"]
    before = len(fake_typesafe.requests)
    second = post(gateway, "/v1/systemone", s1_body(state, questions))
    assert asked(fake_typesafe, before) == [["secret"]] and cache_counts(second) == (3, 1)
    assert second.json()["refusals"] == ["secret"] and second.json()["answers"] == first.json()["answers"]


def test_a_fallbacks_answer_is_kept_under_the_deployment_that_gave_it(gateway, fake_broken, fake_typesafe):
    state = fresh_state("fallback")
    fake_broken.fail_next(503, "overloaded")
    before = len(fake_typesafe.requests)
    answered = post(gateway, "/v1/systemone", s1_body(state, model="flaky"))
    assert answered.status_code == 200 and answered.headers["x-decisions-attempted-fallbacks"] == "1"
    assert len(asked(fake_typesafe, before)) == 1  # the fallback group "steady" answered
    before = len(fake_typesafe.requests)
    steady = post(gateway, "/v1/systemone", s1_body(state, model="steady"))
    assert cache_counts(steady) == (3, 0) and fake_typesafe.requests[before:] == []
    assert steady.json()["answers"] == answered.json()["answers"]
    broken_before = len(fake_broken.requests)
    own = post(gateway, "/v1/systemone", s1_body(state, model="flaky"))  # flaky's own deployment has none
    assert cache_counts(own) == (0, 3) and len(asked(fake_broken, broken_before)) == 1
