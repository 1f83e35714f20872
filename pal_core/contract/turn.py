"""Where a model turn stands: the one description the verifier, `pal check-turn`, the prompt, the local
grammar and the example turns all read, so that they can never disagree about a turn.

`describe_turn(...)` builds it from a program and a position. The runtime passes what it knows live (the
agent's playbooks with remote tools listed, the variables that exist and their values); `pal check-turn`
passes only the program, and every variable the agent names is taken to exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from pal_core.builtins import BUILTINS, BuiltinKind
from pal_core.contract.fixed import Evaluate, program_variables
from pal_core.contract.model import StepRef
from pal_core.flow import PlaybookFlow
from pal_core.ir import Agent, JsonValue, Playbook, PlaybookKind, Program
from pal_core.node_cache import per_node
from pal_core.step_text import declared_variables


class CalleeKind(StrEnum):
    """What a name an answer may call refers to."""

    PLAYBOOK = "playbook"
    """A markdown playbook of the running agent."""
    PYTHON = "python"
    """A Python playbook of the running agent."""
    REMOTE = "remote"
    """A tool of a remote agent (MCP)."""
    PUBLIC = "public"
    """A public playbook of another agent, called as `Agent.Playbook`."""
    BUILTIN = "builtin"
    """A builtin (pal_core.builtins)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Callee:
    """A name an answer may call."""

    name: str
    """The name as called: `Price`, `Shop.Price`, `Say`."""
    kind: CalleeKind
    """What it refers to."""
    parameters: tuple[str, ...] = ()
    """Parameter names in order."""
    signature: str = ""
    """How it is called, for the prompt: `Price($n:int) -> float`."""
    summary: str = ""
    """One line on what it does."""
    model_callable: bool = True
    """Whether a model may call it at a step that does not name it (a step naming it always may)."""
    requires_approval: bool = False
    """Whether a human must approve a call the model makes on its own before it runs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TriggerInfo:
    """A trigger an answer may report as fired with `trig? Trigger["PB:T1:CND"]`."""

    ref: StepRef
    """`Playbook:T1:CND` (`Agent.Playbook:T1:CND` for another agent's public playbook)."""
    text: str
    """The trigger's condition in words."""
    callee: str
    """The playbook that runs when it fires, as called."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnContext:
    """Where execution stands when the model is asked to continue a playbook."""

    agent: str
    """The running agent's class."""
    playbook: Playbook
    """The running playbook."""
    flow: PlaybookFlow
    """Its control-flow graph."""
    current_line: str
    """The line to execute next."""
    variables: Mapping[str, str | None] = field(default_factory=dict)
    """Variables that exist now (name without `$` -> declared type or None)."""
    values: Mapping[str, JsonValue] = field(default_factory=dict)
    """Their current values, where known (the runtime knows them; `pal check-turn` does not)."""
    declared_types: Mapping[str, str] = field(default_factory=dict)
    """Types the program declares for variables (`$x:int` anywhere in the agent)."""
    callees: Mapping[str, Callee] = field(default_factory=dict)
    """Everything an answer may call, by name as called."""
    open_agents: frozenset[str] = frozenset()
    """Remote agents whose tools are not listed yet: any `Agent.name` of theirs may be called."""
    triggers: Mapping[str, TriggerInfo] = field(default_factory=dict)
    """Triggers that exist, by `str(ref)`."""
    in_meeting: bool = False
    """Whether the running frame is in a meeting (yld meeting is then always allowed)."""
    known_agents: frozenset[str] = frozenset()
    """The program's agent classes (a yld may wait for one: `yld agent Host`)."""
    heard: tuple[str, ...] = ()
    """The text of the messages the turn brings (the user's reply, say), oldest first."""
    values_known: bool = False
    """Whether `values` holds the value of every variable that exists (the runtime), not none (`pal
    check-turn`): a variable the program set may then be restated only with its value."""
    evaluate: Evaluate | None = field(default=None, compare=False)
    """How the program's expressions are computed here (the runtime's evaluator); None: literals only."""
    program_variables: Mapping[str, str] = field(default_factory=dict)
    """Variables the program sets itself (parameters, computed assignments, results of calls the runtime
    makes), each with where: an answer writes one only where a step of the turn asks for it."""
    last_line: str | None = None
    """The line that ended the previous turn of this playbook (its question is answered now), if any."""
    participants: tuple[str, ...] = ()
    """In a meeting, who is in it (agent classes, `human` for the user): whom `Say("meeting @Name", ...)` may
    give the turn, and what a chair's speaker choice names. Empty: not known (not checked)."""

    def callee(self, name: str) -> Callee | None:
        """What `name` calls, or None when it is not callable from here."""
        found = self.callees.get(name)
        if found is None:
            agent, dot, _ = name.rpartition(".")
            if dot and agent in self.open_agents:
                return Callee(name=name, kind=CalleeKind.REMOTE)
        return found

    def is_callable(self, name: str) -> bool:
        """Whether `name` can be called from here."""
        return self.callee(name) is not None

    def step_ref(self, line: str) -> StepRef:
        """The `Playbook:Line:Code` of a line of the running playbook."""
        step = self.flow.by_line[line]
        return StepRef(playbook=self.playbook.name, line=line, code=step.opcode)


def describe_turn(
    program: Program,
    agent: Agent,
    playbook: Playbook,
    line: str,
    *,
    flow: PlaybookFlow | None = None,
    playbooks: Iterable[Playbook] | None = None,
    other_playbooks: Mapping[str, Iterable[Playbook]] | None = None,
    variables: Mapping[str, str | None] | None = None,
    values: Mapping[str, JsonValue] | None = None,
    declared_types: Mapping[str, str] | None = None,
    in_meeting: bool = False,
    heard: Iterable[str] = (),
    evaluate: Evaluate | None = None,
    last_line: str | None = None,
    participants: Iterable[str] | None = None,
) -> TurnContext:
    """The TurnContext of `playbook` of `agent` at `line`.

    `playbooks` are the agent's playbooks as running (remote tools included once listed; default: the
    program's); `other_playbooks` the same for other agents by class name. `variables` are the variables
    that exist (default: every variable the agent names, see `agent_variables`); `declared_types` the
    types declared anywhere in the agent (default: from the program); `heard` the text of the messages the
    turn brings; `evaluate` how the program's expressions are computed (the runtime's evaluator; default:
    literals only); `last_line` the line that ended the previous turn; `participants` who is in the meeting
    the frame runs in (default, in a meeting playbook: its owner and its declared attendees)."""
    own = list(playbooks) if playbooks is not None else list(agent.playbooks)
    named = agent_variables(agent)
    known = dict(variables) if variables is not None else dict(named)
    for parameter in playbook.parameters:
        known.setdefault(parameter.name, parameter.type)
    types = dict(declared_types) if declared_types is not None else {k: v for k, v in named.items() if v}
    callees: dict[str, Callee] = {}
    triggers: dict[str, TriggerInfo] = {}
    for candidate in own:
        callees[candidate.name] = _callee(candidate.name, candidate, _own_kind(candidate))
        _add_triggers(triggers, candidate, candidate.name)
    open_agents: set[str] = set()
    for other in program.agents:
        if other.name == agent.name:
            continue
        listed = other_playbooks.get(other.name) if other_playbooks is not None else None
        if listed is None and other.metadata.remote is not None:
            open_agents.add(other.name)
        for candidate in listed if listed is not None else other.playbooks:
            if candidate.public or candidate.kind is PlaybookKind.REMOTE:
                qualified = f"{other.name}.{candidate.name}"
                callees[qualified] = _callee(qualified, candidate, CalleeKind.PUBLIC)
                _add_triggers(triggers, candidate, qualified)
    for name, builtin in BUILTINS.items():
        if builtin.kind is BuiltinKind.FORM or name in callees:
            continue
        callees[name] = Callee(
            name=name,
            kind=CalleeKind.BUILTIN,
            parameters=builtin.parameters,
            signature=builtin.signature,
            summary=builtin.summary,
            model_callable=builtin.model_callable,
        )
    return TurnContext(
        agent=agent.name,
        playbook=playbook,
        flow=flow if flow is not None else PlaybookFlow(playbook),
        current_line=line,
        variables=known,
        values=dict(values or {}),
        declared_types=types,
        callees=callees,
        open_agents=frozenset(open_agents),
        triggers=triggers,
        in_meeting=in_meeting,
        known_agents=frozenset(other.name for other in program.agents),
        heard=tuple(heard),
        values_known=values is not None,
        evaluate=evaluate,
        program_variables=_program_variables(agent, playbook),
        last_line=last_line,
        participants=tuple(participants)
        if participants is not None
        else _attendees(agent, playbook, in_meeting),
    )


def _attendees(agent: Agent, playbook: Playbook, in_meeting: bool) -> tuple[str, ...]:
    """Who a meeting playbook's meeting holds, as the program declares it (empty when it declares none)."""
    if not in_meeting:
        return ()
    declared = (*playbook.metadata.required_attendees, *playbook.metadata.optional_attendees)
    return (agent.name, *declared) if declared else ()


@per_node
def _program_variables(agent: Agent, playbook: Playbook) -> Mapping[str, str]:
    """The variables the program sets itself, over every playbook of the agent (variables are the agent's),
    with the running playbook's parameters."""
    steps = [step for candidate in agent.playbooks for step in candidate.all_steps()]
    if playbook not in agent.playbooks:
        steps.extend(playbook.all_steps())
    return MappingProxyType(program_variables(steps, [parameter.name for parameter in playbook.parameters]))


@per_node
def agent_variables(agent: Agent) -> Mapping[str, str | None]:
    """Every variable an agent's playbooks name (parameters, call results, assignments, `$x` in step
    text), with the type declared for it anywhere, or None (computed once per agent; read-only)."""
    found: dict[str, str | None] = {}

    def note(name: str, declared: str | None) -> None:
        if name != "__" and found.get(name) is None:
            found[name] = declared

    for playbook in agent.playbooks:
        for parameter in playbook.parameters:
            note(parameter.name, parameter.type)
        # Call results and assignments are written in the step text (`$x:int = Count()`): one collector.
        for name, declared in declared_variables(step.text for step in playbook.all_steps()).items():
            note(name, declared)
    return MappingProxyType(found)


def _own_kind(playbook: Playbook) -> CalleeKind:
    if playbook.kind is PlaybookKind.PYTHON:
        return CalleeKind.PYTHON
    if playbook.kind is PlaybookKind.REMOTE:
        return CalleeKind.REMOTE
    return CalleeKind.PLAYBOOK


def _callee(name: str, playbook: Playbook, kind: CalleeKind) -> Callee:
    from pal_core.writer import header

    summary = playbook.description.strip().split("\n", 1)[0] if playbook.description else ""
    metadata = playbook.metadata
    return Callee(
        name=name,
        kind=kind,
        parameters=tuple(parameter.name for parameter in playbook.parameters),
        signature=header(playbook).removeprefix("## ").replace(playbook.name, name, 1),
        summary=summary,
        model_callable=metadata.model_callable is not False,
        requires_approval=bool(metadata.requires_approval),
    )


def _add_triggers(triggers: dict[str, TriggerInfo], playbook: Playbook, callee: str) -> None:
    for trigger in playbook.triggers:
        ref = StepRef(playbook=callee, line=trigger.id, code=trigger.code)
        triggers[str(ref)] = TriggerInfo(ref=ref, text=trigger.text, callee=callee)
