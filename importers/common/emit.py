"""Writing the agents of an imported program: playbooks bound to Python, and the helpers of an importer's
support module.

Every importer binds part of its programs to a run-time support module of its own
(`importers/langgraph/support.py`, `importers/adk/support.py`, `importers/autogen/support.py`), whose
`HELPERS` maps a function name to the function. Programs bind those helpers by the support module's stable
name, `python: pal.langgraph:apply_update` (runtime.support_modules resolves it through the entry points
of pyproject.toml), never by the module's path. An agent declares only the helpers it uses, each as a Python
playbook named in CamelCase, its header read from the function's signature and its description from the
first paragraph of its docstring. An agent is written as its main playbooks (the entry and the ones the
importer names), then the others in the order made (nodes, tools, hand-offs), then its helpers by
function name.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from importers.common.model import BoundTool
from importers.common.naming import Namer, camel_case, first_paragraph, safe_description
from importers.common.pal_types import pal_type
from importers.common.steps import literal
from pal_core.ir import Agent, Metadata, Note, Parameter, Playbook, PlaybookKind
from pal_core.validate import BUILTIN_PLAYBOOKS
from runtime.support_modules import PREFIX as SUPPORT_PREFIX


class SupportModule:
    """An importer's run-time support module, and the playbook names the agents it builds keep for
    themselves: their own (`reserved`), the helpers' and the builtins'."""

    __slots__ = ("binding", "defaults", "functions", "names", "reserved")

    def __init__(
        self, module: ModuleType, *, name: str, reserved: Iterable[str] = (), defaults: bool = True
    ) -> None:
        self.binding = f"{SUPPORT_PREFIX}{name}"
        """The stable name every helper playbook is bound under (`pal.langgraph`: the entry point `name` of
        the group `pal_bridge.support`)."""
        self.functions: Mapping[str, Callable[..., Any]] = module.HELPERS
        """The helpers by function name."""
        self.names = {function: camel_case(function) for function in self.functions}
        """The PAL name of each helper."""
        self.reserved = frozenset({*reserved, *self.names.values(), *BUILTIN_PLAYBOOKS})
        """Names no other playbook of an agent may take."""
        self.defaults = defaults
        """Whether a helper playbook's header gives the function's default values (the AutoGen importer's
        headers never have, so its programs stay as they were written)."""

    def playbook(self, function: str) -> Playbook:
        """The Python playbook bound to helper `function` (KeyError for a function that is not one)."""
        helper = self.functions[function]
        hints = typing.get_type_hints(helper)
        parameters = tuple(
            Parameter(
                name=parameter.name,
                type=pal_type(hints.get(parameter.name)),
                default=None
                if not self.defaults or parameter.default is parameter.empty
                else literal(parameter.default),
            )
            for parameter in inspect.signature(helper).parameters.values()
        )
        returns = hints.get("return")
        return python_playbook(
            name=self.names[function],
            path=f"{self.binding}:{function}",
            parameters=parameters,
            returns=pal_type(returns) or ("None" if returns is type(None) else "Any"),
            description=first_paragraph(inspect.getdoc(helper) or ""),
        )


@dataclass(slots=True, kw_only=True)
class AgentParts:
    """A PAL agent being built (mutable until `build`)."""

    name: str
    """The agent's name."""
    description: str
    """The agent's description."""
    metadata: Metadata
    """The agent's metadata (the framework's details under its own key)."""
    support: SupportModule
    """Where its helper playbooks are bound, and the names its other playbooks may not take."""
    namer: Namer = field(init=False)
    """Playbook names taken so far in this agent."""
    main: list[Playbook] = field(default_factory=list)
    """The playbooks written first (the entry, the ones the importer names)."""
    playbooks: list[Playbook] = field(default_factory=list)
    """The other playbooks (nodes, tools, hand-offs, ...), in the order made."""
    helpers: dict[str, Playbook] = field(default_factory=dict)
    """Support helper playbooks by function name, written last."""

    def __post_init__(self) -> None:
        self.namer = Namer(self.support.reserved)

    def helper(self, function: str) -> str:
        """The PAL name of helper `function`, adding its playbook on first use."""
        if function not in self.helpers:
            self.helpers[function] = self.support.playbook(function)
        return self.helpers[function].name

    def build(self) -> Agent:
        return Agent(
            name=self.name,
            description=self.description,
            metadata=self.metadata,
            playbooks=(*self.main, *self.playbooks, *(self.helpers[key] for key in sorted(self.helpers))),
        )


def python_playbook(
    *, name: str, path: str | None, parameters: tuple[Parameter, ...], returns: str | None, description: str
) -> Playbook:
    """A Python playbook bound to the function at `path` (`module:qualname`)."""
    return Playbook(
        name=name,
        kind=PlaybookKind.PYTHON,
        parameters=parameters,
        returns=returns,
        description=description,
        metadata=Metadata(python=path),
    )


def tool_playbook(tool: BoundTool, *, name: str) -> Playbook:
    """The Python playbook of a tool bound to its function, named `name` in its agent."""
    return python_playbook(
        name=name,
        path=tool.path,
        parameters=tuple(Parameter(name=parameter, type=kind) for parameter, kind in tool.parameters),
        returns=tool.returns,
        description=safe_description(tool.description),
    )


def numbered_notes(texts: Iterable[str]) -> tuple[Note, ...]:
    """Notes N1, N2, ... in order (steps refer to them by these ids)."""
    return tuple(Note(id=f"N{index}", text=text) for index, text in enumerate(texts, start=1))


__all__ = ["AgentParts", "SupportModule", "numbered_notes", "python_playbook", "tool_playbook"]
