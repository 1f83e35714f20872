"""Remote agents: agents whose playbooks live behind a protocol (MCP today), listed when the program starts.

The runtime knows only this interface. Implementations register by `remote.type` through the entry-point
group `pal_bridge.remote` (the MCP bridge registers `mcp`), or in code with `register_remote_type`, so the
runtime never imports the packages above it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from pal_core.ir import Agent, Metadata, Parameter, Playbook, PlaybookKind, RemoteSpec
from runtime.errors import ProgramError

ENTRY_POINT_GROUP = "pal_bridge.remote"


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteTool:
    """A callable offered by a remote agent."""

    name: str
    """The tool name; becomes the playbook name."""
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
        "for MCP install the extra: pip install 'pal-bridge[mcp]'"
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


def playbook_for_tool(tool: RemoteTool) -> Playbook:
    """The IR playbook describing a remote tool (public, typed from its input schema)."""
    properties = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or ())
    parameters = []
    for name, schema in properties.items():
        json_type = schema.get("type") if isinstance(schema, dict) else None
        default = None
        if name not in required:
            default = (
                repr(schema.get("default")) if isinstance(schema, dict) and "default" in schema else "None"
            )
        parameters.append(
            Parameter(
                name=name,
                type=_JSON_TYPES.get(json_type) if isinstance(json_type, str) else None,
                default=default,
            )
        )
    return Playbook(
        name=tool.name,
        kind=PlaybookKind.REMOTE,
        parameters=tuple(parameters),
        description=tool.description,
        metadata=Metadata(public=True),
    )
