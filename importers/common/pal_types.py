"""Python type annotations as text (`list[str]`, `int | None`) and as the types of PAL parameters."""

from __future__ import annotations

import re
import types
import typing
from typing import Any

try:
    import typing_extensions
except ImportError:  # LangGraph depends on it; without it only `typing`'s own qualifiers exist.
    typing_extensions = None  # type: ignore[assignment]

_QUALIFIERS: frozenset[Any] = frozenset(
    getattr(module, name)
    for module in (typing, *([typing_extensions] if typing_extensions is not None else []))
    for name in ("Required", "NotRequired", "ReadOnly")
    if hasattr(module, name)
)
"""Wrappers such as NotRequired[X] that say nothing about the value's type."""


def type_text(annotation: Any) -> str:
    """An annotation written the way a person would: `list[str]`, `int | None`, `Literal['a', 'b']`."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_text(args[0])
    if origin in _QUALIFIERS:
        return type_text(args[0])
    if annotation is type(None) or annotation is None:
        return "None"
    if annotation is typing.Any:
        return "Any"
    if origin is typing.Literal:
        return f"Literal[{', '.join(repr(arg) for arg in args)}]"
    if origin in (typing.Union, types.UnionType):
        base = _common_base(args)
        if base is not None:
            return base
        return " | ".join(type_text(arg) for arg in args)
    if origin is not None:
        name = getattr(origin, "__name__", None) or str(origin).replace("typing.", "")
        if not args:
            return name
        return f"{name}[{', '.join(type_text(arg) for arg in args)}]"
    if isinstance(annotation, type):
        return annotation.__name__
    if isinstance(annotation, typing.TypeVar):
        return annotation.__name__
    if isinstance(annotation, typing.ForwardRef):
        return annotation.__forward_arg__
    return str(annotation).replace("typing.", "")


def _common_base(members: tuple[Any, ...]) -> str | None:
    """The shared base class of a long union of classes (LangChain's AnyMessage -> BaseMessage)."""
    members = tuple(
        typing.get_args(member)[0] if typing.get_origin(member) is typing.Annotated else member
        for member in members
    )
    if len(members) < 4 or not all(isinstance(member, type) for member in members):
        return None
    for candidate in members[0].__mro__:
        if candidate is object:
            return None
        if all(issubclass(member, candidate) for member in members):
            return candidate.__name__
    return None


def pal_type(annotation: Any) -> str | None:
    """A type for a PAL parameter (`$x:type`, one level of brackets at most), or None when untyped."""
    if annotation is None or annotation is typing.Any:
        return None
    text = type_text(annotation)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\[\]]*\])?", text):
        return text
    head = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text)
    return head.group(0) if head else None


_JSON_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
}
"""JSON Schema's type names and the PAL types of their values."""


def json_schema_type(spec: Any) -> str | None:
    """The PAL type of a value a JSON Schema describes (`{"type": "array", "items": {"type": "string"}}` ->
    `list[str]`; a nullable single type is that type), or None when it names no single type PAL has."""
    if not isinstance(spec, dict):
        return None
    kind = spec.get("type")
    if isinstance(kind, list):
        kinds = [item for item in kind if item != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind is None and isinstance(spec.get("anyOf"), list):
        kinds = [option.get("type") for option in spec["anyOf"] if isinstance(option, dict)]
        kinds = [item for item in kinds if item and item != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    base = _JSON_TYPES.get(kind) if isinstance(kind, str) else None
    items = spec.get("items")
    if (
        base == "list"
        and isinstance(items, dict)
        and _JSON_TYPES.get(items.get("type", "")) not in (None, "list", "dict")
    ):
        return f"list[{_JSON_TYPES[items['type']]}]"
    return base


def json_type_name(kind: Any) -> str | None:
    """The PAL type of a JSON Schema type name (`"integer"` -> `int`), any case; None for others."""
    return _JSON_TYPES.get(str(kind or "").lower())


__all__ = ["json_schema_type", "json_type_name", "pal_type", "type_text"]
