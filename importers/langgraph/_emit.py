"""Writing the PAL program of a graph model: one agent per graph, and the agents' playbooks.

Every graph is an agent: the imported graph (its `Invoke` playbook has the BGN trigger), each compiled
subgraph of plain nodes (its `Invoke` is public and called as `<Agent>.Invoke(input=$state)`), and each
LLM agent (a react playbook `Run` holding the prompt, its tools as Python playbooks). Subgraphs are
agents rather than nested playbooks because PAL variables belong to an agent: a subgraph's `$state`
must not overwrite its parent's. The steps of an `Invoke` playbook are written by `_graph_steps`.
"""

from __future__ import annotations

from typing import Any

from importers.common.diagnostics import Findings
from importers.common.emit import AgentParts, SupportModule, numbered_notes, tool_playbook
from importers.common.naming import Namer, camel_case, safe_description
from importers.common.steps import StepList, literal
from importers.langgraph import support as langgraph_support
from importers.langgraph._model import Graph, LlmAgent
from pal_core.ir import Agent, Metadata, Parameter, Playbook, Program

ENTRY_PLAYBOOK = "Invoke"
"""The playbook that runs a graph from its input state to its output state."""
AGENT_PLAYBOOK = "Run"
"""The react playbook of an LLM agent."""
SUPPORT = SupportModule(langgraph_support, name="langgraph", reserved=(ENTRY_PLAYBOOK, AGENT_PLAYBOOK))
"""Where the helper playbooks are bound. An agent's `main` playbooks are `Invoke` and, for an LLM agent,
`Run`; its other playbooks are its nodes, routers, tools and hand-offs."""


def build_program(graph: Graph, findings: Findings) -> Program:
    """The PAL program of `graph`."""
    writer = ProgramWriter(findings)
    return Program(agents=writer.write(graph))


class ProgramWriter:
    __slots__ = ("agent_names", "agents", "findings", "llm_agents")

    def __init__(self, findings: Findings) -> None:
        self.findings = findings
        self.agent_names = Namer()
        self.agents: list[AgentParts] = []
        self.llm_agents: dict[int, str] = {}

    def write(self, graph: Graph) -> tuple[Agent, ...]:
        self.graph_agent(graph, scope="", top_level=True)
        return tuple(agent.build() for agent in self.agents)

    def graph_agent(self, graph: Graph, *, scope: str, top_level: bool) -> str:
        """The agent of a graph: the imported one (top level) or a subgraph; returns its name."""
        from importers.langgraph._graph_steps import GraphSteps

        parts = AgentParts(
            name=self.agent_names.take(camel_case(graph.name), "Graph"),
            description=_graph_description(graph, top_level=top_level),
            metadata=_graph_metadata(graph),
            support=SUPPORT,
        )
        self.agents.append(parts)
        if graph.agent is not None:
            self._agent_playbooks(graph.agent, parts, public=False)
        entry = GraphSteps(self, parts, graph, scope=scope).write(ENTRY_PLAYBOOK, top_level=top_level)
        parts.main.insert(0, entry)
        return parts.name

    def llm_agent(self, agent: LlmAgent) -> str:
        """The name of the PAL agent for an LLM agent node, building it on first use."""
        known = self.llm_agents.get(id(agent))
        if known is not None:
            return known
        parts = AgentParts(
            name=self.agent_names.take(camel_case(agent.name), "Agent"),
            description=_agent_description(agent),
            metadata=Metadata(extra={"langgraph": {"agent": agent.name, "factory": agent.factory.value}}),
            support=SUPPORT,
        )
        self.llm_agents[id(agent)] = parts.name
        self.agents.append(parts)
        self._agent_playbooks(agent, parts, public=True)
        return parts.name

    def _agent_playbooks(self, agent: LlmAgent, parts: AgentParts, *, public: bool) -> None:
        notes = [
            'The conversation is $state["messages"]; answer its last message, calling this agent\'s playbooks '
            "when they help.",
            'Return the state update {"messages": [<your reply>]}.',
        ]
        if agent.handoffs:
            notes.append(
                "To hand the conversation to another agent, call its TransferTo playbook and return the Command "
                "it returns."
            )
        parts.main.append(
            Playbook(
                name=AGENT_PLAYBOOK,
                parameters=(Parameter(name="state", type="dict"),),
                returns="dict",
                description=safe_description(agent.prompt or ""),
                # Public for the graph that calls it; not a tool of its own when the program is served.
                metadata=Metadata(
                    public=True if public else None,
                    execution_mode="react",
                    extra={"mcp": {"tool": False}} if public else {},
                ),
                notes=numbered_notes(notes),
            )
        )
        for tool in agent.tools:
            parts.playbooks.append(tool_playbook(tool, name=parts.namer.take(camel_case(tool.name), "Tool")))
        for handoff in agent.handoffs:
            steps = StepList()
            arguments = f"agent={literal(handoff.destination)}"
            if handoff.update:
                arguments += f", update={literal(handoff.update)}"
            steps.add("EXE", f"$command = {parts.helper('handoff')}({arguments})")
            steps.add("RET", "$command")
            parts.playbooks.append(
                Playbook(
                    name=parts.namer.take(camel_case(handoff.name), "Handoff"),
                    returns="Command",
                    description=safe_description(handoff.description)
                    or f"Hand the conversation to agent {handoff.destination!r}.",
                    steps=steps.build(),
                )
            )


def _graph_description(graph: Graph, *, top_level: bool) -> str:
    where = f"`{graph.source}`" if graph.source else f"`{graph.name}`"
    if not top_level:
        return (
            f"LangGraph subgraph `{graph.name}`, imported by `pal import langgraph` with the graph that uses it "
            f"as a node. {ENTRY_PLAYBOOK} runs it on its parent's state and returns its output, which the "
            "parent applies as the node's update."
        )
    if graph.agent is not None:
        return (
            f"LangGraph agent `{graph.agent.name}`, built with {_factory(graph.agent)} and imported from {where} "
            f"by `pal import langgraph`. {AGENT_PLAYBOOK} is the agent: a model that answers the conversation "
            "in the state, calling its tools (the Python playbooks) until it is done. "
            f"{ENTRY_PLAYBOOK} runs it on an input state and returns the final state, as `graph.invoke` does."
        )
    return (
        f"LangGraph graph {where}, imported by `pal import langgraph`. {ENTRY_PLAYBOOK} runs it on an input "
        "state and returns the final state, as `graph.invoke` does: `$state` holds the graph state, each "
        "node is a playbook, and the steps follow the graph's edges one superstep at a time."
    )


def _graph_metadata(graph: Graph) -> Metadata:
    details: dict[str, Any] = {}
    if graph.source:
        details["graph"] = graph.source
    if graph.agent is not None:
        details["factory"] = graph.agent.factory.value
    return Metadata(extra={"langgraph": details}) if details else Metadata()


def _agent_description(agent: LlmAgent) -> str:
    return (
        f"LangGraph agent `{agent.name}`, built with {_factory(agent)} and imported by `pal import langgraph` "
        f"with the graph that uses it. {AGENT_PLAYBOOK} is the agent: a model that answers the conversation "
        "in the state it is given, calling its tools (the Python playbooks) until it is done, and returns "
        "its update to that state."
    )


def _factory(agent: LlmAgent) -> str:
    return f"`{agent.factory.value.rpartition('.')[2]}`"
