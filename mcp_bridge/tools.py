"""Which playbooks a served program offers as MCP tools, and under which names.

Every public markdown or Python playbook of a local agent is a tool. Remote agents are left out: their
tools belong to another server, and re-exporting them would make this server a proxy. A tool is named
after its playbook; when two agents have a public playbook of the same name, both are qualified as
`Agent.Playbook`, so no name depends on the order agents are written in. Characters MCP does not allow in
a tool name (SEP-986: letters, digits, `_`, `-`, `.`) become `_`.

A playbook's metadata can say more under `mcp:` (an imported graph's `Invoke` does):

    mcp:
      tool: plan_graph        # the tool's name; `false` keeps a public playbook out of the tool list
      arguments: input        # the tool's whole arguments object is this (dict) parameter
      input_schema: {...}     # the JSON Schema of that object (default: any object)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pal_core.ir import Playbook, PlaybookKind
from runtime.schema import JsonSchema, input_schema, output_schema

SERVED_KINDS = frozenset({PlaybookKind.MARKDOWN, PlaybookKind.PYTHON})
"""The playbook kinds a server offers (remote tools are another server's)."""

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_.-]")
MAX_TOOL_NAME = 128
"""The longest tool name MCP allows."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PlaybookTool:
    """A public playbook as an MCP tool."""

    name: str
    """The tool name clients call."""
    agent: str
    """The agent class the playbook belongs to."""
    playbook: Playbook
    """The playbook, as the program (or a Python module it names) declares it."""
    description: str
    """What the tool does: the playbook's description, or a sentence naming it."""
    input_schema: JsonSchema
    """JSON Schema of the arguments, from the typed parameters."""
    output_schema: JsonSchema | None
    """JSON Schema of the structured result (`{"result": ...}`) for a typed return; None otherwise."""
    arguments_parameter: str | None = None
    """The parameter that takes the whole arguments object (`mcp: {arguments: ...}`); None when each
    argument is a parameter of its own name."""

    @property
    def qualified_name(self) -> str:
        """`Agent.Playbook`, as PAL calls it."""
        return f"{self.agent}.{self.playbook.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOptions:
    """A playbook's `mcp:` metadata, read."""

    served: bool = True
    """False for `tool: false`."""
    name: str | None = None
    """The tool's name, when the metadata gives one."""
    arguments: str | None = None
    """The parameter that takes the whole arguments object."""
    input_schema: JsonSchema | None = None
    """The arguments object's JSON Schema, with `arguments`."""


def tool_options(playbook: Playbook) -> ToolOptions:
    """The playbook's `mcp:` metadata; ValueError naming the playbook and the key when it is malformed."""
    settings = playbook.metadata.extra.get("mcp")
    if settings is None:
        return ToolOptions()
    where = f"playbook {playbook.name}: metadata `mcp`"
    if not isinstance(settings, Mapping):
        raise ValueError(f"{where} must be a mapping such as `mcp: {{tool: name}}`, got {settings!r}")
    unknown = sorted(set(settings) - {"tool", "arguments", "input_schema"})
    if unknown:
        raise ValueError(
            f"{where} has unknown key(s) {', '.join(unknown)} (known: tool, arguments, input_schema)"
        )
    tool = settings.get("tool", True)
    if tool is False:
        return ToolOptions(served=False)
    if tool is not True and (not isinstance(tool, str) or not tool.strip()):
        raise ValueError(f"{where}: `tool` must be a tool name or false, got {tool!r}")
    arguments = settings.get("arguments")
    if arguments is not None:
        parameter = next((item for item in playbook.parameters if item.name == arguments), None)
        if parameter is None or len(playbook.parameters) != 1:
            raise ValueError(
                f"{where}: `arguments: {arguments}` must name the playbook's one parameter (it has: "
                f"{', '.join(item.name for item in playbook.parameters) or 'none'})"
            )
    schema = settings.get("input_schema")
    if schema is not None and (arguments is None or not isinstance(schema, Mapping)):
        raise ValueError(f"{where}: `input_schema` must be a JSON Schema object, given with `arguments`")
    return ToolOptions(
        name=tool.strip() if isinstance(tool, str) else None,
        arguments=arguments,
        input_schema=dict(schema) if schema is not None else None,
    )


def is_served(playbook: Playbook) -> bool:
    """Whether a playbook is offered as a tool: public, markdown or Python, and not `mcp: {tool: false}`."""
    return playbook.public and playbook.kind in SERVED_KINDS and tool_options(playbook).served


def playbook_tools(agents: Iterable[tuple[str, Iterable[Playbook]]]) -> tuple[PlaybookTool, ...]:
    """The tools of (agent name, playbooks) pairs, in order; only public markdown and Python playbooks."""
    offered = [
        (agent, playbook, tool_options(playbook))
        for agent, playbooks in agents
        for playbook in playbooks
        if is_served(playbook)
    ]
    counts = Counter(_tool_name(options.name or playbook.name) for _, playbook, options in offered)
    tools: list[PlaybookTool] = []
    for agent, playbook, options in offered:
        plain = _tool_name(options.name or playbook.name)
        # A name the metadata gives is kept as it is (tools_by_name reports a clash).
        keep = options.name is not None or counts[plain] == 1
        name = plain if keep else _tool_name(f"{agent}.{playbook.name}")
        if options.arguments is not None:
            schema = options.input_schema or {"type": "object"}
        else:
            schema = input_schema(playbook)
        tools.append(
            PlaybookTool(
                name=name,
                agent=agent,
                playbook=playbook,
                description=playbook.description.strip() or f"Runs the PAL playbook {agent}.{playbook.name}.",
                input_schema=schema,
                output_schema=output_schema(playbook),
                arguments_parameter=options.arguments,
            )
        )
    return tuple(tools)


def _tool_name(text: str) -> str:
    return _NOT_ALLOWED.sub("_", text)[:MAX_TOOL_NAME] or "_"


def tools_by_name(tools: Iterable[PlaybookTool]) -> Mapping[str, PlaybookTool]:
    """The tools keyed by name; ValueError naming both when two tools would share a name."""
    found: dict[str, PlaybookTool] = {}
    for tool in tools:
        existing = found.get(tool.name)
        if existing is not None:
            raise ValueError(
                f"{existing.qualified_name} and {tool.qualified_name} both become the MCP tool {tool.name!r}; "
                "rename one of them"
            )
        found[tool.name] = tool
    return found
