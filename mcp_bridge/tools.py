"""Which playbooks a served program offers as MCP tools, and under which names.

Every public markdown or Python playbook of a local agent is a tool. Remote agents are left out: their
tools belong to another server, and re-exporting them would make this server a proxy. A tool is named
after its playbook; when two agents have a public playbook of the same name, both are qualified as
`Agent.Playbook`, so no name depends on the order agents are written in. Characters MCP does not allow in
a tool name (SEP-986: letters, digits, `_`, `-`, `.`) become `_`.
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

    @property
    def qualified_name(self) -> str:
        """`Agent.Playbook`, as PAL calls it."""
        return f"{self.agent}.{self.playbook.name}"


def is_served(playbook: Playbook) -> bool:
    """Whether a playbook is offered as a tool: public, and markdown or Python."""
    return playbook.public and playbook.kind in SERVED_KINDS


def playbook_tools(agents: Iterable[tuple[str, Iterable[Playbook]]]) -> tuple[PlaybookTool, ...]:
    """The tools of (agent name, playbooks) pairs, in order; only public markdown and Python playbooks."""
    offered = [
        (agent, playbook) for agent, playbooks in agents for playbook in playbooks if is_served(playbook)
    ]
    counts = Counter(_tool_name(playbook.name) for _, playbook in offered)
    tools: list[PlaybookTool] = []
    for agent, playbook in offered:
        plain = _tool_name(playbook.name)
        name = plain if counts[plain] == 1 else _tool_name(f"{agent}.{playbook.name}")
        tools.append(
            PlaybookTool(
                name=name,
                agent=agent,
                playbook=playbook,
                description=playbook.description.strip() or f"Runs the PAL playbook {agent}.{playbook.name}.",
                input_schema=input_schema(playbook),
                output_schema=output_schema(playbook),
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
