"""What one model turn of a markdown playbook may contain, worked out from the program.

A turn starts at the current line, executes steps along legal control-flow edges (pal_core.flow) and
ends with a `yld`. This module answers, for the grammar generator and the few-shot builder alike:
where may the turn start, after which steps may (or must) it end and with which `yld` words, which
steps may follow which within a bounded number of steps, and which variables (with which types),
callees and triggers the answer may name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from pal_core.contract import StepRef
from pal_core.contract.fixed import (
    asked_variables,
    computed_condition,
)
from pal_core.contract.turn import Callee, CalleeKind, TurnContext, describe_turn
from pal_core.errors import PalError
from pal_core.flow import END, EdgeKind, PlaybookFlow
from pal_core.ir import (
    ArgKind,
    Argument,
    Call,
    JsonValue,
    Opcode,
    Playbook,
    PlaybookKind,
    Program,
    Step,
    TriggerCode,
    YieldKind,
)

SPEECH = frozenset({"Say", "SendMessage"})
"""Builtins that speak: `Name(target, message)`, the message free text the model writes."""


class GrammarError(PalError):
    """No turn grammar can be built: an unknown agent, playbook or line, or a turn that would start on
    a step yielding to an unknown target (no answer can end there)."""


class ValueKind(StrEnum):
    """The JSON shape a variable's value must have, from its declared type."""

    STRING = "string"
    INTEGER = "integer"
    NUMBER = "number"
    BOOLEAN = "boolean"
    LIST = "list"
    OBJECT = "object"
    ANY = "any"


_TYPE_KINDS = {
    "str": ValueKind.STRING,
    "string": ValueKind.STRING,
    "int": ValueKind.INTEGER,
    "integer": ValueKind.INTEGER,
    "float": ValueKind.NUMBER,
    "number": ValueKind.NUMBER,
    "bool": ValueKind.BOOLEAN,
    "boolean": ValueKind.BOOLEAN,
    "list": ValueKind.LIST,
    "tuple": ValueKind.LIST,
    "set": ValueKind.LIST,
    "dict": ValueKind.OBJECT,
    "object": ValueKind.OBJECT,
}
_NO_VALUE_TYPES = frozenset({"None", "none", "NoneType"})
_VARIABLE = re.compile(r"\$([A-Za-z_]\w*)(?::([A-Za-z_]\w*(?:\[[^\]\n]*\])?))?")


def value_kind(type_text: str | None) -> ValueKind:
    """`str` -> STRING, `List[str]` -> LIST, `float` -> NUMBER; unknown or missing -> ANY."""
    if not type_text:
        return ValueKind.ANY
    head = type_text.split("[", 1)[0].strip().rpartition(".")[2]
    return _TYPE_KINDS.get(head.lower(), ValueKind.ANY)


def kind_of_value(value: JsonValue) -> ValueKind:
    """The kind of a current value (bool before int: JSON booleans are not numbers)."""
    if isinstance(value, bool):
        return ValueKind.BOOLEAN
    if isinstance(value, int):
        return ValueKind.INTEGER
    if isinstance(value, float):
        return ValueKind.NUMBER
    if isinstance(value, str):
        return ValueKind.STRING
    if isinstance(value, list):
        return ValueKind.LIST
    if isinstance(value, dict):
        return ValueKind.OBJECT
    return ValueKind.ANY


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnLimits:
    """Caps that keep a turn short and the grammar finite."""

    max_steps: int = 10
    """Steps per turn; raised for a turn whose nearest legal end is farther."""
    line_chars: int = 120
    """Characters of the recap and plan lines."""
    say_chars: int = 240
    """Characters of a Say message."""
    note_chars: int = 80
    """Characters of a step note (a CND's reason)."""
    summary_chars: int = 160
    """Characters of the `$__` return summary."""
    string_chars: int = 120
    """Characters of a string value (Var, Return, call argument)."""
    list_items: int = 8
    """Items of a list or entries of an object value."""
    leading_vars: int = 3
    """`Var[...]` lines before the first step (what the user just said, for instance)."""
    step_vars: int = 3
    """`Var[...]` lines after an EXE step."""

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"TurnLimits.{name} must be a positive integer, not {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class StepExit:
    """How a turn may end right after a step."""

    words: tuple[str, ...]
    """What may follow `yld ` (`user`, `call`, `return`, `exit`, `meeting`, `agent Name`)."""
    mandatory: bool
    """True when the turn must end here (a YLD, a RET, an inline `; YLD ...`, the last step)."""


def _yield_words(kind: YieldKind, name: str | None) -> tuple[str, ...]:
    if kind in (YieldKind.USER, YieldKind.CALL, YieldKind.RETURN, YieldKind.EXIT):
        return (kind.value,)
    if kind is YieldKind.MEETING:
        return (f"meeting {name}",) if name else ("meeting",)
    if kind is YieldKind.AGENT and name:
        return (f"agent {name}",)
    return ()


def returns_value(step: Step) -> bool:
    """Whether the step's line carries `Return[...]` and the `$__` summary: RET and `YLD return`."""
    if step.opcode == Opcode.RET:
        return True
    return (
        step.opcode == Opcode.YLD
        and step.yield_target is not None
        and step.yield_target.kind is YieldKind.RETURN
    )


def queues_call(step: Step) -> bool:
    """Whether the step queues a call whose result the runtime must produce (any callee but speech)."""
    return step.call is not None and step.call.name not in SPEECH and step.opcode in (Opcode.QUE, Opcode.EXE)


def writes_call(step: Step) -> bool:
    """Whether the answer writes the step's call on its line: speech anywhere, other calls on QUE and
    EXE steps only (the verifier allows no other call on TNK, CHK, ...)."""
    return step.call is not None and (step.call.name in SPEECH or step.opcode in (Opcode.QUE, Opcode.EXE))


def _dead_end(step: Step) -> bool:
    """A step that ends the turn with a yield no answer can name."""
    target = step.yield_target
    ends_turn = step.opcode == Opcode.YLD or target is not None
    return (
        step.opcode != Opcode.RET
        and ends_turn
        and (target is None or not _yield_words(target.kind, target.name))
    )


class TurnPlan:
    """The legal shapes of one turn: entries, exits, and which step may follow which.

    The rules are the verifier's (pal_core.contract.verify): steps follow flow edges from the current
    line; a YLD, a RET or an inline `; YLD ...` ends the turn with its own yield; `yld call` may end a
    turn after any other step (the runtime runs queued calls and asks again), which the grammar offers
    after a queued call and when the step budget is spent; `yld return` ends it where the playbook
    can end. A step whose yield target is unknown can end no turn, so no path enters it.
    """

    def __init__(
        self, context: TurnContext, *, limits: TurnLimits | None = None, resume_after: str | None = None
    ) -> None:
        self.context = context
        self.limits = limits or TurnLimits()
        self.resume_after = resume_after
        """The line executed last (a YLD, typically): the turn starts at any line that may follow it,
        instead of at the context's current line."""
        self.playbook = _markdown_playbook(context)
        self.flow = context.flow
        self.steps: dict[str, Step] = dict(self.flow.by_line)
        self.blocked = frozenset(line for line, step in self.steps.items() if _dead_end(step))
        """Lines whose yield target is unknown: no answer through them passes the verifier."""
        self.fixed = frozenset(line for line, step in self.steps.items() if self._runtime_step(step))
        """Lines the runtime executes itself (pal_core.contract.fixed): a turn pauses before them with
        `yld call`, and the runtime computes them; a turn starts at one only when the runtime could not."""
        self.exits: dict[str, StepExit | None] = {}
        self.continuations: dict[str, tuple[str, ...]] = {}
        for line, step in self.steps.items():
            targets = [
                target for target in self._targets(line) if target != END and target not in self.blocked
            ]
            following = tuple(target for target in targets if target not in self.fixed)
            self.continuations[line] = following
            self.exits[line] = self._exit(step, following, pauses=len(following) < len(targets))
        self.distance = self._distances()
        """Fewest steps from a line to a turn end the program itself calls for (math.inf: none)."""
        self.entries: tuple[str, ...] = self._entries()
        """Lines the turn may start at."""
        self.budget = self.limits.max_steps
        """The most steps a turn may execute."""
        self.variables = _variable_kinds(self.playbook, context.values, context.declared_types)
        """Every variable the answer may name, with the kind of value it holds."""
        asked: set[str] = set()
        if context.last_line is not None and context.last_line in self.steps:
            asked = asked_variables(self.steps[context.last_line])
        self.writable = tuple(
            name for name in self.variables if name not in context.program_variables or name in asked
        )
        """Variables a Var line before the first step may set: not the program's own (pal_core.contract.fixed),
        unless the step that ended the last turn asked for them."""
        self.existing = tuple(
            dict.fromkeys([*(parameter.name for parameter in self.playbook.parameters), *context.variables])
        )
        """Variables that exist now: what a call the answer chooses may pass as `$name`."""
        # What a step in words may call: the context's callees a model may call on its own, but for the
        # builtins (speech is written per step) and the running playbook (calling itself is a slip).
        self.callees: tuple[Callee, ...] = tuple(
            callee
            for callee in context.callees.values()
            if callee.kind is not CalleeKind.BUILTIN
            and callee.model_callable
            and callee.name != self.playbook.name
        )
        self.triggers: tuple[StepRef, ...] = tuple(
            info.ref
            for info in context.triggers.values()
            if info.ref.code in (TriggerCode.CND, TriggerCode.EVT)
        )

    def _targets(self, line: str) -> list[str]:
        return [edge.target for edge in self.flow.edges_from(line)]

    def _runtime_step(self, step: Step) -> bool:
        """Whether a turn pauses before the step for the runtime to decide it: a guard whose condition the
        program computes (the grammar cannot know its outcome: the turn's own steps may change what it
        reads). Values the program computes may be written (the runtime's value stands; the verifier
        replaces what differs), and calls are written exactly as the program writes them."""
        return computed_condition(step)

    def _exit(self, step: Step, following: tuple[str, ...], *, pauses: bool = False) -> StepExit | None:
        target = step.yield_target
        if step.opcode == Opcode.RET:
            return StepExit(words=("return",), mandatory=True)
        if target is not None:
            return StepExit(words=_yield_words(target.kind, target.name), mandatory=True)
        words: list[str] = []
        if queues_call(step) or pauses:
            words.append("call")  # the runtime runs the calls, or a step of its own, and asks again
        falls_off = any(
            edge.target == END and edge.kind is EdgeKind.RETURN for edge in self.flow.edges_from(step.line)
        )
        if falls_off:
            words.append("return")
        if not words:
            return None
        return StepExit(words=tuple(words), mandatory=not following)

    def _distances(self) -> dict[str, float]:
        ends = {line for line, exit_ in self.exits.items() if exit_ is not None and exit_.words}
        distance: dict[str, float] = {line: 1.0 if line in ends else math.inf for line in self.steps}
        changed = True
        while changed:
            changed = False
            for line in self.steps:
                if line in ends:
                    continue
                best = min((distance[target] for target in self.continuations[line]), default=math.inf)
                if best + 1 < distance[line]:
                    distance[line] = best + 1
                    changed = True
        return distance

    def _entries(self) -> tuple[str, ...]:
        name = self.playbook.name
        resume_after = self.resume_after
        if resume_after is not None:
            if resume_after not in self.steps:
                raise GrammarError(f"{name} has no line {resume_after}")
            entries: tuple[str, ...] = self.continuations[resume_after]
            if not entries:
                raise GrammarError(f"{name}: nothing follows line {resume_after}; the playbook is done")
        else:
            current = self.context.current_line
            if current not in self.steps:
                raise GrammarError(f"{name} has no line {current}")
            entries = (current,)
        usable = tuple(line for line in entries if line not in self.blocked)
        if not usable:
            target = self.steps[entries[0]].yield_target
            said = target.name if target is not None else ""
            raise GrammarError(
                f"{name}:{entries[0]} yields to {said!r}, which is no yield target "
                "(user, call, return, exit, meeting, agent <name>); no turn can end there"
            )
        return usable

    def next_lines(self, line: str, remaining: int) -> tuple[str, ...]:
        """Lines that may follow `line` in a turn with `remaining` steps left, `line` included."""
        exit_ = self.exits[line]
        if remaining <= 1 or (exit_ is not None and exit_.mandatory):
            return ()
        return self.continuations[line]

    def exit_words(self, line: str, remaining: int) -> tuple[str, ...]:
        """What may follow `yld ` right after `line` with `remaining` steps left, `line` included: the
        step's own yield, and `call` when the turn may pause here (the budget is spent, or nothing legal
        follows)."""
        exit_ = self.exits[line]
        words = list(exit_.words) if exit_ is not None else []
        pausable = exit_ is None or not exit_.mandatory
        if pausable and "call" not in words and (remaining <= 1 or not self.next_lines(line, remaining)):
            words.append("call")
        return tuple(words)

    def needed_first(self, line: str) -> tuple[str, ...]:
        """The `$variables` the call of `line` passes that do not exist yet: a turn starting there must set
        them (with `Var[...]` lines, from what the user just said) before the step can make its call."""
        step = self.steps[line]
        if step.call is None or not writes_call(step) or step.call.name in SPEECH:
            return ()
        names: list[str] = []
        for argument in step.call.arguments:
            name = str(argument.value)
            if argument.kind is ArgKind.VARIABLE and name not in self.existing and name not in names:
                names.append(name)
        return tuple(names)

    def mentioned(self, step: Step) -> tuple[str, ...]:
        """The variables the step's text names, in order of first mention."""
        names: list[str] = []
        for found in _VARIABLE.finditer(step.text):
            name = found.group(1)
            if name in self.variables and name not in names:
                names.append(name)
        return tuple(names)

    def declared_in(self, step: Step) -> tuple[str, ...]:
        """The variables the step's text declares with a type (`$countries:list`): what it produces."""
        names: list[str] = []
        for found in _VARIABLE.finditer(step.text):
            if found.group(2) and found.group(1) in self.variables and found.group(1) not in names:
                names.append(found.group(1))
        return tuple(names)

    def ref(self, line: str) -> StepRef:
        """The `Playbook:Line:Code` of a step."""
        return StepRef(playbook=self.playbook.name, line=line, code=self.steps[line].opcode)

    def return_kind(self) -> ValueKind | None:
        """The kind of the playbook's return value; None when it returns nothing (`-> None`)."""
        declared = self.playbook.returns
        if declared is not None and declared.strip() in _NO_VALUE_TYPES:
            return None
        return value_kind(declared)


def _markdown_playbook(context: TurnContext) -> Playbook:
    playbook = context.playbook
    if playbook.kind is not PlaybookKind.MARKDOWN or not playbook.steps:
        raise GrammarError(
            f"`{context.agent}.{playbook.name}` is not a markdown playbook with steps; only those run turn by turn"
        )
    return playbook


def local_context(
    program: Program,
    agent: str,
    playbook: str,
    *,
    current_line: str | None = None,
    variables: Mapping[str, JsonValue] | None = None,
    callees: tuple[str | Callee, ...] | None = None,
    triggers: tuple[StepRef, ...] | None = None,
) -> TurnContext:
    """The TurnContext of `agent.playbook` of a program at `current_line` (default: its first line), where
    `variables` exist with these values. `callees` / `triggers`, when given, keep only those names (as
    a run whose agent lists fewer tools would). Raises GrammarError for an unknown agent or playbook."""
    agent_ir = program.agent(agent)
    if agent_ir is None:
        known = ", ".join(candidate.name for candidate in program.agents) or "none"
        raise GrammarError(f"the program has no agent `{agent}` (agents: {known})")
    playbook_ir = next(
        (candidate for candidate in agent_ir.playbooks if candidate.name == playbook and candidate.steps),
        agent_ir.playbook(playbook),
    )
    if playbook_ir is None:
        known = ", ".join(candidate.name for candidate in agent_ir.playbooks) or "none"
        raise GrammarError(f"agent `{agent}` has no playbook `{playbook}` (playbooks: {known})")
    flow = PlaybookFlow(playbook_ir)
    values = dict(variables or {})
    context = describe_turn(
        program,
        agent_ir,
        playbook_ir,
        current_line or flow.first,
        flow=flow,
        variables=dict.fromkeys(values),  # no declared types: each kind is read from the value
        values=values,
    )
    if callees is not None:
        # Names keep the program's callees of that name; Callee objects stand for what a run would list
        # (a remote agent's tools, say).
        given = {callee.name: callee for callee in callees if isinstance(callee, Callee)}
        kept = {callee for callee in callees if isinstance(callee, str)}
        context = replace(
            context,
            callees={
                **{
                    name: callee
                    for name, callee in context.callees.items()
                    if name in kept or callee.kind is CalleeKind.BUILTIN
                },
                **given,
            },
        )
    if triggers is not None:
        kept_refs = {str(ref) for ref in triggers}
        context = replace(
            context, triggers={key: info for key, info in context.triggers.items() if key in kept_refs}
        )
    return context


def _variable_kinds(
    playbook: Playbook, values: Mapping[str, JsonValue], agent_types: Mapping[str, str]
) -> dict[str, ValueKind]:
    declared: dict[str, str | None] = {}

    def note(name: str, type_text: str | None) -> None:
        if name == "__":
            return
        if declared.get(name) is None:
            declared[name] = type_text

    for parameter in playbook.parameters:
        note(parameter.name, parameter.type)
    for step in playbook.all_steps():
        if step.call is not None and step.call.result is not None:
            note(step.call.result.name, step.call.result.type)
        if step.assignment is not None:
            note(step.assignment.target.name, step.assignment.target.type)
        for found in _VARIABLE.finditer(step.text):
            note(found.group(1), found.group(2))
    for name, type_text in agent_types.items():
        if name in declared or name in values:
            declared[name] = type_text
    kinds = {name: value_kind(type_text) for name, type_text in declared.items()}
    for name, value in values.items():
        if name == "__":
            continue
        if kinds.get(name, ValueKind.ANY) is ValueKind.ANY:
            kinds[name] = kind_of_value(value)
    return kinds


def say_target(call: Call) -> str:
    """`"user"` for `Say(user, ...)`, the literal for `Say("meeting 100", ...)`, `$x` for a variable."""
    if len(call.arguments) < 2:
        return '"user"'
    first = call.arguments[0]
    if first.kind is ArgKind.VARIABLE:
        return f"${first.value}"
    if first.kind is ArgKind.LITERAL and isinstance(first.value, str):
        return first.text
    word = first.text.strip().strip("'\"")
    return f'"{word}"' if word.isidentifier() else '"user"'


def argument_text(argument: Argument) -> str:
    """An argument as the answer writes it: `$name` for a variable (its type dropped), else as written."""
    if argument.kind is ArgKind.VARIABLE:
        return f"${argument.value}"
    return argument.text


def program_message(call: Call) -> bool:
    """Whether a speech call's message is the program's own (a literal or a `$variable`), not words."""
    return not call.natural and all(
        argument.kind in (ArgKind.LITERAL, ArgKind.VARIABLE)
        or (index == 0 and argument.kind is ArgKind.EXPRESSION and argument.text.isidentifier())
        for index, argument in enumerate(call.arguments)
    )
