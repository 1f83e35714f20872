"""Checks above the steps: agents, playbooks, parameters, metadata, triggers, notes and calls."""

from __future__ import annotations

import keyword
import re
from collections.abc import Sequence

from pal_core.ir import (
    MAX_STEP_DEPTH,
    TRIGGER_CODES,
    Agent,
    Note,
    Playbook,
    PlaybookKind,
    Program,
    Step,
    Trigger,
    too_deep,
)
from pal_core.remote_names import pal_name
from pal_core.validate import rules
from pal_core.validate.builtin_playbooks import is_builtin
from pal_core.validate.report import FindingReporter, Location, PythonDecorator, PythonDef
from pal_core.validate.steps import check_steps

EXECUTION_MODES = ("playbook", "react", "raw")
"""The values of a playbook's `execution_mode`."""
STARTUP_MODES = ("default", "standby")
"""The values of an agent's `startup_mode`."""
_PROMPT_MODES = frozenset({"react", "raw"})
_HUMAN_ATTENDEES = frozenset({"human", "user"})
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_PYTHON_BINDING_RE = re.compile(rf"{_DOTTED}:{_DOTTED}\Z")
# `Agent.tool-name(`: a name with `-` (or more dots) right before the call's parenthesis.
_DOTTED_CALL_RE = re.compile(
    r"(?<![\w.$])(?P<agent>[A-Z]\w*)\.(?P<tool>[A-Za-z0-9_]+(?:[-.][A-Za-z0-9_]+)*[-.][A-Za-z0-9_]+)\s*\("
)
_TRIGGER_CONDITION_CODES = frozenset({"CND", "EVT"})


def is_identifier(name: str) -> bool:
    """A name a call can use: a Python identifier that is not a keyword."""
    return name.isidentifier() and not keyword.iskeyword(name)


def check_program(program: Program, report: FindingReporter) -> None:
    """Report every problem of `program` above the level of single steps, and run the step checks."""
    if not program.agents:
        report.add(
            rules.NO_AGENTS, "the program defines no agent; start it with a '# AgentName' header", None
        )
        return
    agents: dict[str, Agent] = {}
    for agent in program.agents:
        if agent.name in agents:
            first = agents[agent.name].span
            where = f" (line {first.line})" if first is not None else ""
            report.add(
                rules.DUPLICATE_AGENT,
                f"agent {agent.name} is already defined{where}; rename one of them or merge them",
                agent.span,
            )
        else:
            agents[agent.name] = agent
    # Playbooks by name for every agent, built once so that resolving a call is a dict look-up.
    playbooks = {name: _index_playbooks(agent) for name, agent in agents.items()}
    for agent in program.agents:
        _AgentChecker(agent, agents, playbooks, report).run()


def _index_playbooks(agent: Agent) -> dict[str, Playbook]:
    index: dict[str, Playbook] = {}
    for playbook in agent.playbooks:
        index.setdefault(playbook.name, playbook)
    return index


class _AgentChecker:
    __slots__ = ("agent", "agents", "playbooks", "playbooks_of", "remote_agents", "report")

    def __init__(
        self,
        agent: Agent,
        agents: dict[str, Agent],
        playbooks_of: dict[str, dict[str, Playbook]],
        report: FindingReporter,
    ) -> None:
        self.agent = agent
        self.agents = agents
        self.playbooks_of = playbooks_of
        self.report = report
        self.playbooks: dict[str, Playbook] = {}
        self.remote_agents = frozenset(
            name for name, item in agents.items() if item.metadata.remote is not None
        )

    def run(self) -> None:
        agent = self.agent
        if not is_identifier(agent.name):
            self.report.add(
                rules.BAD_AGENT_NAME,
                f"agent name {agent.name!r} is not an identifier; write it in CamelCase without spaces, "
                f"such as {camel_case(agent.name)}",
                agent.span,
            )
        mode = agent.metadata.startup_mode
        if mode is not None and mode not in STARTUP_MODES:
            self.report.add(
                rules.UNKNOWN_STARTUP_MODE,
                f"agent {agent.name} has startup_mode {mode!r}; use {' or '.join(STARTUP_MODES)}",
                agent.span,
            )
        for playbook in agent.playbooks:
            span = self.playbook_location(playbook)
            if playbook.name in self.playbooks:
                first = self.report.resolve(self.playbook_location(self.playbooks[playbook.name]))
                where = f" (line {first.line})" if first is not None else ""
                self.report.add(
                    rules.DUPLICATE_PLAYBOOK,
                    f"agent {agent.name} already has a playbook {playbook.name}{where}; rename one of them",
                    span,
                )
            else:
                self.playbooks[playbook.name] = playbook
        for playbook in agent.playbooks:
            self.check_playbook(playbook, self.playbook_location(playbook))

    def playbook_location(self, playbook: Playbook) -> Location:
        """The playbook's header, its `def` line for a Python playbook, or else the agent's header."""
        if playbook.span is not None:
            return playbook.span
        if playbook.code_block is not None:
            return PythonDef(name=playbook.name, agent=self.agent.span)
        return self.agent.span

    # --- one playbook ----------------------------------------------------------------------------

    def check_playbook(self, playbook: Playbook, span: Location) -> None:
        name = playbook.name
        if not is_identifier(name):
            self.report.add(
                rules.BAD_PLAYBOOK_NAME,
                f"playbook name {name!r} is not an identifier; write it in CamelCase without spaces, "
                f"such as {camel_case(name)}",
                span,
            )
        self.check_parameters(playbook, span)
        self.check_metadata(playbook, span)
        if (
            playbook.kind is PlaybookKind.MARKDOWN
            and not playbook.steps
            and playbook.metadata.execution_mode not in _PROMPT_MODES
            and not playbook.description.strip()
        ):
            self.report.add(
                rules.EMPTY_PLAYBOOK,
                f"playbook {name} has nothing to run: no steps, no description and no raw or react "
                "execution_mode; add a '### Steps' section or a prompt with execution_mode: raw",
                span,
            )
        _check_numbered(
            playbook.triggers,
            "T",
            "trigger",
            rules.TRIGGER_OUT_OF_SEQUENCE,
            rules.DUPLICATE_TRIGGER,
            name,
            span,
            self.report,
        )
        for trigger in playbook.triggers:
            self.check_trigger(trigger, self.trigger_location(trigger, span))
        _check_numbered(
            playbook.notes,
            "N",
            "note",
            rules.NOTE_OUT_OF_SEQUENCE,
            rules.DUPLICATE_NOTE,
            name,
            span,
            self.report,
        )
        deep = too_deep(playbook.steps)
        if deep is not None:
            # Built in code (the parser refuses such text): the step checks walk the tree recursively.
            step, depth = deep
            self.report.add(
                rules.TOO_DEEP,
                f"step nested {depth} levels deep in playbook {name}; steps nest at most {MAX_STEP_DEPTH} levels",
                step.span or span,
            )
            return
        for step in check_steps(playbook, self.report, span):
            self.check_call(step, span)
        if self.remote_agents:
            for step in playbook.all_steps():
                self.check_remote_names(step, span)

    @staticmethod
    def trigger_location(trigger: Trigger, playbook: Location) -> Location:
        """The trigger's line; for a Python playbook's trigger, where its decorator names it."""
        if trigger.span is not None:
            return trigger.span
        if isinstance(playbook, PythonDef):
            return PythonDecorator(function=playbook, text=f"{trigger.id}:{trigger.code}")
        return playbook

    def check_parameters(self, playbook: Playbook, span: Location) -> None:
        seen: set[str] = set()
        for parameter in playbook.parameters:
            if parameter.name in seen:
                self.report.add(
                    rules.DUPLICATE_PARAMETER,
                    f"playbook {playbook.name} has parameter ${parameter.name} more than once; remove or "
                    "rename the repeat",
                    span,
                )
                continue
            seen.add(parameter.name)
            if playbook.public and parameter.type is None:
                written = f"${parameter.name}" if playbook.code_block is None else parameter.name
                typed = f"${parameter.name}:str" if playbook.code_block is None else f"{parameter.name}: str"
                self.report.add(
                    rules.UNTYPED_PUBLIC_PARAMETER,
                    f"public playbook {playbook.name} has untyped parameter {written}; other agents and MCP "
                    f"clients see parameter types, so declare one, as in {typed}",
                    span,
                    token=written,
                )

    def check_metadata(self, playbook: Playbook, span: Location) -> None:
        metadata = playbook.metadata
        mode = metadata.execution_mode
        if mode is not None and mode not in EXECUTION_MODES:
            self.report.add(
                rules.UNKNOWN_EXECUTION_MODE,
                f"playbook {playbook.name} has execution_mode {mode!r}; use {', '.join(EXECUTION_MODES)}",
                span,
            )
        if metadata.python is not None and not _PYTHON_BINDING_RE.match(metadata.python):
            self.report.add(
                rules.BAD_PYTHON_BINDING,
                f"playbook {playbook.name} has python: {metadata.python!r}; write the import path as "
                "module.path:function_name",
                span,
            )
        if metadata.python is not None and playbook.steps:
            self.report.add(
                rules.STEPS_WITH_PYTHON_BINDING,
                f"playbook {playbook.name} has steps and python: {metadata.python!r}; the function would run "
                "and the steps never: remove the steps (the function is the playbook) or the binding",
                span,
            )
        for attendee in (*metadata.required_attendees, *metadata.optional_attendees):
            if attendee not in self.agents and attendee.lower() not in _HUMAN_ATTENDEES:
                self.report.add(
                    rules.UNKNOWN_ATTENDEE,
                    f"meeting {playbook.name} invites {attendee}, which is not an agent of this program; "
                    "define the agent or fix the name",
                    span,
                )

    def check_trigger(self, trigger: Trigger, span: Location) -> None:
        if trigger.code not in TRIGGER_CODES:
            upper = trigger.code.upper()
            hint = f"did you mean {upper!r}?" if upper in TRIGGER_CODES else "use BGN, CND or EVT"
            self.report.add(
                rules.UNKNOWN_TRIGGER_CODE,
                f"trigger {trigger.id} has unknown code {trigger.code!r}; {hint}",
                span,
                token=trigger.code,
            )
        elif trigger.code in _TRIGGER_CONDITION_CODES and not trigger.text.strip():
            self.report.add(
                rules.TRIGGER_WITHOUT_CONDITION,
                f"trigger {trigger.id}:{trigger.code} says nothing about when it fires; write the condition, "
                f"as in '{trigger.id}:{trigger.code} When the user asks for a refund'",
                span,
            )

    # --- calls -----------------------------------------------------------------------------------

    def check_call(self, step: Step, fallback: Location) -> None:
        call = step.call
        if call is None:
            return
        span = step.span or fallback
        agent_name = call.agent
        playbook_name = call.playbook
        if agent_name is None or agent_name == self.agent.name:
            if playbook_name in self.playbooks or is_builtin(playbook_name):
                return
            self.report.add(
                rules.UNKNOWN_PLAYBOOK,
                f"step {step.line} calls {call.name}, which is neither a playbook of agent {self.agent.name} "
                f"nor a builtin{self.elsewhere_hint(playbook_name)}",
                span,
                token=call.name,
            )
            return
        target = self.agents.get(agent_name)
        if target is None:
            # `math.floor($x)` in an expression is Python, not a call to an agent: agents are CamelCase.
            if agent_name[:1].isupper():
                self.report.add(
                    rules.UNKNOWN_AGENT,
                    f"step {step.line} calls {call.name}, but there is no agent {agent_name} in this program; "
                    "define the agent or fix the name",
                    span,
                    token=call.name,
                )
            return
        if target.metadata.remote is not None:
            return  # a remote agent's playbooks are only known once it is reached
        playbook = self.playbooks_of[agent_name].get(playbook_name)
        if playbook is None:
            self.report.add(
                rules.UNKNOWN_AGENT_PLAYBOOK,
                f"step {step.line} calls {call.name}, but agent {agent_name} has no playbook {playbook_name}",
                span,
                token=call.name,
            )
        elif not playbook.public:
            self.report.add(
                rules.PRIVATE_AGENT_PLAYBOOK,
                f"step {step.line} calls {call.name}, which is not public, so other agents cannot call it; "
                f"mark it with 'public: true' metadata (or @playbook(public=True))",
                span,
                token=call.name,
            )

    def check_remote_names(self, step: Step, fallback: Location) -> None:
        """`Everything.get-sum(...)`: a remote agent's tool written by its own name, which PAL reads as a
        subtraction; the tool's PAL name is `get_sum` (pal_core.remote_names)."""
        if "." not in step.text or "(" not in step.text:
            return
        for match in _DOTTED_CALL_RE.finditer(step.text):
            agent_name, tool = match.group("agent"), match.group("tool")
            if agent_name not in self.remote_agents:
                continue
            self.report.add(
                rules.REMOTE_TOOL_NAME,
                f"step {step.line} writes {agent_name}.{tool}(...), but PAL reads '{tool}' as an expression; "
                f"remote tools are called by their PAL names: {agent_name}.{pal_name(tool)}(...)",
                step.span or fallback,
                token=f"{agent_name}.{tool}",
            )

    def elsewhere_hint(self, playbook_name: str) -> str:
        """`; did you mean Other.Name?` when another agent has a public playbook of that name."""
        for agent_name, playbooks in self.playbooks_of.items():
            candidate = playbooks.get(playbook_name)
            if agent_name != self.agent.name and candidate is not None and candidate.public:
                return f"; did you mean {agent_name}.{playbook_name}?"
        return "; define it, or fix the name"


def _check_numbered(
    items: Sequence[Trigger] | Sequence[Note],
    prefix: str,
    noun: str,
    out_of_sequence: rules.Rule,
    duplicate: rules.Rule,
    playbook: str,
    fallback: Location,
    report: FindingReporter,
) -> None:
    """Ids must read `T1, T2, ...` (or `N1, ...`): unique, in order, without gaps."""
    seen: set[str] = set()
    expected = 1
    for item in items:
        span = item.span or fallback
        if item.id in seen:
            report.add(
                duplicate,
                f"playbook {playbook} already has a {noun} {item.id}; number {noun}s {prefix}1, {prefix}2, ...",
                span,
            )
            continue
        seen.add(item.id)
        digits = item.id[len(prefix) :]
        number = int(digits) if item.id.startswith(prefix) and digits.isdigit() else None
        if item.id != f"{prefix}{expected}":
            report.add(
                out_of_sequence,
                f"{noun} {item.id} is out of sequence: expected {prefix}{expected}; number {noun}s "
                f"{prefix}1, {prefix}2, ... in order",
                span,
            )
        expected = number + 1 if number is not None else expected + 1


def camel_case(name: str) -> str:
    """A suggestion for a name that is not an identifier: `Greet the user` -> `GreetTheUser`."""
    words = re.findall(r"[A-Za-z0-9]+", name)
    suggestion = "".join(word[:1].upper() + word[1:] for word in words)
    if not suggestion or suggestion[0].isdigit() or keyword.iskeyword(suggestion):
        suggestion = f"My{suggestion}" if suggestion else "MyName"
    return suggestion
