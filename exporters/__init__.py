"""Exporters: PAL playbooks made into parts of other agent frameworks (graph nodes, tools, agents).

Each framework has one exporter, found by name (`get_exporter("langgraph")`). An exporter lists what it
makes by kind (`node`, `tool`, ...), each a function taking the program (a `Program` or a file) and
keyword options, so generic code can ask `get_exporter(name).make("tool", program, playbook="Add")`;
code written for one framework calls that framework's functions directly
(`exporters.langgraph.as_langgraph_node`).

Framework packages are imported only when something is made; importing this package, or an exporter
module, loads none. Other exporters register here with `register_exporter(name, exporter)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pal_core.errors import PalError
from runtime.plugins import NamedRegistry


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


_EXPORTERS: NamedRegistry[Exporter] = NamedRegistry(
    "exporter",
    {
        "langgraph": "exporters.langgraph:EXPORTER",
        "adk": "exporters.adk:EXPORTER",
        "autogen": "exporters.autogen:EXPORTER",
    },
    unknown=UnknownExporter,
    accepts=lambda part: isinstance(part, Exporter),
    expected="an Exporter",
)
"""Exporters shipped with pal-bridge are loaded on first use by import path."""


def register_exporter(name: str, exporter: Exporter, *, replace: bool = False) -> None:
    """Make `exporter` available as `get_exporter(name)`; an existing name needs `replace=True`."""
    _EXPORTERS.register(name, exporter, replace=replace)


def get_exporter(name: str) -> Exporter:
    """The exporter registered as `name`; raises UnknownExporter listing the known names."""
    return _EXPORTERS.get(name)


def exporter_names() -> tuple[str, ...]:
    """Every exporter name, sorted."""
    return _EXPORTERS.names()


__all__ = [
    "ExportError",
    "Exporter",
    "FrameworkNotInstalled",
    "UnknownExporter",
    "exporter_names",
    "get_exporter",
    "register_exporter",
]
