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

import inspect
import sys
from collections.abc import Callable
from typing import Any

from importers.common.diagnostics import Findings
from importers.common.model import BoundTool
from importers.common.pal_types import pal_type
from importers.common.paths import import_path, resolves_to
from importers.langgraph._diagnostics import AGENT_FEATURE, TOOL_WITHOUT_IMPORT_PATH
from importers.langgraph._model import AgentFactory, Handoff, LlmAgent

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


def recognize_agent(compiled: Any, name: str, subject: str, findings: Findings) -> LlmAgent | None:
    """The LLM agent a compiled graph is, when `create_react_agent` or `create_agent` built it."""
    builder = getattr(compiled, "builder", None)
    nodes = getattr(builder, "nodes", None)
    if not isinstance(nodes, dict):
        return None
    react = nodes.get("agent")
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
        if cells.get("initial_response_format") is not None:
            findings.add(
                AGENT_FEATURE,
                subject,
                "a response_format asks for structured output, which PAL does not enforce",
            )
        extra = sorted(set(nodes) - _AGENT_NODES)
        factory = AgentFactory.CREATE_AGENT
    for node in extra:
        findings.add(
            AGENT_FEATURE,
            subject,
            f"its node {node!r} (a hook, middleware or structured-output step) is not part of the imported agent",
        )
    tools, handoffs = _read_tools(nodes.get("tools"), subject, findings)
    return LlmAgent(
        name=name,
        factory=factory,
        prompt=_prompt_text(prompt, subject, findings),
        tools=tools,
        handoffs=handoffs,
    )


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


def _read_tools(
    tool_node: Any, subject: str, findings: Findings
) -> tuple[tuple[BoundTool, ...], tuple[Handoff, ...]]:
    if tool_node is None:
        return (), ()
    tools_by_name = getattr(tool_node.runnable, "tools_by_name", None)
    if not isinstance(tools_by_name, dict):
        findings.add(
            AGENT_FEATURE, subject, "its tools node is not a ToolNode, so its tools are not imported"
        )
        return (), ()
    tools: list[BoundTool] = []
    handoffs: list[Handoff] = []
    for tool_name, tool in tools_by_name.items():
        metadata = getattr(tool, "metadata", None) or {}
        if _HANDOFF_KEY in metadata:
            handoffs.append(_handoff(tool, str(metadata[_HANDOFF_KEY])))
            continue
        imported = _tool(tool, tool_name, subject, findings)
        if imported is not None:
            tools.append(imported)
        if getattr(tool, "return_direct", False):
            findings.add(
                AGENT_FEATURE,
                f"{subject}, tool {tool_name!r}",
                "return_direct ends the agent's turn with the tool's result; PAL lets the model answer",
            )
    # langgraph-supervisor makes its hand-off tools from a set: order them by name to be reproducible.
    return tuple(tools), tuple(sorted(handoffs, key=lambda handoff: handoff.name))


def _handoff(tool: Any, destination: str) -> Handoff:
    function = getattr(tool, "func", None)
    update = (
        {"active_agent": destination} if getattr(function, "__module__", "") == _SWARM_HANDOFF_MODULE else {}
    )
    return Handoff(
        name=str(tool.name), description=str(tool.description or ""), destination=destination, update=update
    )


def _tool(tool: Any, tool_name: str, subject: str, findings: Findings) -> BoundTool | None:
    where = f"{subject}, tool {tool_name!r}"
    function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    if not callable(function):
        findings.add(
            TOOL_WITHOUT_IMPORT_PATH,
            where,
            f"it is a {type(tool).__name__} without a plain function behind it; wrap the work in a "
            "module-level function and make the tool with @tool",
        )
        return None
    path = _tool_function_path(tool, function)
    if path is None:
        _, why = import_path(function)
        findings.add(TOOL_WITHOUT_IMPORT_PATH, where, f"its function cannot be imported by path: {why}")
        return None
    model_fields = _model_argument_names(tool)
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        signature = None
    parameters: list[tuple[str, str | None]] = []
    injected: list[str] = []
    if signature is not None:
        for parameter in signature.parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                continue
            if model_fields is not None and parameter.name not in model_fields:
                if parameter.default is parameter.empty:
                    injected.append(parameter.name)
                continue
            annotation = None if parameter.annotation is parameter.empty else parameter.annotation
            parameters.append((parameter.name, pal_type(annotation)))
    if injected:
        findings.add(
            TOOL_WITHOUT_IMPORT_PATH,
            where,
            f"it takes {', '.join(injected)} injected by LangGraph (state, tool call id or runtime), which a "
            "PAL playbook call does not pass",
        )
    returns = None
    if signature is not None and signature.return_annotation is not signature.empty:
        returns = pal_type(signature.return_annotation)
    return BoundTool(
        name=tool_name,
        description=str(getattr(tool, "description", "") or ""),
        path=path,
        parameters=tuple(parameters),
        returns=returns,
    )


def _tool_function_path(tool: Any, function: Any) -> str | None:
    """The function's own import path, or `<tool path>.func` when `@tool` replaced it at module level."""
    path, _ = import_path(function)
    if path is not None:
        return path
    tool_path = _bound_tool_path(tool, function)
    if tool_path is None:
        return None
    for attribute in ("func", "coroutine"):
        candidate = f"{tool_path}.{attribute}"
        if resolves_to(candidate, function):
            return candidate
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


def _model_argument_names(tool: Any) -> set[str] | None:
    """The argument names the model fills in (injected arguments are not among them)."""
    schema = getattr(tool, "tool_call_schema", None)
    fields = getattr(schema, "model_fields", None)
    if isinstance(fields, dict):
        return set(fields)
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
