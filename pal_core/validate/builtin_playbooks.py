"""The playbooks every agent has without defining them: the one list the whole project uses.

A step may call these by name (`Say(user, ...)`, `SaveArtifact(...)`) and the validator knows them;
the runtime provides their behaviour. Add a builtin here, not in a second list elsewhere.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from types import MappingProxyType

BUILTIN_PLAYBOOKS: Mapping[str, str] = MappingProxyType(
    {
        "Say": "Say(target, message): send a message to the user, an agent or the current meeting",
        "SendMessage": "SendMessage(target_agent_id, message): the low-level send that Say is built on",
        "WaitForMessage": "WaitForMessage(source_agent_id): wait for a message from an agent or the user",
        "SaveArtifact": "SaveArtifact(name, summary, content): store a named artifact",
        "LoadArtifact": "LoadArtifact(name): bring an artifact's content into the context",
        "CreateAgent": "CreateAgent(agent_class, ...): start a new instance of an agent class",
        "InviteToMeeting": "InviteToMeeting(meeting_id, attendees): add agents to a running meeting",
        "Loadfile": "Loadfile(path, inline=False, silent=False): file content for a description placeholder",
        "EndProgram": "EndProgram(): stop the whole program",
        "Yld": "Yld(target): yield control, the call form of a YLD step",
        "Return": "Return(value): return from the current playbook, the call form of a RET step",
    }
)
"""Builtin playbook name -> what it does (signature first)."""

PYTHON_BUILTIN_FUNCTIONS: frozenset[str] = frozenset(
    name
    for name in dir(builtins)
    # Lower-case only: `len`, `str`, `print`; CamelCase names (`Warning`) could well be playbooks.
    if name.islower() and not name.startswith("_") and callable(getattr(builtins, name))
)
"""Python's own builtin functions and types (`len`, `str`, ...), which steps may use in expressions."""


def is_builtin(name: str) -> bool:
    """Whether a local call to `name` needs no playbook definition."""
    return name in BUILTIN_PLAYBOOKS or name in PYTHON_BUILTIN_FUNCTIONS
