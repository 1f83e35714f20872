"""Call results in the log, exactly: what a Python or remote playbook returned, as JSON that reads back as
the same Python value, so a resumed run that is answered from the log sees what the first run saw.

Plain JSON values (dicts with string keys, lists, strings, ints, finite floats, booleans, None) are stored
as they are. What JSON cannot hold is tagged with a one-key object whose key starts with `$`:

    (1, 2)          {"$tuple": [1, 2]}
    {3, 1}          {"$set": [1, 3]}           frozenset: {"$frozenset": [...]}
    b"ab"           {"$bytes": "YWI="}         (base64)
    float("nan")    {"$float": "nan"}          also "inf", "-inf"
    {1: "a"}        {"$dict": [[1, "a"]]}      a dict with a key that is not a string, or that starts with `$`

Anything else (an object of a class of its own, a datetime) is not storable: `encode` raises Unstorable,
and the run records the call as one to make again on resume (see runtime.session.journal).
"""

from __future__ import annotations

import base64
import contextlib
import math
from typing import Any

MAX_DEPTH = 100
"""Values nest no deeper than this (the runtime's own values nest at most 100 levels)."""

_TAGS = ("$tuple", "$set", "$frozenset", "$bytes", "$float", "$dict")


class Unstorable(ValueError):
    """A value the log cannot hold exactly (it is not JSON and has no tag)."""


def encode(value: Any, _depth: int = 0) -> Any:
    """`value` as JSON that `decode` turns back into an equal value of the same types; Unstorable if not."""
    if _depth > MAX_DEPTH:
        raise Unstorable(f"nested more than {MAX_DEPTH} levels")
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str:
        return value
    if kind is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if kind is list:
        return [encode(item, _depth + 1) for item in value]
    if kind is dict:
        if all(type(key) is str and not key.startswith("$") for key in value):
            return {key: encode(item, _depth + 1) for key, item in value.items()}
        return {"$dict": [[encode(key, _depth + 1), encode(item, _depth + 1)] for key, item in value.items()]}
    if kind is tuple:
        return {"$tuple": [encode(item, _depth + 1) for item in value]}
    if kind is set or kind is frozenset:
        items = [encode(item, _depth + 1) for item in value]
        with contextlib.suppress(TypeError):  # mixed items: any order reads back as the same set
            items.sort(key=_order)
        return {"$set" if kind is set else "$frozenset": items}
    if kind is bytes:
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    raise Unstorable(f"a {kind.__module__}.{kind.__qualname__} is not JSON and has no stored form")


def decode(data: Any) -> Any:
    """The value `encode` stored."""
    if isinstance(data, list):
        return [decode(item) for item in data]
    if not isinstance(data, dict):
        return data
    if len(data) == 1:
        ((tag, inner),) = data.items()
        if tag in _TAGS:
            return _untag(tag, inner)
    return {key: decode(item) for key, item in data.items()}


def _untag(tag: str, inner: Any) -> Any:
    if tag == "$tuple":
        return tuple(decode(item) for item in inner)
    if tag == "$set":
        return {decode(item) for item in inner}
    if tag == "$frozenset":
        return frozenset(decode(item) for item in inner)
    if tag == "$bytes":
        return base64.b64decode(inner)
    if tag == "$float":
        return float(inner)
    return {decode(key): decode(item) for key, item in inner}


def _order(item: Any) -> Any:
    return (type(item).__name__, item)
