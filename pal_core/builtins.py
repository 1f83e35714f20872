"""The playbooks every agent has without defining them: the one table the validator, the verifier, the
prompt, the local grammar and the runtime all read. Add a builtin here, and its behaviour in
runtime/builtins.py; a test checks that the runtime implements every call listed here.
"""

from __future__ import annotations

import builtins as _python_builtins
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType


class BuiltinKind(StrEnum):
    """How a builtin is used."""

    SPEECH = "speech"
    """Sends a message: allowed on any step, and runs at once (never queued)."""
    CALL = "call"
    """An ordinary call the runtime implements (queued on QUE, immediate on EXE)."""
    FORM = "form"
    """The call spelling of a step (`Return(x)` for `Return[x]`, `Yld(user)` for `yld user`): the answer
    repairs rewrite it; there is nothing to run."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Builtin:
    """One builtin playbook."""

    name: str
    """The name as called."""
    signature: str
    """How it is called, for prompts and docs."""
    summary: str
    """What it does."""
    kind: BuiltinKind = BuiltinKind.CALL
    """How it is used."""
    model_callable: bool = True
    """Whether a model may call it where no step names it (steps that name it literally always may)."""
    parameters: tuple[str, ...] = ()
    """Parameter names in order."""


BUILTINS: Mapping[str, Builtin] = MappingProxyType(
    {
        builtin.name: builtin
        for builtin in (
            Builtin(
                name="Say",
                signature="Say(target, message)",
                summary="send a message to the user, an agent or the current meeting",
                kind=BuiltinKind.SPEECH,
                parameters=("target", "message"),
            ),
            Builtin(
                name="SendMessage",
                signature="SendMessage(target, message)",
                summary="the low-level send that Say is built on",
                kind=BuiltinKind.SPEECH,
                parameters=("target", "message"),
            ),
            Builtin(
                name="WaitForMessage",
                signature="WaitForMessage(source)",
                summary="wait for a message from an agent, a meeting or the user (`*`: anyone)",
                parameters=("source",),
            ),
            Builtin(
                name="SaveArtifact",
                signature="SaveArtifact(name, summary, content)",
                summary="store a named artifact",
                parameters=("name", "summary", "content"),
            ),
            Builtin(
                name="LoadArtifact",
                signature="LoadArtifact(name)",
                summary="bring an artifact's content into the context",
                parameters=("name",),
            ),
            Builtin(
                name="CreateAgent",
                signature="CreateAgent(agent_class, name=None)",
                summary="start a new instance of an agent class; returns its address `agent <id>`",
                parameters=("agent_class", "name"),
            ),
            Builtin(
                name="InviteToMeeting",
                signature="InviteToMeeting(meeting_id, attendees)",
                summary="invite agents (addresses or class names) to a meeting this agent runs",
                parameters=("meeting_id", "attendees"),
            ),
            Builtin(
                name="AcceptMeetingInvitation",
                signature="AcceptMeetingInvitation(meeting_id, inviter_id, topic, meeting_playbook_name)",
                summary="join a meeting this agent was invited to, running its meeting playbook there",
                parameters=("meeting_id", "inviter_id", "topic", "meeting_playbook_name"),
            ),
            Builtin(
                name="EndMeeting",
                signature="EndMeeting()",
                summary="end the meeting this agent runs",
            ),
            Builtin(
                name="EndProgram",
                signature="EndProgram()",
                summary="stop the whole program",
            ),
            Builtin(
                name="Loadfile",
                signature="Loadfile(path, inline=False, silent=False)",
                summary="the text of a file next to the program, for a description placeholder",
                # A model that reads files on its own is an exfiltration path: only steps may name it.
                model_callable=False,
                parameters=("path", "inline", "silent"),
            ),
            Builtin(
                name="Yld",
                signature="Yld(target)",
                summary="yield control, the call form of a YLD step",
                kind=BuiltinKind.FORM,
                parameters=("target",),
            ),
            Builtin(
                name="Return",
                signature="Return(value)",
                summary="return from the current playbook, the call form of a RET step",
                kind=BuiltinKind.FORM,
                parameters=("value",),
            ),
        )
    }
)
"""Builtin playbook name -> what it is."""

SPEECH_CALLS: frozenset[str] = frozenset(name for name, b in BUILTINS.items() if b.kind is BuiltinKind.SPEECH)
"""Builtins that send a message: allowed on any step, and run at once (never queued)."""

RUNTIME_CALLS: frozenset[str] = frozenset(
    name for name, b in BUILTINS.items() if b.kind is not BuiltinKind.FORM
)
"""Builtins the runtime runs when called."""

PYTHON_BUILTIN_FUNCTIONS: frozenset[str] = frozenset(
    name
    for name in dir(_python_builtins)
    # Lower-case only: `len`, `str`, `print`; CamelCase names (`Warning`) could well be playbooks.
    if name.islower() and not name.startswith("_") and callable(getattr(_python_builtins, name))
)
"""Python's own builtin functions and types (`len`, `str`, ...), which steps may use in expressions."""


def is_builtin(name: str) -> bool:
    """Whether a local call to `name` needs no playbook definition."""
    return name in BUILTINS or name in PYTHON_BUILTIN_FUNCTIONS
