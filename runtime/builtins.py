"""What the builtin playbooks of pal_core.builtins do at run time: one function per runtime call.

`call_builtin(execution, name, args, kwargs)` binds the arguments to the builtin's parameters (so
`Say("hi")`, `Say(user, "hi")` and `Say(target="user", message="hi")` mean the same) and runs it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pal_core.builtins import BUILTINS, RUNTIME_CALLS
from runtime.errors import CallError, ProgramExit

if TYPE_CHECKING:
    from runtime.execution import Execution

_Implementation = Callable[["Execution", dict[str, Any]], Awaitable[Any]]


def _bind(name: str, args: list[Any], kwargs: Mapping[str, Any], required: int) -> dict[str, Any]:
    parameters = BUILTINS[name].parameters
    if len(args) > len(parameters):
        raise CallError(f"{BUILTINS[name].signature} takes {len(parameters)} arguments, got {len(args)}")
    bound = dict(zip(parameters, args, strict=False))
    for key, value in kwargs.items():
        key = key.lstrip("$")
        if key not in parameters:
            raise CallError(f"{BUILTINS[name].signature} has no parameter {key}")
        if key in bound:
            raise CallError(f"{BUILTINS[name].signature} got two values for {key}")
        bound[key] = value
    missing = [parameter for parameter in parameters[:required] if parameter not in bound]
    if missing:
        raise CallError(f"{BUILTINS[name].signature} needs {', '.join(missing)}")
    return bound


async def _say(execution: Execution, bound: dict[str, Any]) -> None:
    if "message" not in bound:
        # `Say("Hello")`: one argument is the message, to the user (models write it this way often).
        bound = {"target": "user", "message": bound.get("target")}
    await execution.say(str(bound["target"]), str(bound["message"]))


async def _wait_for_message(execution: Execution, bound: dict[str, Any]) -> Any:
    return await execution.wait_for_message(str(bound.get("source", "*")))


async def _save_artifact(execution: Execution, bound: dict[str, Any]) -> str:
    return execution.save_artifact(str(bound["name"]), str(bound["summary"]), str(bound["content"]))


async def _load_artifact(execution: Execution, bound: dict[str, Any]) -> Any:
    return execution.load_artifact(str(bound["name"]))


async def _create_agent(execution: Execution, bound: dict[str, Any]) -> str:
    klass = str(bound["agent_class"]).strip()
    agent = execution.services.program.agent(klass)
    if agent is None:
        known = ", ".join(candidate.name for candidate in execution.services.program.agents)
        raise CallError(f"CreateAgent: the program has no agent class {klass!r} (classes: {known})")
    instance = await execution.services.agents.spawn_instance(agent, name=bound.get("name"))
    return instance.spec


async def _invite_to_meeting(execution: Execution, bound: dict[str, Any]) -> str:
    from runtime.meeting_playbooks import attendee_spec

    meeting_id = str(bound["meeting_id"]).strip().removeprefix("meeting ").strip()
    attendees = bound["attendees"]
    if isinstance(attendees, str):
        attendees = [part.strip() for part in attendees.split(",") if part.strip()]
    invited = []
    for attendee in attendees:
        spec = await attendee_spec(execution, str(attendee))
        if spec is not None:
            await execution.services.meetings.invite(meeting_id, execution.agent.id, spec)
            invited.append(spec)
    return f"invited {', '.join(invited) or 'nobody'} to meeting {meeting_id}"


async def _accept_meeting_invitation(execution: Execution, bound: dict[str, Any]) -> Any:
    from runtime.meeting_playbooks import join_meeting_by_id

    meeting_id = str(bound["meeting_id"]).strip().removeprefix("meeting ").strip()
    return await join_meeting_by_id(execution, meeting_id, playbook_name=bound.get("meeting_playbook_name"))


async def _end_meeting(execution: Execution, bound: dict[str, Any]) -> str:
    meeting_id = execution.current_meeting()
    if meeting_id is None:
        raise CallError("EndMeeting() outside a meeting")
    await execution.services.meetings.end_meeting(meeting_id, execution.agent.id, reason="EndMeeting()")
    return f"meeting {meeting_id} ended"


async def _end_program(execution: Execution, bound: dict[str, Any]) -> None:
    raise ProgramExit(execution.agent.id, "EndProgram()")


async def _loadfile(execution: Execution, bound: dict[str, Any]) -> str:
    base = execution.services.program_folder
    path = Path(str(bound["path"]))
    resolved = (base / path).resolve() if not path.is_absolute() else path.resolve()
    if not resolved.is_relative_to(base.resolve()):
        raise CallError(f"Loadfile: {path} is outside the program's folder {base}")
    try:
        return resolved.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CallError(f"Loadfile: cannot read {path}: {error}") from None


_IMPLEMENTATIONS: Mapping[str, tuple[_Implementation, int]] = {
    # name -> (implementation, how many leading parameters are required)
    "Say": (_say, 1),
    "SendMessage": (_say, 2),
    "WaitForMessage": (_wait_for_message, 0),
    "SaveArtifact": (_save_artifact, 3),
    "LoadArtifact": (_load_artifact, 1),
    "CreateAgent": (_create_agent, 1),
    "InviteToMeeting": (_invite_to_meeting, 2),
    "AcceptMeetingInvitation": (_accept_meeting_invitation, 1),
    "EndMeeting": (_end_meeting, 0),
    "EndProgram": (_end_program, 0),
    "Loadfile": (_loadfile, 1),
}

if set(_IMPLEMENTATIONS) != RUNTIME_CALLS:  # a new row in pal_core.builtins needs its behaviour here
    raise ImportError(
        f"runtime builtins out of step with pal_core.builtins: {set(_IMPLEMENTATIONS) ^ RUNTIME_CALLS}"
    )


def is_runtime_builtin(name: str) -> bool:
    """Whether `name` is a builtin the runtime runs."""
    return name in _IMPLEMENTATIONS


async def call_builtin(execution: Execution, name: str, args: list[Any], kwargs: Mapping[str, Any]) -> Any:
    """Run a builtin with Python values."""
    entry = _IMPLEMENTATIONS.get(name)
    if entry is None:
        kind = BUILTINS[name].kind.value if name in BUILTINS else "unknown"
        raise CallError(f"{name} is not a call the runtime runs ({kind})")
    implementation, required = entry
    return await implementation(execution, _bind(name, list(args), kwargs, required))
