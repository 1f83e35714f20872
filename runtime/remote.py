"""Remote agents: agents whose playbooks live behind a protocol (MCP, A2A), listed when the program starts.

The runtime knows only this interface. Implementations register by `remote.type` through the entry-point
group `pal_bridge.remote` (the MCP bridge registers `mcp`, the A2A exporter `a2a`), or in code with
`register_remote_type`, so the runtime never imports the packages above it.

While a call runs, a connection may talk to the run's user for the remote agent: `tell_user` (what the
remote agent says on the way, shown as the agent's messages) and `ask_user` (a question the remote needs
answered before it goes on: an A2A task's INPUT_REQUIRED), through the run's user channel, so a durable run
commits the wait and the answer like any other (docs/durability.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from pal_core.ir import Agent, Metadata, Parameter, Playbook, PlaybookKind, RemoteSpec
from pal_core.remote_names import pal_name, pal_names
from runtime.errors import ProgramError

ENTRY_POINT_GROUP = "pal_bridge.remote"


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteTool:
    """A callable offered by a remote agent."""

    name: str
    """The tool's name on its server; the playbook is named after it (its PAL name, see remote_playbooks)."""
    description: str = ""
    """What it does."""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    """JSON Schema of the arguments."""


@runtime_checkable
class RemoteConnection(Protocol):
    """A live connection to a remote agent."""

    async def list_tools(self) -> list[RemoteTool]:
        """The tools the remote agent offers."""
        ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool; return its result (structured when the remote gives structure, else text).
        Raise RemoteCallError on failure."""
        ...

    async def close(self) -> None:
        """Release the connection (stop a server process this connection started)."""
        ...


class RemoteCallError(ProgramError):
    """A remote call failed: the tool reported an error, the server died, or the call timed out."""


RemoteConnector = Callable[[RemoteSpec, str], Awaitable[RemoteConnection]]
"""Opens a connection for (spec, agent name)."""

_CONNECTORS: dict[str, RemoteConnector] = {}


def register_remote_type(remote_type: str, connector: RemoteConnector) -> None:
    """Make `remote: {type: <remote_type>}` agents connect through `connector`."""
    _CONNECTORS[remote_type] = connector


def connector_for(remote_type: str) -> RemoteConnector:
    """The connector registered for a remote type (loading entry points on first use)."""
    connector = _CONNECTORS.get(remote_type)
    if connector is not None:
        return connector
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == remote_type:
            loaded = entry.load()
            _CONNECTORS[remote_type] = loaded
            return loaded
    known = sorted({*_CONNECTORS, *(entry.name for entry in entry_points(group=ENTRY_POINT_GROUP))})
    raise ProgramError(
        f"no support for remote agents of type {remote_type!r} (known: {', '.join(known) or 'none'}); "
        "for MCP install the extra: pip install 'pal-bridge[mcp]', for A2A: pip install 'pal-bridge[a2a]'"
    )


RemoteOpener = Callable[[Agent], Awaitable[tuple[RemoteConnection, list[RemoteTool]]]]
"""Connects a remote agent and lists its tools; `ProgramRun(remote_connector=...)` can replace the default
(the MCP server, for instance, lends every run one pooled connection per remote agent)."""


async def open_remote(agent: Agent) -> tuple[RemoteConnection, list[RemoteTool]]:
    """Connect a remote agent through the connector registered for its `remote.type`, and list its tools."""
    spec = agent.metadata.remote
    if spec is None:
        raise ProgramError(f"agent {agent.name} is not a remote agent")
    connection = await connector_for(spec.type)(spec, agent.name)
    try:
        tools = await connection.list_tools()
    except BaseException:
        await connection.close()
        raise
    return connection, tools


_JSON_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
}


REMOTE_TOOL_KEY = "remote_tool"
"""Playbook metadata key holding the tool's own name, when its PAL name differs (`get-sum`)."""
REMOTE_ARGUMENTS_KEY = "remote_arguments"
"""Playbook metadata key holding {PAL parameter name: the tool's argument name} where they differ."""


def remote_playbooks(tools: Iterable[RemoteTool]) -> list[Playbook]:
    """The playbooks of a remote agent's tools, each under its PAL name (pal_core.remote_names:
    `get-sum` is `get_sum`), the tool's own name kept for the call."""
    listed = list(tools)
    names = {original: pal for pal, original in pal_names(tool.name for tool in listed).items()}
    return [playbook_for_tool(tool, name=names[tool.name]) for tool in listed]


def playbook_for_tool(tool: RemoteTool, *, name: str | None = None) -> Playbook:
    """The IR playbook describing a remote tool (public, typed from its input schema), named `name`
    (default: the tool's PAL name); argument names that are not PAL names are mapped the same way."""
    properties = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or ())
    arguments = pal_names(properties)
    parameters = []
    for parameter_name, original in arguments.items():
        schema = properties[original]
        json_type = schema.get("type") if isinstance(schema, dict) else None
        default = None
        if original not in required:
            default = (
                repr(schema.get("default")) if isinstance(schema, dict) and "default" in schema else "None"
            )
        parameters.append(
            Parameter(
                name=parameter_name,
                type=_JSON_TYPES.get(json_type) if isinstance(json_type, str) else None,
                default=default,
            )
        )
    playbook_name = name or pal_name(tool.name)
    extra: dict[str, Any] = {}
    if playbook_name != tool.name:
        extra[REMOTE_TOOL_KEY] = tool.name
    renamed = {pal: original for pal, original in arguments.items() if pal != original}
    if renamed:
        extra[REMOTE_ARGUMENTS_KEY] = renamed
    return Playbook(
        name=playbook_name,
        kind=PlaybookKind.REMOTE,
        parameters=tuple(parameters),
        description=tool.description,
        metadata=Metadata(public=True, extra=extra),
    )


def remote_call(playbook: Playbook, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the tool's own name, the arguments under the tool's own names) for a call of a remote playbook."""
    tool = playbook.metadata.extra.get(REMOTE_TOOL_KEY, playbook.name)
    renamed = playbook.metadata.extra.get(REMOTE_ARGUMENTS_KEY) or {}
    return str(tool), {renamed.get(key, key): value for key, value in arguments.items()}


def remote_listing(playbooks: Iterable[Playbook]) -> str:
    """`echo, get_sum (the tool get-sum), ...`: a remote agent's playbooks for error messages."""
    items = []
    for playbook in sorted(playbooks, key=lambda item: item.name):
        original = playbook.metadata.extra.get(REMOTE_TOOL_KEY)
        items.append(f"{playbook.name} (the tool {original})" if original else playbook.name)
    return ", ".join(items) or "none"


# --- during a call ---------------------------------------------------------------------------------------------

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_variables(text: str | None, agent_name: str, key: str) -> str | None:
    """`text` with every `${NAME}` replaced by the environment variable (tokens stay out of program files);
    ProgramError naming the agent, the metadata key and the variable when one is not set."""
    if text is None:
        return None

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        found = os.environ.get(name)
        if found is None:
            raise ProgramError(
                f"remote agent {agent_name}: `{key}` uses ${{{name}}}, and the environment variable {name} is not set"
            )
        return found

    return _VARIABLE.sub(value, text)


async def tell_user(text: str) -> None:
    """Inside a remote call: the remote agent says `text` to the run's user (progress on the way). Shown
    once: a resumed run that takes the call's result from its log does not say it again. Nothing outside a
    call."""
    from runtime.python_api import current_execution

    execution = current_execution.get()
    if execution is not None:
        await execution.say("user", text)


async def ask_user(question: str | None) -> str | None:
    """Inside a remote call: the remote agent asks the run's user `question` (None: it was said already,
    with `tell_user`) and waits for the answer (None: nobody can answer). In a durable run the wait and the
    answer are committed, and the call is made again when the thread resumes, its answers read from the log
    (the user is never asked twice)."""
    from runtime.python_api import current_execution, touch_call

    execution = current_execution.get()
    if execution is None:
        return None
    touch_call()
    if question:
        await execution.say("user", question)
    return await execution.services.request_user_input(execution.agent)
