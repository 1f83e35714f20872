"""Import paths of Python objects: where the program a framework importer writes finds a function, a
class or a live object again (`module:qualname`), and the class names it records.

`resolve` is runtime.module_path's: an importer checks a path the way the program's run will look it up."""

from __future__ import annotations

import sys
from typing import Any

from runtime.module_path import resolve


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


def resolves_to(path: str, value: Any) -> bool:
    """Whether `path` imports as exactly `value`."""
    try:
        return resolve(path) is value
    except (ImportError, AttributeError, ValueError):
        return False


def class_path(value: Any) -> str:
    """`module.Class` of `value`, for a program's metadata and descriptions."""
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


__all__ = ["class_path", "import_path", "resolve", "resolves_to"]
