"""Writing the PAL program of an ADK agent tree: one PAL agent per ADK agent (or workflow).

Every agent gets a public `Run($session:dict) -> dict` that runs it on a session and returns the session
after it; the root's agent also gets `Invoke($message, $state)` (trigger BGN), which starts the session,
runs the root and returns `{"state": ..., "reply": ...}`. Agents are PAL agents (not nested playbooks)
because PAL variables belong to an agent: an agent's `$session`, `$reply` or loop counter must not be
overwritten by the agents it calls, and an LLM agent's tools read and write its own `$session`.

The body of `Run` depends on the kind: a Sequential agent calls its sub-agents' `Run` in order; a Loop
agent does so in a `While` until an event escalates or `max_iterations`; a Parallel agent queues its
sub-agents' calls on the same session and merges their events (`MergeBranches`); a custom agent is run
by ADK (`RunAgent`); an LLM agent fills its instruction from the state, asks the model (`Respond`, a
react playbook whose callable playbooks are its tools and `TransferToAgent`), follows a transfer or
writes its reply (`AgentReply`); a workflow's steps are written by `_workflow_steps`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from importers.adk import support as adk_support
from importers.adk._model import Agent, AgentKind, Tool, ToolParameter
from importers.common.diagnostics import Findings
from importers.common.emit import AgentParts, SupportModule
from importers.common.naming import Namer, camel_case, safe_description
from importers.common.steps import StepList, literal
from pal_core.ir import Metadata, Parameter, Playbook, Program, Trigger

ENTRY_PLAYBOOK = "Invoke"
"""The root's entry: a user message and an initial state in, `{"state", "reply"}` out."""
AGENT_PLAYBOOK = "Run"
"""Every agent's public playbook: a session in, the session after the agent out."""
RESPOND_PLAYBOOK = "Respond"
"""An LLM agent's react playbook: the model's turn."""
TRANSFER_PLAYBOOK = "TransferToAgent"
"""An LLM agent's transfer tool."""
DONE = "done"
"""The label of the steps that end a `Run` (the after-agent callback, then RET)."""
SUPPORT = SupportModule(
    adk_support, name="adk", reserved=(ENTRY_PLAYBOOK, AGENT_PLAYBOOK, RESPOND_PLAYBOOK, TRANSFER_PLAYBOOK)
)
"""Where the helper playbooks are bound. An agent's `main` playbooks are `Invoke`, `Run` and `Respond`;
its other playbooks are its tools and transfers."""


def walk(agent: Agent) -> Iterator[Agent]:
    """`agent` and every agent under it: sub-agents, AgentTool agents and workflow node agents."""
    yield agent
    for child in agent.children:
        yield from walk(child)
    for tool in agent.tools:
        if tool.agent is not None:
            yield from walk(tool.agent)
    if agent.workflow is not None:
        for node in agent.workflow.nodes.values():
            if node.agent is not None:
                yield from walk(node.agent)


class ProgramWriter:
    """Writes every agent of a tree; `source` is where the tree is found again at run time."""

    __slots__ = ("by_adk_name", "findings", "names", "parts", "source")

    def __init__(self, findings: Findings, source: str | None) -> None:
        self.findings = findings
        self.source = source
        self.names: dict[str, str] = {}
        self.by_adk_name: dict[str, Agent] = {}
        self.parts: list[AgentParts] = []

    def write(self, root: Agent) -> Program:
        namer = Namer()
        for agent in walk(root):
            self.names[agent.path] = namer.take(camel_case(agent.name), "Agent")
            self.by_adk_name.setdefault(agent.name, agent)
        for agent in walk(root):
            self.agent(agent, root=agent is root)
        return Program(agents=tuple(part.build() for part in self.parts))

    def source_literal(self) -> str:
        return literal(self.source or "")

    # --- one agent -------------------------------------------------------------------------------

    def agent(self, agent: Agent, *, root: bool) -> None:
        details: dict[str, Any] = {"agent": agent.name, "class": agent.adk_class}
        if agent.path != agent.name:
            details["path"] = agent.path
        if agent.model:
            details["model"] = agent.model
        if root and self.source:
            details["source"] = self.source
        parts = AgentParts(
            name=self.names[agent.path],
            description=_agent_description(agent, root=root, source=self.source),
            metadata=Metadata(extra={"adk": details}),
            support=SUPPORT,
        )
        self.parts.append(parts)
        if root:
            parts.main.append(self._invoke(parts))
        parts.main.append(self._run(agent, parts))

    def _invoke(self, parts: AgentParts) -> Playbook:
        steps = StepList()
        steps.add("EXE", f"$session:dict = {parts.helper('start_session')}(message=$message, state=$state)")
        steps.add("EXE", f"$session:dict = {AGENT_PLAYBOOK}(session=$session)")
        steps.add("EXE", f"$result:dict = {parts.helper('finish_session')}(session=$session)")
        steps.add("RET", "$result")
        return Playbook(
            name=ENTRY_PLAYBOOK,
            parameters=(
                Parameter(name="message", type="str", default='""'),
                Parameter(name="state", type="dict", default="None"),
            ),
            returns="dict",
            description=(
                "Runs the agent on the user's `$message` with the initial session `$state`, as ADK's Runner "
                'does, and returns `{"state": <the final session state>, "reply": <the final reply text>}`.'
            ),
            triggers=(Trigger(id="T1", code="BGN", text="At the beginning"),),
            steps=steps.build(),
        )

    def _run(self, agent: Agent, parts: AgentParts) -> Playbook:
        steps = StepList()
        callbacks = agent.callbacks if agent.kind is not AgentKind.CUSTOM else ()
        if "before" in callbacks:
            self._callback(steps, agent, parts, "before")
        parameters: tuple[Parameter, ...] = (Parameter(name="session", type="dict"),)
        if agent.kind is AgentKind.WORKFLOW:
            from importers.adk._workflow_steps import WorkflowSteps

            WorkflowSteps(self, agent, parts, steps).write()
            parameters = (
                *parameters,
                Parameter(name="node_input", type="Any", default="None"),
                Parameter(name="from_message", type="bool", default="True"),
            )
        else:
            self._body(agent, parts, steps)
        steps.label(DONE)
        if "after" in callbacks:
            self._callback(steps, agent, parts, "after")
        steps.add("RET", "$session")
        return Playbook(
            name=AGENT_PLAYBOOK,
            parameters=parameters,
            returns="dict",
            description=_run_description(agent),
            metadata=Metadata(public=True),
            steps=steps.build(),
        )

    def _callback(self, steps: StepList, agent: Agent, parts: AgentParts, when: str) -> None:
        helper = parts.helper("agent_callback")
        steps.add(
            "EXE",
            f"$callback:dict = {helper}(session=$session, source={self.source_literal()}, "
            f"path={literal(agent.path)}, when={literal(when)})",
        )
        steps.add("EXE", '$session:dict = $callback["session"]')
        if when == "before":
            body = StepList()
            body.add("RET", "$session")
            steps.branch('If $callback["skip"] == True', body)

    def call(self, agent: Agent) -> str:
        """How a step calls `agent`'s Run."""
        return f"{self.names[agent.path]}.{AGENT_PLAYBOOK}"

    # --- bodies ----------------------------------------------------------------------------------

    def _body(self, agent: Agent, parts: AgentParts, steps: StepList) -> None:
        kind = agent.kind
        if kind is AgentKind.SEQUENTIAL:
            for child in agent.children:
                steps.add("EXE", f"$session:dict = {self.call(child)}(session=$session)")
        elif kind is AgentKind.LOOP:
            self._loop(agent, parts, steps)
        elif kind is AgentKind.PARALLEL:
            self._parallel(agent, parts, steps)
        elif kind is AgentKind.CUSTOM:
            steps.add(
                "EXE",
                f"$session:dict = {parts.helper('run_agent')}(session=$session, source={self.source_literal()}, "
                f"path={literal(agent.path)})",
            )
        elif kind is AgentKind.LLM:
            from importers.adk._llm import LlmWriter

            LlmWriter(self, agent, parts).write(steps)
        else:
            arguments = f"subject={literal(f'agent {agent.name!r}')}, reason={literal(agent.reason)}"
            steps.add("EXE", f"{parts.helper('unsupported')}({arguments})")

    def _loop(self, agent: Agent, parts: AgentParts, steps: StepList) -> None:
        steps.add("EXE", "$iteration:int = 0")
        condition = (
            "While True" if agent.max_iterations is None else f"While $iteration < {agent.max_iterations}"
        )
        body = StepList()
        for child in agent.children:
            body.add("EXE", f"$mark:int = {parts.helper('event_count')}(session=$session)")
            body.add("EXE", f"$session:dict = {self.call(child)}(session=$session)")
            body.add("EXE", f"$escalated:bool = {parts.helper('escalated')}(session=$session, since=$mark)")
            leave = StepList()
            leave.jump(DONE)
            body.branch("If $escalated == True", leave)
        body.add("EXE", "$iteration:int = $iteration + 1")
        body.jump("loop")
        steps.label("loop")
        steps.branch(condition, body)

    def _parallel(self, agent: Agent, parts: AgentParts, steps: StepList) -> None:
        variables = []
        for index, child in enumerate(agent.children, start=1):
            variable = f"$branch{index}"
            variables.append(variable)
            steps.add("QUE", f"{variable}:dict = {self.call(child)}(session=$session)")
        if not variables:
            return
        steps.add("YLD", "call")
        steps.add("EXE", f"$branches:list = [{', '.join(variables)}]")
        names = literal([child.name for child in agent.children])
        steps.add(
            "EXE",
            f"$session:dict = {parts.helper('merge_branches')}(session=$session, branches=$branches, agents={names})",
        )


# --- tools -----------------------------------------------------------------------------------------


def tool_parameters(tool: Tool) -> tuple[Parameter, ...]:
    """The PAL parameters of a tool's playbook: required ones first, as a header must list them."""
    ordered = sorted(tool.parameters, key=lambda parameter: parameter.has_default)
    return tuple(_parameter(parameter) for parameter in ordered)


def _parameter(parameter: ToolParameter) -> Parameter:
    default = None
    if parameter.has_default:
        try:
            default = literal(parameter.default)
        except ValueError:
            default = "None"
    return Parameter(name=parameter.name, type=parameter.type, default=default)


def _agent_description(agent: Agent, *, root: bool, source: str | None) -> str:
    kind = {
        AgentKind.LLM: "LLM agent",
        AgentKind.SEQUENTIAL: "sequential agent",
        AgentKind.PARALLEL: "parallel agent",
        AgentKind.LOOP: "loop agent",
        AgentKind.CUSTOM: "custom agent",
        AgentKind.WORKFLOW: "workflow",
        AgentKind.UNSUPPORTED: "agent",
    }[agent.kind]
    where = f" from `{source}`" if root and source else ""
    text = f"Google ADK {kind} `{agent.name}`, imported{where} by `pal import adk`."
    if agent.description:
        text += f" {agent.description.strip()}"
    return safe_description(text)


def _run_description(agent: Agent) -> str:
    kind = agent.kind
    if kind is AgentKind.SEQUENTIAL:
        return "Runs the sub-agents in order on the session and returns the session after them."
    if kind is AgentKind.LOOP:
        limit = (
            "until one escalates"
            if agent.max_iterations is None
            else (f"until one escalates, at most {agent.max_iterations} times")
        )
        return f"Runs the sub-agents in order, again and again {limit}, as ADK's LoopAgent does."
    if kind is AgentKind.PARALLEL:
        return (
            "Runs every sub-agent on the same session and merges their events in ADK's order (the first event "
            "of each, then the second ...), stopping at an escalation by one of them."
        )
    if kind is AgentKind.CUSTOM:
        return "Runs the agent's own `_run_async_impl` in ADK over the session, applying each event's state delta."
    if kind is AgentKind.LLM:
        return (
            "One turn of the LLM agent: its instruction is filled from the session state, the model answers "
            "(Respond), calling its tools or transferring to another agent, and the reply is added to the session."
        )
    if kind is AgentKind.WORKFLOW:
        return (
            "Runs the workflow's graph on the session: each node on the output of the node before it (the user's "
            "message after START), following the edges and the routes nodes emit."
        )
    return "Fails: the import could not express this agent (see the diagnostic)."


__all__ = [
    "AGENT_PLAYBOOK",
    "DONE",
    "ENTRY_PLAYBOOK",
    "RESPOND_PLAYBOOK",
    "SUPPORT",
    "TRANSFER_PLAYBOOK",
    "ProgramWriter",
    "tool_parameters",
    "walk",
]
