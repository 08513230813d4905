"""What the gateway sends is the JSON the stdlib would write, and a non-finite number is never sent."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.json_codec import json_bytes

JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
                    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=20)


@given(JSON)
def test_the_bytes_read_back_as_the_same_value(value):
    out = json_bytes(value)
    assert json.loads(out) == value  # floats exactly (shortest round-trip digits; 1e-7 rather than 1e-07)
    if not any(isinstance(x, float) for x in _leaves(value)):  # without floats: the stdlib's very bytes
        assert out == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


@pytest.mark.parametrize("value", [float("nan"), {"p": [0.5, float("inf")]}, [{"x": None, "y": -float("inf")}]])
def test_a_non_finite_number_is_refused_not_written_as_null(value):
    with pytest.raises(ValueError):
        json_bytes(value)


def test_what_orjson_refuses_falls_back_to_the_stdlib():
    assert json_bytes({"n": 2**70}) == b'{"n":1180591620717411303424}'
    with pytest.raises(UnicodeEncodeError):
        json_bytes({"s": "\ud800"})
