"""Reading an LLM agent's tools: what each entry of `tools` stands for (a function bound by path, a tool
ADK runs with a ToolContext, an AgentTool, or one PAL cannot run), the confirmations it asks for, and what
it reaches that the program does not carry (agents, Runners or model clients inside its function, ADK's
artifact, memory and credential services)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import CodeType
from typing import TYPE_CHECKING, Any

from importers import ImportTargetError
from importers.adk._diagnostics import AGENT_INSIDE_TOOL, NO_SOURCE, TOOL_SERVICE, UNSUPPORTED_TOOL
from importers.adk._model import Tool, ToolKind, ToolParameter
from importers.common.pal_types import json_schema_type, json_type_name, pal_type
from importers.common.paths import import_path

if TYPE_CHECKING:
    from importers.adk._read import TreeReader


def read_tools(reader: TreeReader, item: Any, owner: Any, path: str) -> list[Tool]:
    """The tools one entry of an agent's `tools` list stands for."""
    from google.adk.tools.agent_tool import AgentTool
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.base_toolset import BaseToolset
    from google.adk.tools.function_tool import FunctionTool

    where = f"agent {owner.name!r}"
    if isinstance(item, BaseToolset):
        reason = (
            f"the {type(item).__name__} finds its tools at run time (from a server or a specification); "
            "PAL does not connect to it"
        )
        reader.findings.add(UNSUPPORTED_TOOL, f"{where}, toolset {type(item).__name__}", reason)
        return [
            Tool(
                name=type(item).__name__,
                kind=ToolKind.UNSUPPORTED,
                reason=f"{UNSUPPORTED_TOOL.code} {reason}",
            )
        ]
    if isinstance(item, AgentTool):
        agent = reader.agent(item.agent, path)
        return [
            Tool(
                name=item.name,
                kind=ToolKind.AGENT,
                description=str(item.description or agent.description),
                parameters=_declared_parameters(item),
                agent=agent,
                skip_summarization=bool(item.skip_summarization),
            )
        ]
    if not isinstance(item, BaseTool):
        if not callable(item):
            raise ImportTargetError(f"{where}: tool {item!r} is neither a tool nor a function")
        item = FunctionTool(item)
    name = item.name
    subject = f"{where}, tool {name!r}"
    if name == "transfer_to_agent":
        return []  # ADK adds it for sub-agents; the program has its own TransferToAgent
    declaration = _declaration(item)
    if declaration is None:
        reason = (
            f"{type(item).__name__} is carried out by the model provider (grounding, search, code "
            "execution), not by a function PAL can call"
        )
        if type(item).__name__ in _REQUEST_TOOLS:
            reason = (
                f"{type(item).__name__} adds to the model's request ({_REQUEST_TOOLS[type(item).__name__]}) "
                "instead of being called; PAL's model turns are not ADK's requests"
            )
        reader.findings.add(UNSUPPORTED_TOOL, subject, reason)
        return [
            Tool(
                name=name,
                kind=ToolKind.UNSUPPORTED,
                description=str(item.description),
                reason=f"{UNSUPPORTED_TOOL.code} {reason}",
            )
        ]
    parameters = _declared_parameters(item)
    long_running = bool(getattr(item, "is_long_running", False))
    function = getattr(item, "func", None) if isinstance(item, FunctionTool) else None
    _tool_reach(reader, item, function, subject)
    always = getattr(item, "_require_confirmation", False) is True
    confirms = _gated(item)
    asks_itself = _asks_itself(item, function)
    if (
        function is not None
        and type(item) is FunctionTool
        and not _takes_context(item, function)
        and not (confirms or asks_itself)
    ):
        where_path, _ = import_path(function)
        if where_path is not None:
            return [
                Tool(
                    name=name,
                    kind=ToolKind.FUNCTION,
                    description=str(item.description or ""),
                    parameters=parameters,
                    returns=_return_type(function),
                    function=where_path,
                    requires_approval=always,
                )
            ]
    if not reader.has_source:
        reader._no_source(subject, "tools that need ADK (a ToolContext, a tool class)")
        return [
            Tool(
                name=name,
                kind=ToolKind.UNSUPPORTED,
                parameters=parameters,
                reason=f"{NO_SOURCE.code} no source to run it from",
            )
        ]
    return [
        Tool(
            name=name,
            kind=ToolKind.ADK,
            description=str(item.description or ""),
            parameters=parameters,
            long_running=long_running,
            requires_approval=always,
            confirms=confirms,
            asks_itself=asks_itself,
        )
    ]


def _tool_reach(reader: TreeReader, tool: Any, function: Any, subject: str) -> None:
    """ADK111 for a tool that runs agents or models itself, ADK112 for one that needs ADK's services."""
    ran = _runs_inside(function) if function is not None else []
    if ran:
        reader.findings.add(
            AGENT_INSIDE_TOOL,
            subject,
            f"its function runs {', '.join(ran)} itself (as AgentTool(...).run_async or a Runner does): that "
            "runs in ADK with ADK's model, not as PAL turns of the run's model, and the program shows it as "
            "one tool call",
        )
    services = sorted(_SERVICE_TOOLS.get(type(tool).__name__, set()) | _services_used(function, tool))
    if services:
        reader.findings.add(
            TOOL_SERVICE,
            subject,
            f"it uses ADK's {', '.join(services)}, which the imported program gives each tool call afresh and "
            "empty (artifacts saved are not kept, memory finds nothing, credentials are not asked for)",
        )


_REQUEST_TOOLS = {
    "ExampleTool": "few-shot examples",
    "PreloadMemoryTool": "memories of earlier sessions",
}
"""Built-in tools that change the model's request rather than being called, and what they add."""
_SERVICE_TOOLS = {
    "LoadMemoryTool": {"memory service"},
    "PreloadMemoryTool": {"memory service"},
    "LoadArtifactsTool": {"artifact service"},
}
"""Built-in tools that use ADK's services."""
_SERVICE_CALLS = {
    "save_artifact": "artifact service",
    "load_artifact": "artifact service",
    "list_artifacts": "artifact service",
    "search_memory": "memory service",
    "add_session_to_memory": "memory service",
    "request_credential": "credential service",
    "get_auth_response": "credential service",
    "load_credential": "credential service",
    "save_credential": "credential service",
}
"""ToolContext methods that reach ADK's services, and the service each reaches."""


def _services_used(function: Any, tool: Any) -> set[str]:
    """The ADK services a tool's function (or its class's `run_async`) reaches through its ToolContext."""
    code = getattr(function, "__code__", None)
    if code is None and not type(tool).__module__.startswith("google.adk."):
        code = getattr(getattr(type(tool), "run_async", None), "__code__", None)
    if code is None:
        return set()
    names = {name for group in code_names(code) for name in group}
    return {service for call, service in _SERVICE_CALLS.items() if call in names}


def _runs_inside(function: Any) -> list[str]:
    """What a tool function runs itself: agents and AgentTools it names (`'db_agent'`), ADK Runners, model
    clients (google.genai, litellm, openai, anthropic), found among the globals and closure its code uses."""
    from google.adk.agents import BaseAgent
    from google.adk.tools.agent_tool import AgentTool

    code = getattr(inspect.unwrap(function), "__code__", None)
    if code is None:
        return []
    names = {name for group in code_names(code) for name in group}
    scope = dict(getattr(inspect.unwrap(function), "__globals__", {}))
    for name, cell in zip(
        code.co_freevars, getattr(inspect.unwrap(function), "__closure__", None) or (), strict=False
    ):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    found: list[str] = []
    for name in sorted(names):
        value = scope.get(name)
        if isinstance(value, BaseAgent):
            found.append(f"agent {value.name!r}")
        elif isinstance(value, AgentTool):
            found.append(f"agent {value.agent.name!r}")
        elif isinstance(value, type) and value.__name__ in ("Runner", "InMemoryRunner", "AgentTool"):
            found.append(f"ADK's {value.__name__}")
        elif _is_model_client(value):
            found.append(f"the model client {name!r}")
    return list(dict.fromkeys(found))


def _is_model_client(value: Any) -> bool:
    """A module, client object or function of a model API (a tool calling a model directly)."""
    if (
        value is None
        or inspect.isclass(value)
        or isinstance(value, (str, bytes, int, float, dict, list, tuple))
    ):
        return False
    if inspect.ismodule(value):
        module = value.__name__
    elif inspect.isfunction(value) or inspect.isbuiltin(value):
        module = getattr(value, "__module__", None)
    else:
        module = type(value).__module__
    if not isinstance(module, str):
        return False
    return module.split(".")[0] in ("litellm", "openai", "anthropic") or module in (
        "google.genai",
        "google.genai.client",
    )


def _declaration(tool: Any) -> Any:
    try:
        return tool._get_declaration()
    except Exception:  # a tool that cannot describe itself: treated like one without a declaration
        return None


def _declared_parameters(tool: Any) -> tuple[ToolParameter, ...]:
    """The arguments the model fills in, from the declaration ADK gives the model."""
    declaration = _declaration(tool)
    if declaration is None:
        return ()
    schema = getattr(declaration, "parameters_json_schema", None)
    if isinstance(schema, dict):
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        return tuple(
            ToolParameter(
                name=name,
                type=json_schema_type(spec),
                default=spec.get("default") if isinstance(spec, dict) else None,
                has_default=name not in required,
            )
            for name, spec in properties.items()
        )
    parameters = getattr(declaration, "parameters", None)
    properties = getattr(parameters, "properties", None) or {}
    required = set(getattr(parameters, "required", None) or ())
    return tuple(
        ToolParameter(
            name=name,
            type=json_type_name(getattr(spec.type, "value", spec.type)),
            default=getattr(spec, "default", None),
            has_default=name not in required,
        )
        for name, spec in properties.items()
    )


def _takes_context(tool: Any, function: Callable[..., Any]) -> bool:
    """Whether ADK passes the function a context (ToolContext / Context) it cannot get from PAL."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return True
    name = getattr(tool, "_context_param_name", "tool_context")
    return name in parameters or "tool_context" in parameters


def _gated(tool: Any) -> bool:
    """Whether ADK's confirmation gate decides per call whether the user confirms: a `require_confirmation`
    function, or a tool class with its own `check_require_confirmation`."""
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.function_tool import FunctionTool

    if callable(getattr(tool, "_require_confirmation", None)):
        return True
    check = type(tool).check_require_confirmation
    return check not in (BaseTool.check_require_confirmation, FunctionTool.check_require_confirmation)


def _asks_itself(tool: Any, function: Any) -> bool:
    """Whether a tool asks for confirmation itself: its function (or its class's `run_async`) calls
    `request_confirmation`."""
    code = getattr(function, "__code__", None)
    if code is None and not type(tool).__module__.startswith("google.adk."):
        code = getattr(getattr(type(tool), "run_async", None), "__code__", None)
    return code is not None and any("request_confirmation" in names for names in code_names(code))


def _return_type(function: Any) -> str | None:
    try:
        annotation = inspect.signature(function).return_annotation
    except (TypeError, ValueError):
        return None
    if annotation is inspect.Signature.empty:
        return None
    if isinstance(annotation, str):
        return annotation if annotation.isidentifier() else None
    return pal_type(annotation)


def code_names(code: CodeType) -> list[tuple[str, ...]]:
    """The names each code object (the function's and every nested one) uses, for what a function reaches."""
    found = [code.co_names]
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            found.extend(code_names(constant))
    return found


__all__ = ["code_names", "read_tools"]
