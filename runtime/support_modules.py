"""Support modules: the run-time helpers of programs imported from other frameworks, bound by a stable name.

A program imported from LangGraph, ADK or AutoGen binds part of its playbooks to helpers of its importer
(the Pregel superstep of a graph, an ADK session's events, an AutoGen agent's turn). It names them
`pal.<support>:<helper>` (`python: pal.langgraph:apply_update`), never by the module path where the helper
happens to live, so moving code inside pal-bridge never breaks a program someone saved, and a program
carries no internal path as public API. `pal.` is reserved for these names.

A support name is found through the entry-point group `pal_bridge.support` (`langgraph =
"importers.langgraph.support"`), or registered in code with `register_support_module`; the module's
`HELPERS` mapping (function name -> function) is all a program may bind. So the runtime never imports the
packages above it by path, as with remote agents (`runtime.remote`).

Programs imported before these names existed bind `importers.langgraph_support:<helper>` (and the ADK and
AutoGen equivalents). Those still load, through the same support module, with a `DeprecatedBinding`
warning naming the path to write instead.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

from runtime.errors import ProgramError

ENTRY_POINT_GROUP = "pal_bridge.support"
PREFIX = "pal."
"""The module prefix of a support binding: `pal.langgraph:apply_update`."""

LEGACY_MODULES: Mapping[str, str] = {
    "importers.langgraph_support": "langgraph",
    "importers.adk_support": "adk",
    "importers.autogen_support": "autogen",
}
"""Module paths that programs imported by earlier versions bind, and the support name each became."""

_HELPERS: dict[str, Mapping[str, Callable[..., Any]]] = {}


class DeprecatedBinding(FutureWarning):
    """A program binds a support helper by an old internal path; it still runs (shown to users by default,
    as a FutureWarning is)."""


def register_support_module(name: str, helpers: ModuleType | Mapping[str, Callable[..., Any]]) -> None:
    """Make `pal.<name>:<helper>` bindings resolve to `helpers` (a module with a `HELPERS` mapping, or the
    mapping itself); replaces an earlier registration of `name`."""
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"support module name {name!r} must be a dotted name such as 'langgraph'")
    _HELPERS[name] = _helpers_of(name, helpers)


def support_names() -> tuple[str, ...]:
    """Every support name known (registered in code or by entry point), sorted."""
    return tuple(sorted({*_HELPERS, *(entry.name for entry in entry_points(group=ENTRY_POINT_GROUP))}))


def is_support_binding(path: str) -> bool:
    """Whether `path` (`module:qualname`) names a support helper, by its stable name or an old path."""
    module = path.partition(":")[0]
    return module.startswith(PREFIX) or module in LEGACY_MODULES


def stable_binding(path: str) -> str:
    """The stable form of a support binding (`importers.langgraph_support:f` -> `pal.langgraph:f`); any
    other path unchanged."""
    module, colon, qualname = path.partition(":")
    name = LEGACY_MODULES.get(module)
    return f"{PREFIX}{name}{colon}{qualname}" if name is not None else path


def support_helper(path: str, *, program_file: str | None = None) -> Callable[..., Any]:
    """The helper a support binding names (ProgramError saying what exists when it names nothing); an old
    path warns with DeprecatedBinding (reported at `program_file`, the program that binds it) and resolves
    as its stable form."""
    stable = stable_binding(path)
    if stable != path:
        warnings.warn_explicit(
            f"python binding {path!r} is an old internal path of pal-bridge; write {stable!r} instead "
            "(re-importing the program writes it)",
            DeprecatedBinding,
            filename=str(program_file or "<program>"),
            lineno=0,  # no line: the warning names the program, not a line of our code
        )
    module, colon, function = stable.partition(":")
    name = module.removeprefix(PREFIX)
    if not colon or not name or not function:
        raise ProgramError(f"python binding {path!r} must look like 'pal.<support>:<helper>'")
    helpers = _support_helpers(name, path)
    helper = helpers.get(function)
    if helper is None:
        raise ProgramError(
            f"python binding {path!r}: support module {PREFIX}{name} has no helper {function!r} "
            f"(helpers: {', '.join(sorted(helpers))})"
        )
    return helper


def _support_helpers(name: str, path: str) -> Mapping[str, Callable[..., Any]]:
    helpers = _HELPERS.get(name)
    if helpers is not None:
        return helpers
    for entry in entry_points(group=ENTRY_POINT_GROUP, name=name):
        try:
            loaded = entry.load()
        except ImportError as error:
            raise ProgramError(
                f"python binding {path!r}: support module {PREFIX}{name} ({entry.value}) cannot be "
                f"loaded: {error}; install the extra it needs, e.g. pip install 'pal-bridge[{name}]'"
            ) from None
        helpers = _HELPERS[name] = _helpers_of(name, loaded)
        return helpers
    known = ", ".join(PREFIX + known for known in support_names()) or "none"
    raise ProgramError(
        f"python binding {path!r}: no support module {PREFIX}{name} (known: {known}); the names under "
        f"{PREFIX!r} are pal-bridge's own"
    )


def _helpers_of(name: str, source: ModuleType | Mapping[str, Callable[..., Any]]) -> Mapping[str, Any]:
    helpers = getattr(source, "HELPERS", source) if isinstance(source, ModuleType) else source
    if not isinstance(helpers, Mapping):
        raise TypeError(f"support module {name!r} must be a module with a HELPERS mapping, or that mapping")
    return dict(helpers)


__all__ = [
    "ENTRY_POINT_GROUP",
    "PREFIX",
    "DeprecatedBinding",
    "is_support_binding",
    "register_support_module",
    "stable_binding",
    "support_helper",
    "support_names",
]
