"""Whether a value fits the type a program declares for it (`$n:int`): the verifier and the runtime share it."""

from __future__ import annotations

from typing import Any

__all__ = ["fits_type"]

_DECLARED: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "bool": (bool,),
    "list": (list,),
    "dict": (dict,),
}


def fits_type(value: Any, declared: str | None) -> bool:
    """Whether a value fits a declared PAL type (`list[str]` is checked as `list`; unknown types always fit)."""
    if declared is None:
        return True
    base = declared.split("[", 1)[0].strip()
    expected = _DECLARED.get(base)
    if expected is None:
        return True
    if base != "bool" and isinstance(value, bool):
        return False
    return isinstance(value, expected)
