"""Every malformed request in tests/malformed_cases.py is refused by the translator with a clear 4xx."""

from __future__ import annotations

import pytest

from tests.malformed_cases import MALFORMED, OPENAI, Case
from translators import openai, systemone
from translators.errors import RequestInvalid


def test_table_is_large_enough_and_covers_both_routes():
    assert len(MALFORMED) >= 36
    assert {case.route for case in MALFORMED} == {"/v1/decisions", "/v1/systemone"}
    assert all(case.status == (400 if case.route == OPENAI else 422) for case in MALFORMED)


def _readable(message: str) -> None:
    assert message.endswith("."), message
    assert "\n" not in message
    assert "pydantic" not in message.lower()
    assert "http" not in message.lower() or "http(s)" in message
    assert "Input should" not in message and "Value error" not in message
    assert len(message) < 300


@pytest.mark.parametrize("case", MALFORMED, ids=[f"{c.route[4:]}:{c.field}:{i}" for i, c in enumerate(MALFORMED)])
def test_malformed_request_is_refused_naming_the_field(case: Case):
    if case.route == OPENAI:
        with pytest.raises(RequestInvalid) as caught:
            openai.parse_request(case.body, None)
        status, body = openai.render_error(caught.value)
        assert status == case.status == 400
        error = body["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert error["type"] == "invalid_request_error"
        assert case.field in (error["param"] or "")
        assert error["param"] in error["message"]
        _readable(error["message"])
    else:
        with pytest.raises(RequestInvalid) as caught:
            systemone.parse_request(case.body, None)
        status, body = systemone.render_error(caught.value)
        assert status == case.status == 422
        locs = [".".join(str(p) for p in entry["loc"]) for entry in body["detail"]]
        assert any(case.field in loc for loc in locs), locs
        for entry in body["detail"]:
            assert set(entry) == {"loc", "msg", "type"}
            assert entry["loc"][0] == "body"
            _readable(entry["msg"])
