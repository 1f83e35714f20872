"""What the importer reads out of a live ADK agent tree or workflow, before any PAL is written.

The reader fills these from the agents' own fields (`sub_agents`, `tools`, `instruction`, `output_key`,
callbacks, `max_iterations`, a workflow's `graph.nodes` and `graph.edges`); the writer only looks here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class AgentKind(StrEnum):
    """What an agent (or workflow) is, as far as the program it becomes is concerned."""

    LLM = "llm"
    """An LlmAgent: a playbook the model executes."""
    SEQUENTIAL = "sequential"
    """A SequentialAgent: its sub-agents in order."""
    PARALLEL = "parallel"
    """A ParallelAgent: its sub-agents on the same state, their events merged."""
    LOOP = "loop"
    """A LoopAgent: its sub-agents until one escalates or `max_iterations` is reached."""
    CUSTOM = "custom"
    """A BaseAgent subclass with its own `_run_async_impl`: run by ADK over the session."""
    WORKFLOW = "workflow"
    """A Workflow: its graph of nodes, edges and routes."""
    UNSUPPORTED = "unsupported"
    """Something the program cannot run (a diagnostic says why); it fails there at run time."""


class ToolKind(StrEnum):
    """How a tool of an LLM agent is called."""

    FUNCTION = "function"
    """A plain module-level function: a Python playbook bound to it by import path."""
    ADK = "adk"
    """A tool that needs ADK (a ToolContext, a BaseTool subclass): run by `CallTool` over the session."""
    AGENT = "agent"
    """An AgentTool: a call of the wrapped agent's public playbook in a session of its own."""
    UNSUPPORTED = "unsupported"
    """A built-in or external tool PAL cannot run: a playbook that fails with the diagnostic."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolParameter:
    """One argument the model fills in."""

    name: str
    """The argument's name."""
    type: str | None
    """Its PAL type (`str`, `int`, `list[str]`, ...), or None when untyped."""
    default: Any = None
    """Its default value (a JSON value), when it has one."""
    has_default: bool = False
    """Whether it may be left out."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A tool of an LLM agent."""

    name: str
    """The name the model calls it by, as ADK declares it."""
    kind: ToolKind
    """How it is called."""
    description: str = ""
    """Its description, as ADK gives it to the model."""
    parameters: tuple[ToolParameter, ...] = ()
    """The arguments the model fills in."""
    returns: str | None = None
    """The PAL type of its result, when known."""
    function: str | None = None
    """For FUNCTION: the function's import path (`module:qualname`)."""
    agent: Agent | None = None
    """For AGENT: the wrapped agent."""
    skip_summarization: bool = False
    """For AGENT: the AgentTool ends the calling agent's turn with its result."""
    long_running: bool = False
    """A long-running tool: its first result is said to the user, whose answer is the tool's result."""
    requires_approval: bool = False
    """`require_confirmation=True`: the model's call waits for the user's approval (PAL's approval path)."""
    confirms: bool = False
    """ADK's gate decides per call whether the user confirms (`require_confirmation` a function, a tool class's
    `check_require_confirmation`): CallTool asks the user then, before the tool runs."""
    asks_itself: bool = False
    """The tool asks for confirmation itself (`tool_context.request_confirmation`): its first result goes to
    the model, and the call is resumed with the user's answer after the agent's turn (`ResumeTools`)."""
    reason: str = ""
    """For UNSUPPORTED: why, as reported."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Edge:
    """One edge of a workflow graph."""

    source: str
    """The node it leaves (`__START__` for the start)."""
    target: str
    """The node it triggers."""
    routes: tuple[Any, ...] | None = None
    """The route values it is followed on; None for an edge that is always followed."""


class NodeKind(StrEnum):
    """What runs in a workflow node."""

    ADK = "adk"
    """A function node, a custom node or a custom agent: run by ADK (`RunNode`)."""
    AGENT = "agent"
    """An agent whose body is PAL steps (an LLM agent, a Sequential / Loop / Parallel agent) or a
    nested workflow: a call of its public playbook."""
    JOIN = "join"
    """A JoinNode: waits for its predecessors and passes on their outputs by name."""
    UNSUPPORTED = "unsupported"
    """A node the program cannot run."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """One node of a workflow."""

    name: str
    """Its name in the graph."""
    kind: NodeKind
    """What runs in it."""
    path: str
    """Names from the root to it, joined by `/` (how the helpers find it again)."""
    agent: Agent | None = None
    """For AGENT: the agent or nested workflow."""
    asks_user: bool = False
    """Whether its function yields a `RequestInput` (a wait for the user)."""
    reason: str = ""
    """For UNSUPPORTED: why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Workflow:
    """A Workflow's graph."""

    nodes: dict[str, Node]
    """Nodes by name, in graph order (START left out)."""
    edges: tuple[Edge, ...]
    """Edges in graph order."""

    def out_edges(self, node: str) -> tuple[Edge, ...]:
        """The edges leaving `node`, in graph order."""
        return tuple(edge for edge in self.edges if edge.source == node)

    def in_edges(self, node: str) -> tuple[Edge, ...]:
        """The edges entering `node`, in graph order."""
        return tuple(edge for edge in self.edges if edge.target == node)


@dataclass(frozen=True, slots=True, kw_only=True)
class Agent:
    """One ADK agent (or workflow), as the program expresses it."""

    name: str
    """Its ADK name."""
    path: str
    """Names from the root to it, joined by `/`."""
    kind: AgentKind
    """What it is."""
    adk_class: str
    """Its class, `module.Class`, for the program's metadata."""
    description: str = ""
    """Its ADK description."""
    children: tuple[Agent, ...] = ()
    """Its sub-agents, in order."""
    callbacks: tuple[str, ...] = ()
    """`before` and / or `after`: agent callbacks run around a body of PAL steps."""
    max_iterations: int | None = None
    """LOOP: the iteration limit (None: until an escalation)."""
    instruction: str | None = None
    """LLM: the instruction template (global and static instruction before it), when it is text."""
    dynamic_instruction: str = ""
    """LLM: when the instruction is computed at run time, what computes it (for the description)."""
    tools: tuple[Tool, ...] = ()
    """LLM: its tools."""
    output_key: str | None = None
    """LLM: the state key its reply is written to."""
    output_schema: dict[str, Any] | None = None
    """LLM: the JSON Schema of its reply (ADK's `output_schema`, a pydantic model): the reply is a JSON object
    of it."""
    include_contents: str = "default"
    """LLM: `default` (the conversation) or `none` (the user's message only)."""
    transfer_targets: tuple[str, ...] = ()
    """LLM: names of the agents it may transfer to, in ADK's order."""
    model: str = ""
    """LLM: the model it names in ADK (the PAL run uses its own model)."""
    workflow: Workflow | None = None
    """WORKFLOW: the graph."""
    reason: str = ""
    """UNSUPPORTED: why, as reported."""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    """Details for the program's metadata."""
