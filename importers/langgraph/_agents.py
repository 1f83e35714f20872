"""Recognising the prebuilt LLM-agent graphs and multi-agent wrappers by what they are made of.

`create_react_agent` (langgraph.prebuilt) and `create_agent` (langchain.agents) build a graph of a
model node and a ToolNode; the prompt and the tools live in the model node's closure and the ToolNode.
langgraph-supervisor wraps each worker in a `call_agent` function; langgraph-swarm routes with a
`route_to_active_agent` closure; both make hand-off tools that return `Command(goto=agent)`. These are
read from the objects themselves (closure cells, `tools_by_name`, tool metadata), which ties this
module to those libraries' current layouts: when a layout is not recognised, the node is imported as
what it plainly is, with a diagnostic, never guessed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from importers.common.diagnostics import Findings
from importers.common.pal_types import pal_type
from importers.common.paths import import_path
from importers.langgraph._diagnostics import AGENT_FEATURE, TOOL_WITHOUT_IMPORT_PATH
from importers.langgraph._model import AgentFactory, AgentTool, LlmAgent

_REACT_MODEL = ("langgraph.prebuilt.chat_agent_executor", "create_react_agent.<locals>.call_model")
_AGENT_MODEL = ("langchain.agents.factory", "create_agent.<locals>.model_node")
_SUPERVISOR_CALL = ("langgraph_supervisor.supervisor", "_make_call_agent.<locals>.call_agent")
_SWARM_ROUTER = ("langgraph_swarm.swarm", "add_active_agent_router.<locals>.route_to_active_agent")
_HANDOFF_KEY = "__handoff_destination"
_SWARM_HANDOFF_MODULE = "langgraph_swarm.handoff"
_REACT_NODES = frozenset({"agent", "tools"})
_AGENT_NODES = frozenset({"model", "tools"})


def closure_vars(function: Any) -> dict[str, Any]:
    """A function's closure cells by free-variable name (empty cells left out)."""
    code = getattr(function, "__code__", None)
    cells = getattr(function, "__closure__", None) or ()
    if code is None:
        return {}
    values: dict[str, Any] = {}
    for name, cell in zip(code.co_freevars, cells, strict=False):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # an empty cell: the variable was never assigned
            continue
    return values


def _is(function: Any, where: tuple[str, str]) -> bool:
    return (
        getattr(function, "__module__", None) == where[0]
        and getattr(function, "__qualname__", None) == where[1]
    )


def runnable_function(runnable: Any) -> Callable[..., Any] | None:
    """The user function inside LangGraph's RunnableCallable (sync or async), if it is one."""
    function = getattr(runnable, "func", None) or getattr(runnable, "afunc", None)
    return function if callable(function) else None


def recognize_agent(
    compiled: Any, name: str, subject: str, findings: Findings, *, where: ToolNodePlace
) -> LlmAgent | None:
    """The LLM agent a compiled graph is, when `create_react_agent` or `create_agent` built it; `where`
    says how the program finds the graph again at run time (for its ToolNode)."""
    builder = getattr(compiled, "builder", None)
    nodes = getattr(builder, "nodes", None)
    if not isinstance(nodes, dict):
        return None
    react = nodes.get("agent")
    response_format = None
    if react is not None and _is(runnable_function(react.runnable), _REACT_MODEL):
        cells = closure_vars(runnable_function(react.runnable))
        prompt = closure_vars(cells.get("_resolve_model")).get("prompt")
        if cells.get("is_dynamic_model"):
            findings.add(
                AGENT_FEATURE, subject, "the model is chosen by a function at run time; PAL keeps one model"
            )
        extra = sorted(set(nodes) - _REACT_NODES)
        factory = AgentFactory.REACT
    else:
        model_node = nodes.get("model")
        if model_node is None or not _is(runnable_function(model_node.runnable), _AGENT_MODEL):
            return None
        cells = closure_vars(runnable_function(model_node.runnable))
        prompt = cells.get("system_message")
        if cells.get("wrap_model_call_handler") is not None:
            findings.add(
                AGENT_FEATURE, subject, "middleware wraps the model call; PAL does not run middleware"
            )
        response_format = _response_format(cells.get("initial_response_format"), subject, findings)
        extra = sorted(set(nodes) - _AGENT_NODES)
        factory = AgentFactory.CREATE_AGENT
    for node in extra:
        findings.add(
            AGENT_FEATURE,
            subject,
            f"its node {node!r} (a hook, middleware or structured-output step) is not part of the imported agent",
        )
    tool_node = nodes.get("tools")
    tools = read_tools(tool_node.runnable if tool_node is not None else None, subject, findings)
    own_name = getattr(compiled, "name", None)
    return LlmAgent(
        name=name,
        factory=factory,
        prompt=_prompt_text(prompt, subject, findings),
        tools=tools,
        tool_node=where.locate("tools", tools, subject, findings) if tools else None,
        messages_key=getattr(tool_node.runnable, "_messages_key", "messages") if tool_node else "messages",
        message_name=own_name if isinstance(own_name, str) and own_name != "LangGraph" else None,
        response_format=response_format,
    )


def _response_format(strategy: Any, subject: str, findings: Findings) -> dict[str, Any] | None:
    """create_agent's `response_format` as the agent's typed return: the schema class by import path, its
    name and JSON Schema, the tool message LangGraph writes (`ToolStrategy(tool_message_content=...)`)."""
    if strategy is None:
        return None
    schema = getattr(strategy, "schema", strategy)
    path, why = import_path(schema) if isinstance(schema, type) else (None, "it is not a class")
    json_schema = _json_schema(schema)
    if path is None or json_schema is None:
        findings.add(
            AGENT_FEATURE,
            subject,
            f"its response_format cannot be a typed return ({why}); the agent's reply is text",
        )
        return None
    return {
        "schema": path,
        "name": schema.__name__,
        "json_schema": json_schema,
        "tool_message": getattr(strategy, "tool_message_content", None),
    }


def _json_schema(schema: Any) -> dict[str, Any] | None:
    """The JSON Schema of a pydantic model, dataclass or TypedDict (None for anything else)."""
    try:
        from pydantic import TypeAdapter

        return TypeAdapter(schema).json_schema()
    except Exception:  # not a type pydantic reads: the format stays untyped (reported)
        return None


def _prompt_text(prompt: Any, subject: str, findings: Findings) -> str | None:
    if prompt is None:
        return None
    if isinstance(prompt, str):
        return prompt.strip() or None
    content = getattr(prompt, "content", None)  # a SystemMessage
    if isinstance(content, str):
        return content.strip() or None
    if isinstance(content, list):
        texts = [block.get("text", "") if isinstance(block, dict) else str(block) for block in content]
        return "\n".join(text for text in texts if text).strip() or None
    findings.add(
        AGENT_FEATURE,
        subject,
        f"its prompt is a {type(prompt).__name__} computed from the state; PAL needs the prompt as text",
    )
    return None


@dataclass(frozen=True, slots=True)
class ToolNodePlace:
    """How a graph's ToolNode is found again at run time: from the imported target's compiled graph
    (`module:attr`), node by node (`path`); without a target, by its tools' import paths."""

    source: str | None
    """The imported target, when known."""
    path: tuple[str, ...] = ()
    """The node names from the target's graph down to the graph holding the ToolNode."""

    def inside(self, node: str) -> ToolNodePlace:
        """The place of a graph that is node `node` of this one."""
        return ToolNodePlace(self.source, (*self.path, node))

    def locate(
        self, node: str, tools: tuple[AgentTool, ...], subject: str, findings: Findings
    ) -> dict[str, Any]:
        """Where the ToolNode `node` of this graph is found at run time (reported when it cannot be)."""
        if self.source is not None:
            return {"graph": self.source, "nodes": [*self.path, node]}
        missing = [tool.name for tool in tools if tool.path is None]
        for name in missing:
            findings.add(
                TOOL_WITHOUT_IMPORT_PATH,
                f"{subject}, tool {name!r}",
                "it has no import path, and the graph was imported from an object (not module:attribute), so "
                "the program cannot find its ToolNode again; import the graph by its module:attribute",
            )
        return {"tools": [tool.path for tool in tools if tool.path is not None]}


def read_tools(tool_node: Any, subject: str, findings: Findings) -> tuple[AgentTool, ...]:
    """The tools of a ToolNode, each with the arguments the model fills in."""
    if tool_node is None:
        return ()
    tools_by_name = getattr(tool_node, "tools_by_name", None)
    if not isinstance(tools_by_name, dict):
        findings.add(
            AGENT_FEATURE, subject, "its tools node is not a ToolNode, so its tools are not imported"
        )
        return ()
    tools = []
    for tool_name, tool in tools_by_name.items():
        tools.append(_tool(tool, tool_name))
        if getattr(tool, "return_direct", False):
            findings.add(
                AGENT_FEATURE,
                f"{subject}, tool {tool_name!r}",
                "return_direct ends the agent's turn with the tool's result; PAL lets the model answer",
            )
    # langgraph-supervisor makes its hand-off tools from a set: they come last, by name, to be reproducible.
    own = [tool for tool in tools if not _is_handoff(tools_by_name[tool.name])]
    handoffs = sorted(
        (tool for tool in tools if _is_handoff(tools_by_name[tool.name])), key=lambda tool: tool.name
    )
    return (*own, *handoffs)


def _is_handoff(tool: Any) -> bool:
    return _HANDOFF_KEY in (getattr(tool, "metadata", None) or {})


def _tool(tool: Any, tool_name: str) -> AgentTool:
    function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    path = _bound_tool_path(tool, function) if function is not None else None
    if path is None and callable(function):
        path = _function_tool_path(tool, function)
    parameters: list[tuple[str, str | None]] = []
    optional: set[str] = set()
    schema = getattr(tool, "tool_call_schema", None)
    fields = getattr(schema, "model_fields", None)
    if isinstance(fields, dict):
        for field_name, info in fields.items():
            parameters.append((field_name, pal_type(info.annotation)))
            if not info.is_required():
                optional.add(field_name)
    return AgentTool(
        name=tool_name,
        description=str(getattr(tool, "description", "") or ""),
        parameters=tuple(parameters),
        optional=frozenset(optional),
        path=path,
    )


def _function_tool_path(tool: Any, function: Any) -> str | None:
    """The import path of a plain function a ToolNode made a tool of (`create_react_agent(model, [f])`)."""
    path, _ = import_path(function)
    if path is not None and getattr(tool, "name", None) == getattr(function, "__name__", None):
        return path
    return None


def _bound_tool_path(tool: Any, function: Any) -> str | None:
    """`module:name` where the tool object itself is bound in its function's module."""
    module_name = getattr(function, "__module__", None)
    module = sys.modules.get(module_name) if isinstance(module_name, str) else None
    if module is None or module_name == "__main__":
        return None
    for name, value in vars(module).items():
        if value is tool:
            return f"{module_name}:{name}"
    return None


def recognize_supervisor_worker(function: Any) -> tuple[Any, str, str | None] | None:
    """(worker graph, output mode, supervisor name or None) for langgraph-supervisor's `call_agent`."""
    if not _is(function, _SUPERVISOR_CALL):
        return None
    cells = closure_vars(function)
    worker = cells.get("agent")
    process = closure_vars(cells.get("_process_output"))
    if worker is None:
        return None
    mode = str(process.get("output_mode", "last_message"))
    supervisor = process.get("supervisor_name") if process.get("add_handoff_back_messages") else None
    return worker, mode, supervisor


def recognize_state_router(function: Any) -> tuple[str, Any] | None:
    """("active_agent", default) for langgraph-swarm's `route_to_active_agent` router."""
    if not _is(function, _SWARM_ROUTER):
        return None
    cells = closure_vars(function)
    if "default_active_agent" not in cells:
        return None
    return "active_agent", cells["default_active_agent"]
