"""Import paths of Python objects, PAL names for LangGraph names, and type annotations as text."""

from __future__ import annotations

import keyword
import re
import sys
import types
import typing
from typing import Any

from runtime.module_path import resolve as resolve_bound

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
_WORD_RE = re.compile(r"[A-Za-z0-9]+")
_CAMEL_SPLIT_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def import_path(value: Any) -> tuple[str | None, str]:
    """(`module:qualname`, "") for an object importable by that path, else (None, why not).

    A decorated module-level function whose wrapper keeps an inner `__qualname__` is found under the
    module attribute it is bound to.
    """
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return None, f"{type(value).__name__} objects have no import path"
    if module == "__main__":
        return None, "it is defined in __main__, which another process cannot import; move it to a module"
    for candidate in _public_modules(module):
        path = f"{candidate}:{qualname}"
        if resolves_to(path, value):
            return path, ""
    bound = _module_attribute(module, value)
    if bound is not None:
        return f"{module}:{bound}", ""
    if "<lambda>" in qualname:
        return None, "it is a lambda, which has no import path; make it a module-level function"
    if "<locals>" in qualname:
        return None, (
            f"it is defined inside {qualname.split('.<locals>')[0]}(), so it has no import path; "
            "move it to module level"
        )
    return None, f"{module}:{qualname} does not import as this object (it was replaced or renamed)"


def _module_attribute(module: str, value: Any) -> str | None:
    """The name `value` is bound to at the top of `module` (its own name first), if any."""
    loaded = sys.modules.get(module)
    if loaded is None:
        return None
    namespace = vars(loaded)
    own = getattr(value, "__name__", None)
    if isinstance(own, str) and namespace.get(own) is value:
        return own
    for name, candidate in namespace.items():
        if candidate is value and not name.startswith("_"):
            return name
    return None


def _public_modules(module: str) -> list[str]:
    """`operator` before `_operator`: the documented module first when a C module re-exports."""
    if module.startswith("_") and "." not in module:
        return [module[1:], module]
    return [module]


def resolve(path: str) -> Any:
    """The object at `module:qualname`; raises ImportError or AttributeError."""
    return resolve_bound(path)


def resolves_to(path: str, value: Any) -> bool:
    """Whether `path` imports as exactly `value`."""
    try:
        return resolve(path) is value
    except (ImportError, AttributeError, ValueError):
        return False


def camel_case(name: str) -> str:
    """A PAL playbook or agent name for a LangGraph name: `route_after_a` -> `RouteAfterA`."""
    words: list[str] = []
    for word in _WORD_RE.findall(name):
        words.extend(_CAMEL_SPLIT_RE.split(word))
    text = "".join(word[:1].upper() + word[1:] for word in words if word)
    if not text:
        return "Node"
    if text[0].isdigit():
        text = f"Node{text}"
    if keyword.iskeyword(text):
        text = f"{text}Node"
    return text


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
