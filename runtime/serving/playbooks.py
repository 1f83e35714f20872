"""Which playbooks a served program offers (as MCP tools, as A2A skills), and under which names.

Every public markdown or Python playbook of a local agent is served. Remote agents are left out: their
tools belong to another server, and re-exporting them would make this server a proxy. A served playbook is
named after its playbook; when two agents have a public playbook of the same name, both are qualified as
`Agent.Playbook`, so no name depends on the order agents are written in. Characters MCP does not allow in
a tool name (SEP-986: letters, digits, `_`, `-`, `.`) become `_`; A2A skill ids use the same names.

A playbook's metadata can say more under `mcp:` (an imported graph's `Invoke` does; the key is named after
the first protocol served, and shapes the playbook for every protocol):

    mcp:
      tool: plan_graph        # the served name; `false` keeps a public playbook out of every listing
      arguments: input        # the whole arguments object is this (dict) parameter
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
OPTIONS_KEY = "mcp"
"""The playbook metadata key that shapes how it is served (see the module docstring)."""

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_.-]")
MAX_NAME = 128
"""The longest served name (MCP's limit for a tool name)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServedPlaybook:
    """A public playbook as a server offers it: an MCP tool, an A2A skill."""

    name: str
    """The name clients call it by (the MCP tool name, the A2A skill id)."""
    agent: str
    """The agent class the playbook belongs to."""
    playbook: Playbook
    """The playbook, as the program (or a Python module it names) declares it."""
    description: str
    """What it does: the playbook's description, or a sentence naming it."""
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
class ServingOptions:
    """A playbook's `mcp:` metadata, read."""

    served: bool = True
    """False for `tool: false`."""
    name: str | None = None
    """The served name, when the metadata gives one."""
    arguments: str | None = None
    """The parameter that takes the whole arguments object."""
    input_schema: JsonSchema | None = None
    """The arguments object's JSON Schema, with `arguments`."""


def serving_options(playbook: Playbook) -> ServingOptions:
    """The playbook's `mcp:` metadata; ValueError naming the playbook and the key when it is malformed."""
    settings = playbook.metadata.extra.get(OPTIONS_KEY)
    if settings is None:
        return ServingOptions()
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
        return ServingOptions(served=False)
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
    return ServingOptions(
        name=tool.strip() if isinstance(tool, str) else None,
        arguments=arguments,
        input_schema=dict(schema) if schema is not None else None,
    )


def is_served(playbook: Playbook) -> bool:
    """Whether a playbook is served: public, markdown or Python, and not `mcp: {tool: false}`."""
    return playbook.public and playbook.kind in SERVED_KINDS and serving_options(playbook).served


def served_playbooks(agents: Iterable[tuple[str, Iterable[Playbook]]]) -> tuple[ServedPlaybook, ...]:
    """The served playbooks of (agent name, playbooks) pairs, in order; only public markdown and Python
    playbooks."""
    offered = [
        (agent, playbook, serving_options(playbook))
        for agent, playbooks in agents
        for playbook in playbooks
        if is_served(playbook)
    ]
    counts = Counter(_served_name(options.name or playbook.name) for _, playbook, options in offered)
    served: list[ServedPlaybook] = []
    for agent, playbook, options in offered:
        plain = _served_name(options.name or playbook.name)
        # A name the metadata gives is kept as it is (by_name reports a clash).
        keep = options.name is not None or counts[plain] == 1
        name = plain if keep else _served_name(f"{agent}.{playbook.name}")
        if options.arguments is not None:
            schema = options.input_schema or {"type": "object"}
        else:
            schema = input_schema(playbook)
        served.append(
            ServedPlaybook(
                name=name,
                agent=agent,
                playbook=playbook,
                description=playbook.description.strip() or f"Runs the PAL playbook {agent}.{playbook.name}.",
                input_schema=schema,
                output_schema=output_schema(playbook),
                arguments_parameter=options.arguments,
            )
        )
    return tuple(served)


def _served_name(text: str) -> str:
    return _NOT_ALLOWED.sub("_", text)[:MAX_NAME] or "_"


def by_name(served: Iterable[ServedPlaybook]) -> Mapping[str, ServedPlaybook]:
    """The served playbooks keyed by name; ValueError naming both when two would share a name."""
    found: dict[str, ServedPlaybook] = {}
    for item in served:
        existing = found.get(item.name)
        if existing is not None:
            raise ValueError(
                f"{existing.qualified_name} and {item.qualified_name} would both be served as {item.name!r}; "
                "rename one of them"
            )
        found[item.name] = item
    return found
