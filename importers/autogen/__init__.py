"""Import an AutoGen team or an ag2 group chat as a PAL program that runs: the chat becomes a PAL meeting.

    pal import autogen myapp.teams:team -o team.pal [--strict]
    pal run team.pal --input '{"task": "Write a haiku"}'   # {"messages": [...], "stop_reason": ...}

`import_target("module:attr")` and `import_team(team)` return an `ImportResult`: the program and a
diagnostic (AG101-AG108, docs/autogen.md) for every part it does not express. Targets: autogen-agentchat
`RoundRobinGroupChat`, `SelectorGroupChat`, `Swarm`, `GraphFlow`, `MagenticOneGroupChat`, and an ag2
`GroupChat` or `GroupChatManager`. The live objects are read (never `dump_component()`, which fails on
custom agents and drops callable edge conditions), and the program finds them again at run time by the
target's import path.

The team is a meeting: the chair agent (named after the team) holds the speaking policy and the
termination conditions in its `GroupChat` meeting playbook and gives each turn to one attendee
(`Say("meeting @Alice", "@Alice")`); every participant is an agent with a `GroupChat` playbook that
answers when given the turn: custom agents and ag2 agents without an LLM through their own code (no model
call), AssistantAgents and ag2 LLM agents through a playbook the run's model executes, their tools bound by
import path. See `_chair` for the policies and `_termination` for the conditions.
"""

from __future__ import annotations

from typing import Any

from importers import ImportResult, ImportTargetError, load_target
from importers.autogen._chair import MEETING_PLAYBOOK
from importers.autogen._diagnostics import CODES
from importers.autogen._emit import ENTRY_PLAYBOOK, build_program
from importers.common.diagnostics import Findings
from importers.common.naming import camel_case, target_name

_GENERIC_NAMES = frozenset({"team", "groupchat", "group_chat", "manager", "chat", "flow", "swarm"})


def _framework(team: Any) -> str | None:
    module = type(team).__module__
    if module.startswith("autogen_agentchat."):
        return "autogen"
    if module.startswith("autogen.") and type(team).__name__ in ("GroupChat", "GroupChatManager"):
        return "ag2"
    return None


def import_team(
    team: Any, *, name: str | None = None, source: str, strict: bool = False, initiator: str | None = None
) -> ImportResult:
    """The PAL program of a live team; `source` is its import path (`module:attr`), by which the program
    finds the team's agents and functions when it runs. For an ag2 group chat, `initiator` names the member
    that says the task (as `initiator.initiate_chat(manager, message=task)`); by default the task comes from
    a `user` outside the group."""
    findings = Findings()
    framework = _framework(team)
    if initiator is not None and framework != "ag2":
        raise ImportTargetError(f"{source}: initiator= applies to ag2 group chats only")
    if framework == "autogen":
        from autogen_agentchat.base import Team as AgentTeam

        if not isinstance(team, AgentTeam) or not hasattr(team, "_participants"):
            raise ImportTargetError(f"{source} is a {type(team).__name__}, not an AutoGen team")
        from importers.autogen._read import read_team

        try:
            model = read_team(team, pal=camel_case(name or str(team.name)), source=source, findings=findings)
        except TypeError as error:
            raise ImportTargetError(f"{source}: {error}") from None
    elif framework == "ag2":
        from importers.autogen._read_ag2 import read_group_chat

        try:
            model = read_group_chat(
                team,
                pal=camel_case(name or "GroupChatManager"),
                source=source,
                findings=findings,
                initiator=initiator,
            )
        except ValueError as error:
            raise ImportTargetError(f"{source}: {error}") from None
    else:
        raise ImportTargetError(
            f"{source} is a {type(team).__module__}.{type(team).__name__}; pal import autogen reads "
            "RoundRobinGroupChat, SelectorGroupChat, Swarm, GraphFlow, MagenticOneGroupChat and ag2 GroupChat / "
            "GroupChatManager objects"
        )
    return findings.result(build_program(model), target=source, strict=strict)


def import_target(target: str, *, strict: bool = False, initiator: str | None = None) -> ImportResult:
    """The PAL program of the team at `target` (`package.module:attribute`); `initiator` as for `import_team`."""
    team = load_target(target)
    own = getattr(team, "name", None) if _framework(team) == "autogen" else None
    if own and own not in (
        "RoundRobinGroupChat",
        "SelectorGroupChat",
        "Swarm",
        "GraphFlow",
        "MagenticOneGroupChat",
    ):
        name = str(own)
    else:
        name = target_name(target, _GENERIC_NAMES, ignore_case=True)
    return import_team(team, name=name, source=target, strict=strict, initiator=initiator)


__all__ = ["CODES", "ENTRY_PLAYBOOK", "MEETING_PLAYBOOK", "import_target", "import_team"]
