"""What the importer reads out of a LangGraph builder, before any PAL is written.

The reader fills these from `StateGraph.nodes / edges / waiting_edges / branches / channels / schemas`
(never from `get_graph()`, which draws an edge to every node for Command routing it cannot see);
the flow analysis and the writer only look at these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

END = "__end__"
"""LangGraph's END."""
START = "__start__"
"""LangGraph's START."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Callee:
    """A Python callable the program calls by import path."""

    path: str | None
    """`module:qualname`; None when it has no import path (a diagnostic says why)."""
    name: str
    """Its `__name__`, for naming the playbook."""
    parameters: tuple[str, ...] = ()
    """Names of the parameters the program passes (the first one gets the state or a Send's arg)."""
    returns: str | None = None
    """The return annotation as text, when it has one."""
    description: str = ""
    """The first paragraph of its docstring."""
    function: Any = field(default=None, compare=False, repr=False)
    """The callable itself (not part of equality)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InputView:
    """How a node or router sees the state when that is not simply the whole state dict."""

    keys: tuple[str, ...] | None = None
    """Only these state keys (the node's input schema), or None for all of them."""
    model: str | None = None
    """Build this class (pydantic model or dataclass, by import path) from the keys."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Channel:
    """One state key."""

    key: str
    """The key."""
    type: str
    """Its annotation as text."""
    reducer: str | None = None
    """The reducer's import path, for a key with `Annotated[type, reducer]`."""
    initial: Any = None
    """The reducer channel's starting value when it is a JSON literal (`[]`, `{}`, `0`)."""
    has_initial: bool = False
    """Whether `initial` (or `factory`) applies."""
    factory: str | None = None
    """Import path of the type that makes the starting value when it is not a JSON literal."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentTool:
    """A tool of an LLM agent or a ToolNode: a playbook the model calls, whose call LangGraph's ToolNode runs."""

    name: str
    """The tool's name as the model calls it (and as LangGraph's messages name it)."""
    description: str
    """What it does, as the framework tells the model."""
    parameters: tuple[tuple[str, str | None], ...] = ()
    """(name, PAL type) of each argument the model fills in (injected ones are LangGraph's to pass)."""
    optional: frozenset[str] = frozenset()
    """The arguments that have a default."""
    path: str | None = None
    """The import path of the tool object (or plain function), when it has one."""


class AgentFactory(StrEnum):
    """Which prebuilt factory made an LLM agent graph."""

    REACT = "langgraph.prebuilt.create_react_agent"
    CREATE_AGENT = "langchain.agents.create_agent"
    HAND_WRITTEN = "a model node, a ToolNode and tools_condition"


@dataclass(frozen=True, slots=True, kw_only=True)
class LlmAgent:
    """An LLM agent graph (a model calling tools in a loop), imported as a PAL agent."""

    name: str
    """The graph's name (`create_react_agent(..., name=...)`), or the model node's."""
    factory: AgentFactory
    """Which factory built it."""
    prompt: str | None
    """The system prompt, when it is text."""
    tools: tuple[AgentTool, ...] = ()
    """Its tools, each a playbook."""
    tool_node: dict[str, Any] | None = None
    """Where its ToolNode is found at run time: `{"graph": "module:attr", "nodes": [...]}`, else
    `{"tools": [import paths]}`; None without tools."""
    messages_key: str = "messages"
    """The state key holding the conversation."""
    message_name: str | None = None
    """The name its AI messages carry (a named prebuilt agent names them); None for a model node's."""
    response_format: dict[str, Any] | None = None
    """create_agent's `response_format` as a typed return: `{"schema": "module:Class", "name", "json_schema",
    "tool_message"}`; None for a text reply."""
    reply_mode: str | None = None
    """For a supervisor's worker: `last_message` or `full_history` (langgraph-supervisor's output_mode)."""
    supervisor: str | None = None
    """For a supervisor's worker that hands back: the supervisor's node name."""


class NodeKind(StrEnum):
    """What runs in a node."""

    FUNCTION = "function"
    """A Python function, called by import path."""
    TOOLS = "tools"
    """A ToolNode: the last AI message's tool calls, each a call of a tool playbook."""
    SUBGRAPH = "subgraph"
    """A compiled graph of plain nodes: a nested playbook."""
    AGENT = "agent"
    """An LLM agent graph: its own PAL agent."""
    UNSUPPORTED = "unsupported"
    """Something the importer cannot call; a diagnostic explains and the program fails there at run time."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Router:
    """A conditional edge: a callable whose result names where to go next."""

    source: str
    """The node it runs after (START for a conditional entry point)."""
    callee: Callee | None
    """The router function; None for a recognised prebuilt router (`state_key`)."""
    ends: tuple[tuple[Any, str], ...] | None
    """(router result, node) pairs from the path map or a Literal return type; None when undeclared."""
    may_send: bool = False
    """Whether it may return `Send` packets."""
    view: InputView | None = None
    """How it sees the state, when not as the whole dict."""
    state_key: tuple[str, Any] | None = None
    """(key, default) for a router that returns `state.get(key, default)`."""
    several: bool = False
    """Whether it may name several destinations at once (a list of names, or `Send`s to several nodes):
    the next superstep then runs each of them."""
    send_targets: tuple[str, ...] | None = None
    """The nodes its `Send("node", ...)` calls name, when every one is a string literal in its code."""
    combinations: tuple[tuple[str, ...], ...] | None = None
    """For `several`: the destinations its code returns together (`return ["a", "b"]`), besides each one
    alone; None when any combination may come (a list built at run time, `Send`s)."""

    def targets(self, nodes: tuple[str, ...]) -> tuple[str, ...]:
        """The destinations, in declaration order; every node and END when undeclared (narrowed to the
        nodes its `Send`s name, for a router that only sends)."""
        if self.ends is None:
            if self.send_targets:
                return self.send_targets
            return (*nodes, END)
        return tuple(dict.fromkeys(target for _, target in self.ends))


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """One node of a graph."""

    name: str
    """The node's name in the graph."""
    kind: NodeKind
    """What runs in it."""
    callee: Callee | None = None
    """For FUNCTION: the function."""
    view: InputView | None = None
    """How it sees the state, when not as the whole dict."""
    subgraph: Graph | None = None
    """For SUBGRAPH: the graph."""
    agent: LlmAgent | None = None
    """For AGENT: the agent."""
    tools: tuple[AgentTool, ...] = ()
    """For TOOLS: the ToolNode's tools."""
    tool_node: dict[str, Any] | None = None
    """For TOOLS: where the ToolNode is found at run time (as `LlmAgent.tool_node`)."""
    messages_key: str = "messages"
    """For TOOLS: the state key of the messages."""
    command_ends: tuple[str, ...] = ()
    """Destinations of the `Command(goto=...)` it may return (annotation or `destinations=`; every node
    and END for a node annotated only `-> Command`)."""
    parallel_goto: bool = False
    """Whether its code writes `Command(goto=[...])` with several destinations at once."""
    goto_combinations: tuple[tuple[str, ...], ...] | None = None
    """For `parallel_goto`: the destinations its `Command(goto=[...])` lists name together; None when a
    list is built at run time (any combination)."""
    asks_human: bool = False
    """Whether it calls `interrupt()`."""
    injected: tuple[str, ...] = ()
    """The keyword arguments LangGraph passes it besides the state (`config`, `runtime`, `store`,
    `writer`, ...), as LangGraph's own RunnableCallable reads them from its signature."""
    reads_context: tuple[str, ...] = ()
    """LangGraph functions it calls to read its run from inside (`get_stream_writer`, `get_config`, ...)."""
    model: str | None = None
    """How it reaches a chat model it calls inside its Python (`the chat model llm`); None when it does not."""
    unsupported_reason: str = ""
    """For UNSUPPORTED: why, as reported."""


def runs_in_graph_run(node: Node) -> bool:
    """Whether a function node is run by `RunNode` with the graph's run (LangGraph's config, runtime,
    store, writer and served chat models) rather than called as a plain Python playbook."""
    return bool(node.injected or node.reads_context or node.model or node.asks_human)


@dataclass(frozen=True, slots=True, kw_only=True)
class Graph:
    """A StateGraph, as far as the importer reads it."""

    name: str
    """The graph's name (compiled name, or where it was found)."""
    source: str | None
    """The import target it was read from, when known."""
    channels: tuple[Channel, ...]
    """The state keys, in schema order."""
    input_keys: tuple[str, ...]
    """Keys the input may set."""
    output_keys: tuple[str, ...]
    """Keys the output shows."""
    nodes: dict[str, Node]
    """Nodes by name, in the order they were added."""
    edges: tuple[tuple[str, str], ...]
    """Static edges (source, target), sorted."""
    joins: tuple[tuple[tuple[str, ...], str], ...]
    """Waiting edges: (sources that must all finish, target), sorted."""
    routers: dict[str, tuple[Router, ...]]
    """Conditional edges by source node."""
    interrupt_before: frozenset[str] = frozenset()
    """Nodes the compiled graph pauses before."""
    interrupt_after: frozenset[str] = frozenset()
    """Nodes the compiled graph pauses after."""
    agent: LlmAgent | None = None
    """Set when the whole graph is an LLM agent."""
    context_schema: str | None = None
    """The import path of the graph's `context_schema` (a dataclass, pydantic model or TypedDict)."""
    takes_context: bool = False
    """Whether the graph declares a context schema: its `Invoke` then takes `$context`."""

    def static_targets(self, node: str) -> tuple[str, ...]:
        """Targets of the static edges out of `node` (END included), sorted."""
        return tuple(target for source, target in self.edges if source == node)
