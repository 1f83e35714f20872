"""Call results in the log read back as the same Python values (runtime.session.codec)."""

from __future__ import annotations

import datetime
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.session.codec import Unstorable, decode, encode

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text() | st.binary()
hashable = st.recursive(
    scalars, lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3), max_leaves=8
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.sets(hashable, max_size=4)
        | st.dictionaries(st.text() | st.integers(), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(values)
def test_what_is_encoded_decodes_to_an_equal_value_of_the_same_types(value: object) -> None:
    stored = json.loads(json.dumps(encode(value), allow_nan=False))  # it is JSON, exactly
    back = decode(stored)
    assert back == value
    assert _types(back) == _types(value)


def _types(value: object) -> object:
    if isinstance(value, dict):
        return ("dict", sorted((repr(key), _types(item)) for key, item in value.items()))
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_types(item) for item in value])
    if isinstance(value, set | frozenset):
        return (type(value).__name__, len(value))
    return type(value).__name__


def test_tags_that_a_dict_could_collide_with_are_escaped() -> None:
    value = {"$tuple": [1, 2], "plain": 1}
    assert encode(value) == {"$dict": [["$tuple", [1, 2]], ["plain", 1]]}
    assert decode(encode(value)) == value


def test_non_finite_floats_are_kept() -> None:
    assert decode(encode(float("inf"))) == float("inf")
    assert math.isnan(decode(encode(float("nan"))))


def test_objects_with_no_stored_form_are_named() -> None:
    with pytest.raises(Unstorable, match=r"datetime\.datetime is not JSON"):
        encode({"when": datetime.datetime(2026, 1, 1)})
