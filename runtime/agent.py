"""Agent instances: an agent class of the program brought to life with an id, state, an inbox and its code."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pal_core.errors import PalError
from pal_core.flow import PlaybookFlow
from pal_core.ir import Agent, Metadata, Parameter, Playbook, PlaybookKind, Trigger, check_playbook_depth
from pal_core.messaging import AgentParticipant, AsyncMessageQueue, Message
from pal_core.triggers import TRIGGER_RE
from runtime.errors import ProgramError
from runtime.module_path import use_module_folders
from runtime.python_api import PlaybookFunction
from runtime.python_env import load_block, load_module_playbooks, resolve_import_path
from runtime.state import AgentState

if TYPE_CHECKING:
    from runtime.program_run import ProgramRun
    from runtime.remote import RemoteConnection
    from runtime.services import RunServices


@dataclass(slots=True)
class AgentInstance:
    """One running agent."""

    id: str
    """The instance id: "1000", "1001", ..."""
    ir: Agent
    """The agent class from the program."""
    run: ProgramRun
    """The run it belongs to (its lifecycle)."""
    services: RunServices
    """What its playbooks need from the run (given to every Execution of this agent)."""
    state: AgentState = field(default_factory=AgentState)
    """Variables, artifacts, session log."""
    inbox: AsyncMessageQueue = field(init=False)
    """Where messages to this agent arrive."""
    playbooks: dict[str, Playbook] = field(default_factory=dict)
    """Every playbook of the agent by name (remote tools included once listed)."""
    functions: dict[str, Callable[..., Any]] = field(default_factory=dict)
    """The Python callables of Python playbooks, by playbook name."""
    remote: RemoteConnection | None = None
    """The connection of a remote agent."""
    unread: list[Message] = field(default_factory=list)
    """Messages received but not yet shown to the model."""
    pending_triggers: list[str] = field(default_factory=list)
    """Playbooks whose machine-checkable CND trigger became true, to run at the next step boundary."""
    display_name: str | None = None
    """The name it was created with (`CreateAgent("Player", name="Nova")`), if any."""
    _flows: dict[str, PlaybookFlow] = field(default_factory=dict)
    _declared: dict[str, tuple[Playbook, tuple[tuple[str, str], ...]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.inbox = AsyncMessageQueue(f"inbox of {self.klass} {self.id}")
        self.state.variables.limits = self.services.value_limits
        self.playbooks = {playbook.name: playbook for playbook in self.ir.playbooks}

    @property
    def klass(self) -> str:
        return self.ir.name

    @property
    def spec(self) -> str:
        """The receiver spec of this agent: `agent 1000`."""
        return f"agent {self.id}"

    def participant(self) -> AgentParticipant:
        return AgentParticipant(id=self.id, klass=self.klass, inbox=self.inbox)

    def flow(self, playbook: Playbook) -> PlaybookFlow:
        """The (cached) control flow of one of this agent's playbooks."""
        cached = self._flows.get(playbook.name)
        if cached is None or cached.playbook is not playbook:
            try:
                check_playbook_depth(playbook, owner=self.klass, source=self.services.program.source)
            except PalError as error:  # a program built in code, not read from text (which refuses it)
                raise ProgramError(str(error)) from None
            cached = PlaybookFlow(playbook)
            self._flows[playbook.name] = cached
        return cached

    def declared_types(self, playbook: Playbook) -> tuple[tuple[str, str], ...]:
        """(variable, type) for every `$x:type` a step of the playbook assigns (`$x:int = ...`, `$x:int =
        Call()`), cached: a playbook's declarations hold from its first step, whoever writes the value."""
        cached = self._declared.get(playbook.name)
        if cached is None or cached[0] is not playbook:
            found: dict[str, str] = {}
            for step in self.flow(playbook).by_line.values():
                target = step.assignment.target if step.assignment is not None else None
                if target is None and step.call is not None:
                    target = step.call.result
                if target is not None and target.type:
                    found.setdefault(target.name, target.type)
            cached = (playbook, tuple(found.items()))
            self._declared[playbook.name] = cached
        return cached[1]

    def load_python(self, namespace: dict[str, Any]) -> None:
        """Load the agent's python blocks, named modules and `python:` bindings."""
        source = self.services.program.source or "<program>"
        if self.ir.python_blocks:
            # A block's own imports are looked up like bound modules (runtime.module_path).
            use_module_folders(self.services.program.source)
        for index, code in enumerate(self.ir.python_blocks):
            functions = load_block(
                code,
                module_name=f"pal_program.{_module_safe(self.klass)}_{self.id}_block{index}",
                filename=f"{source} [{self.klass} python block {index + 1}]",
                namespace=namespace,
            )
            self._add_functions(functions)
        modules = self.ir.metadata.extra.get("python_modules") or []
        if isinstance(modules, str):
            modules = [modules]
        program_file = self.services.program.source
        for module_path in modules:
            self._add_functions(load_module_playbooks(str(module_path), program_file=program_file))
        for playbook in self.ir.playbooks:
            if playbook.kind is PlaybookKind.PYTHON and playbook.metadata.python:
                self.functions[playbook.name] = resolve_import_path(
                    playbook.metadata.python, program_file=program_file
                )

    def _add_functions(self, functions: dict[str, PlaybookFunction]) -> None:
        for name, function in functions.items():
            self.functions[name] = function.function
            if name not in self.playbooks:
                # A function from a module the program names: describe it as a Python playbook of this agent.
                self.playbooks[name] = _playbook_from_function(function)

    def python_function(self, name: str) -> Callable[..., Any]:
        function = self.functions.get(name)
        if function is None:
            raise ProgramError(f"agent {self.klass}: Python playbook {name} has no loaded function")
        return function


def _module_safe(name: str) -> str:
    return "".join(char if char.isalnum() else "_" for char in name)


def _playbook_from_function(function: PlaybookFunction) -> Playbook:
    signature = inspect.signature(function.function)
    parameters = tuple(
        Parameter(
            name=name,
            type=_annotation(parameter.annotation),
            default=None if parameter.default is inspect.Parameter.empty else repr(parameter.default),
        )
        for name, parameter in signature.parameters.items()
    )
    triggers = []
    for text in function.spec.triggers:
        match = TRIGGER_RE.match(text)
        if match:
            triggers.append(
                Trigger(id=match.group("id"), code=match.group("code"), text=match.group("text").strip())
            )
    return Playbook(
        name=function.name,
        kind=PlaybookKind.PYTHON,
        parameters=parameters,
        returns=_annotation(signature.return_annotation),
        description=inspect.getdoc(function.function) or "",
        metadata=Metadata(
            public=function.spec.public or None,
            model_callable=_flag(function.spec.options.get("model_callable")),
            requires_approval=_flag(function.spec.options.get("requires_approval")),
        ),
        triggers=tuple(triggers),
    )


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _annotation(annotation: Any) -> str | None:
    if annotation is inspect.Signature.empty:
        return None
    if isinstance(annotation, str):
        return annotation
    return getattr(annotation, "__name__", None) or str(annotation)
