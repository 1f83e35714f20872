"""JSON in and out of the stores, exactly: a value that JSON cannot hold as itself is refused when it is
written, with the path to it, never converted (no `default=str`, no tuple silently becoming a list, no
integer dict key silently becoming a string, no NaN).

Accepted: dicts with str keys, lists, str (valid Unicode), int, finite float, bool, None, of exactly these
types (a StrEnum or an int subclass is refused: it would come back as a plain str or int), nested at most
`MAX_DEPTH` levels.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .errors import FormatError, NotJSON

MAX_DEPTH = 400
"""How deeply lists and dicts may nest: deep enough for any run state (runtime values nest at most 100
levels), shallow enough that reading it back never exhausts Python's recursion limit."""

_PLAIN_SCALARS = frozenset({int, bool, type(None)})
_JSON_TYPES = "dicts with string keys, lists, strings, finite numbers, booleans and None"


def dumps(value: Any, *, where: str) -> str:
    """`value` as compact JSON text; `NotJSON` naming the path (`where` is the root's name) if it is not JSON."""
    if not _is_plain_json(value):
        path, reason = _find_problem(value, where, 0) or (where, "is not JSON")
        raise NotJSON(path, reason)
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def dumps_object(value: Any, *, where: str) -> str:
    """Like `dumps`, for a value that must be a JSON object (a payload, a state, metadata)."""
    if type(value) is not dict:
        raise NotJSON(where, f"must be a JSON object (a dict with string keys), not a {type(value).__name__}")
    return dumps(value, where=where)


def loads(text: str, *, where: str) -> Any:
    """A stored JSON text back as Python values; `FormatError` if the text is damaged."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise FormatError(f"{where}: the stored JSON cannot be read ({error})") from None


def check(value: Any, *, where: str) -> None:
    """Raise `NotJSON` (with the path) unless `value` is exactly JSON; used on documents read from outside."""
    if not _is_plain_json(value):
        path, reason = _find_problem(value, where, 0) or (where, "is not JSON")
        raise NotJSON(path, reason)


def _is_plain_json(value: Any) -> bool:
    """The fast check every write makes: no paths are built unless something is wrong."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is str:
            if not item.isascii() and not _valid_unicode(item):
                return False
        elif kind is dict:
            if depth >= MAX_DEPTH:
                return False
            for key, child in item.items():
                if type(key) is not str or (not key.isascii() and not _valid_unicode(key)):
                    return False
                stack.append((child, depth + 1))
        elif kind is list:
            if depth >= MAX_DEPTH:
                return False
            stack.extend((child, depth + 1) for child in item)
        elif kind is float:
            if not math.isfinite(item):
                return False
        elif kind not in _PLAIN_SCALARS:
            return False
    return True


def _find_problem(value: Any, path: str, depth: int) -> tuple[str, str] | None:
    """The path of the first value that is not JSON and why (only called once the fast check failed)."""
    kind = type(value)
    if kind is dict or kind is list:
        if depth >= MAX_DEPTH:
            return path, f"nests lists and dicts more than {MAX_DEPTH} levels deep (or contains itself)"
        if kind is dict:
            for key, child in value.items():
                if type(key) is not str:
                    return path, (
                        f"has the key {key!r}, a {type(key).__name__}; JSON object keys are strings "
                        "(convert the keys yourself, the store does not)"
                    )
                if not key.isascii() and not _valid_unicode(key):
                    return path, f"has the key {key!r}, which is not valid Unicode (an unpaired surrogate)"
                found = _find_problem(child, f"{path}[{key!r}]", depth + 1)
                if found:
                    return found
        else:
            for index, child in enumerate(value):
                found = _find_problem(child, f"{path}[{index}]", depth + 1)
                if found:
                    return found
        return None
    if kind is str:
        return None if value.isascii() or _valid_unicode(value) else (path, _reason_surrogate(value))
    if kind is float:
        return (
            None
            if math.isfinite(value)
            else (path, f"{value!r} is not a JSON number (JSON has no NaN or Infinity)")
        )
    if kind in _PLAIN_SCALARS:
        return None
    return path, _reason_type(value)


def _reason_type(value: Any) -> str:
    name = type(value).__name__
    if isinstance(value, tuple):
        return f"a {name} is not JSON; pass a list (the store does not convert it)"
    for base in (bool, int, float, str, list, dict):
        if isinstance(value, base):
            return (
                f"a {name} (a subclass of {base.__name__}) would be read back as a plain {base.__name__}; "
                f"pass a plain {base.__name__}"
            )
    return f"a {name} is not JSON (JSON holds {_JSON_TYPES})"


def _reason_surrogate(value: str) -> str:
    bad = next(char for char in value if 0xD800 <= ord(char) <= 0xDFFF)
    return f"the string holds an unpaired surrogate ({bad!r}) and is not valid Unicode"


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
