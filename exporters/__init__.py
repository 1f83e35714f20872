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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pal_core.errors import PalError
from runtime.plugins import NamedRegistry

if TYPE_CHECKING:
    from pal_core.ir import Program
    from runtime.embedding import EmbeddedPlaybook
    from runtime.humans import HumanInput
    from runtime.models.base import Model
    from runtime.program_run import RunLimits
    from runtime.store import Store
    from runtime.trace import Tracer


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


def embedded_playbook(
    program: Program | str | Path | EmbeddedPlaybook,
    *,
    agent: str | None = None,
    playbook: str | None = None,
    model: Model | str | None = None,
    limits: RunLimits | None = None,
    human: HumanInput | None = None,
    tracer: Tracer | None = None,
    store: Store | str | None = None,
) -> EmbeddedPlaybook:
    """The EmbeddedPlaybook every exporter runs its playbook through: `program` itself when it is one (then
    none of the options may be given: it has them), else a new one. ExportError for a playbook that cannot
    be found, or options given with an EmbeddedPlaybook."""
    from runtime.embedding import EmbeddedPlaybook
    from runtime.errors import CallError

    if isinstance(program, EmbeddedPlaybook):
        given = [
            name
            for name, value in (
                ("agent", agent),
                ("playbook", playbook),
                ("model", model),
                ("limits", limits),
                ("human", human),
                ("tracer", tracer),
                ("store", store),
            )
            if value is not None
        ]
        if given:
            raise ExportError(
                f"{', '.join(given)} cannot be given with an EmbeddedPlaybook ({program.qualified_name}): "
                "it already has them"
            )
        return program
    try:
        return EmbeddedPlaybook(
            program,
            playbook,
            agent=agent,
            model=model,
            limits=limits,
            human=human,
            tracer=tracer,
            store=store,
        )
    except CallError as error:
        raise ExportError(f"cannot export: {error}") from error


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
    "embedded_playbook",
    "exporter_names",
    "get_exporter",
    "register_exporter",
]
