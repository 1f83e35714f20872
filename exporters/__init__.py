"""Exporters: PAL playbooks made into parts of other agent frameworks (graph nodes, tools, agents).

Each framework has one exporter, found by name (`get_exporter("langgraph")`). An exporter lists what it
makes by kind (`node`, `tool`, ...), each a function taking the program (a `Program` or a file) and
keyword options, so generic code can ask `get_exporter(name).make("tool", program, playbook="Add")`;
code written for one framework calls that framework's functions directly
(`exporters.langgraph.as_langgraph_node`).

Framework packages are imported only when something is made; importing this package, or an exporter
module, loads none. Other exporters (ADK, AutoGen) register here with `register_exporter(name, exporter)`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pal_core.errors import PalError


class ExportError(PalError):
    """A playbook that cannot be exported as asked, or a framework value it cannot take (a user error):
    the message names the node or tool, the playbook, and what to change."""


class UnknownExporter(PalError):
    """No exporter is registered under the name asked for."""


class FrameworkNotInstalled(PalError, ImportError):
    """The framework an exporter needs is not installed; the message gives the pip command."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Exporter:
    """One framework's exporter: what it makes from a PAL program, by kind."""

    framework: str
    """The framework's name, as `get_exporter` finds it: `langgraph`."""
    makers: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """What it makes, by kind (`node`, `tool`, `agent`): functions called as `maker(program, **options)`."""
    install_hint: str = ""
    """The command that installs what the exporter needs: `pip install 'pal-bridge[langgraph]'`."""

    def make(self, kind: str, program: Any, /, **options: Any) -> Any:
        """`makers[kind](program, **options)`; ExportError naming the kinds there are for an unknown kind."""
        maker = self.makers.get(kind)
        if maker is None:
            known = ", ".join(sorted(self.makers)) or "none"
            raise ExportError(f"the {self.framework} exporter makes no {kind!r} (it makes: {known})")
        return maker(program, **options)


_BUILTIN_EXPORTERS: Mapping[str, str] = {
    "langgraph": "exporters.langgraph:EXPORTER",
}
"""Exporters shipped with pal-bridge, loaded on first use by import path."""

_registered: dict[str, Exporter] = {}


def register_exporter(name: str, exporter: Exporter, *, replace: bool = False) -> None:
    """Make `exporter` available as `get_exporter(name)`; an existing name needs `replace=True`."""
    if not name or not name.replace("-", "_").isidentifier():
        raise ValueError(f"exporter name {name!r} must be a word such as 'langgraph'")
    if not isinstance(exporter, Exporter):
        raise TypeError(f"exporter {name!r} must be an Exporter, got {type(exporter).__name__}")
    if not replace and (name in _registered or name in _BUILTIN_EXPORTERS):
        raise ValueError(f"an exporter named {name!r} is already registered; pass replace=True to replace it")
    _registered[name] = exporter


def get_exporter(name: str) -> Exporter:
    """The exporter registered as `name`; raises UnknownExporter listing the known names."""
    exporter = _registered.get(name)
    if exporter is not None:
        return exporter
    path = _BUILTIN_EXPORTERS.get(name)
    if path is None:
        known = ", ".join(exporter_names()) or "none"
        raise UnknownExporter(f"no exporter for {name!r}; known exporters: {known}")
    module_name, _, attribute = path.partition(":")
    loaded: Exporter = getattr(importlib.import_module(module_name), attribute)
    _registered[name] = loaded
    return loaded


def exporter_names() -> tuple[str, ...]:
    """Every exporter name, sorted."""
    return tuple(sorted({*_BUILTIN_EXPORTERS, *_registered}))


__all__ = [
    "ExportError",
    "Exporter",
    "FrameworkNotInstalled",
    "UnknownExporter",
    "exporter_names",
    "get_exporter",
    "register_exporter",
]
