"""What the readers find in a team, before any PAL is written: participants, the speaking policy and the
termination conditions, for autogen-agentchat teams and ag2 group chats alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class MemberKind(StrEnum):
    """How a participant takes its turn in the imported program."""

    PYTHON = "python"
    """A custom agent: its turn calls the live agent's `on_messages_stream` (no model)."""
    AG2_PYTHON = "ag2_python"
    """An ag2 agent without an LLM: its turn calls the live agent's `a_generate_reply` (no model)."""
    LLM = "llm"
    """An AssistantAgent or an ag2 agent with an LLM: a playbook the run's model executes."""
    USER = "user"
    """An AutoGen UserProxyAgent reading the console: its turn asks the run's user (`Say`, `WaitForMessage`)."""
    UNSUPPORTED = "unsupported"
    """Something the importer cannot run (a nested team, ...): its turn fails with the reason."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Handoff:
    """A hand-off an LLM agent may make (AssistantAgent `handoffs`)."""

    name: str
    """The hand-off tool's name (`transfer_to_bob`)."""
    target: str
    """Who the conversation goes to."""
    description: str
    """When to hand off."""
    message: str
    """The hand-off message's text."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolArgument:
    """One argument of a tool, as the framework declares it to the model (its JSON schema)."""

    name: str
    """The argument's name."""
    type: str | None
    """Its PAL type, or None when the schema gives none PAL has."""
    required: bool = True
    """Whether the model must give it."""
    default: Any = None
    """The schema's default when it is not required (None: left out of the call)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatTool:
    """A tool an LLM participant may call: an AutoGen agent's tool (run by the live agent's workbench), or a
    function an ag2 agent registered for its LLM (the call is suggested in the chat; its executor runs it)."""

    name: str
    """The name the model calls it by."""
    description: str
    """What it does, as the framework tells the model."""
    arguments: tuple[ToolArgument, ...] = ()
    """The arguments the model fills in, required ones first."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    """One participant."""

    name: str
    """Its name in the framework (the transcript's `source`)."""
    pal: str
    """Its PAL agent name."""
    kind: MemberKind
    """How it takes its turn."""
    description: str
    """The framework's description of it (what a selector reads)."""
    class_name: str
    """The framework class, `module.Class`."""
    system_message: str | None = None
    """An LLM agent's system message."""
    tools: tuple[ChatTool, ...] = ()
    """An LLM agent's tools."""
    handoffs: tuple[Handoff, ...] = ()
    """An LLM agent's hand-offs."""
    reflect_on_tool_use: bool = False
    """AssistantAgent: after its tool calls the model writes the reply (else the reply is their summary)."""
    max_tool_iterations: int = 1
    """AssistantAgent: how many rounds of tool calls one turn may make before it ends."""
    reason: str = ""
    """Why an UNSUPPORTED member is not run."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Termination:
    """A termination condition: a leaf the chair checks, or `and` / `or` of others."""

    kind: str
    """`or`, `and`, or a leaf: `max_messages`, `text_mention`, `handoff`, `source_match`, `text_message`,
    `function`, `never` (not expressed: a diagnostic says why)."""
    children: tuple[Termination, ...] = ()
    """The combined conditions of `and` / `or`."""
    options: dict[str, Any] = field(default_factory=dict)
    """The leaf's settings (`max_messages`, `text`, `sources`, `target`, `func`, ...)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """How the chair picks the next speaker(s)."""

    kind: str
    """`round_robin`, `selector`, `swarm`, `graph`, `magentic_one` (autogen-agentchat) or `ag2`."""
    options: dict[str, Any] = field(default_factory=dict)
    """The policy's settings, by kind (see `_chair`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Team:
    """A team or group chat as the readers found it."""

    name: str
    """The chair's PAL agent name."""
    title: str
    """The team's own name (the manager's name for ag2)."""
    framework: str
    """`autogen` (autogen-agentchat) or `ag2`."""
    class_name: str
    """The team class, `module.Class`."""
    source: str
    """The team's import path (`module:attribute`), where the program finds the live objects."""
    description: str
    """The team's description."""
    members: tuple[Member, ...]
    """The participants, in the team's order."""
    policy: Policy
    """The speaking policy."""
    termination: Termination | None = None
    """The termination condition (autogen-agentchat), None for none."""
    max_turns: int | None = None
    """autogen-agentchat `max_turns`, ag2 `max_round`."""
