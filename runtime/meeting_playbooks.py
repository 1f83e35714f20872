"""Meeting playbooks in the runtime (seed 002 §2.3, §7.4): calling a `meeting: true` playbook creates a meeting,
invites the attendees, waits for the required ones and runs the playbook in the meeting; an invited
agent joins by running its playbook of the same name. Ending the owner's playbook ends the meeting.

Targeted turns: `Say("meeting @Chef", text)` says `text` to the whole meeting and gives the turn to Chef
(its id goes in the message's `target_agent_ids`); `@Name` is an agent class, `@1001` an agent id,
`@human` the user; several may follow (`meeting @Chef @Critic`), and `meeting 7 @Chef` names the meeting.
An agent given the turn stops waiting at once (MeetingTimeouts.turn) instead of gathering chatter, and
its answer to the chair, `Say("meeting @Host", ...)`, ends the chair's wait the same way. Waiting in a
meeting is `YLD for meeting` or `WaitForMessage("meeting")` (which also returns the messages)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from pal_core.ir import Playbook
from pal_core.messaging import Message, MessagingError
from runtime.errors import CallError, RunError

if TYPE_CHECKING:
    from runtime.execution import Execution


async def run_meeting_as_owner(
    execution: Execution, playbook: Playbook, args: list[Any], kwargs: dict[str, Any]
) -> Any:
    """Create the meeting, gather its attendees, run the playbook inside it, end it."""
    from runtime.execution import Execution as _Execution
    from runtime.interpreter import run_markdown

    services = execution.services
    bound = execution.bind_parameters(playbook, args, kwargs)
    topic = str(bound.get("topic") or playbook.description.split("\n", 1)[0] or playbook.name)
    required = list(playbook.metadata.required_attendees)
    optional = list(playbook.metadata.optional_attendees)
    listed = bound.get("attendees") or []
    if isinstance(listed, str):
        listed = [part.strip() for part in listed.split(",") if part.strip()]
    for name in listed:
        if name not in required and name not in optional:
            optional.append(str(name))
    required_specs = [await attendee_spec(execution, name) for name in required]
    optional_specs = [await attendee_spec(execution, name) for name in optional]
    try:
        meeting = await services.meetings.create_meeting(
            execution.agent.id,
            required_attendees=[spec for spec in required_specs if spec],
            optional_attendees=[spec for spec in optional_specs if spec],
            topic=topic,
            playbook_name=playbook.name,
        )
        services.trace(
            execution.agent,
            "meeting",
            playbook=playbook.name,
            detail=f"meeting {meeting.id} created: {topic}",
        )
        await services.meetings.wait_for_required_attendees(
            meeting.id, timeout=services.limits.meeting_attendance_timeout
        )
    except MessagingError as error:
        raise RunError(
            f"meeting {playbook.name} could not start: {error}",
            agent=execution.agent.klass,
            playbook=playbook.name,
        ) from error
    execution.agent.state.joined_meetings.add(meeting.id)  # its messages are the playbook's, not the loop's
    inner = _Execution(execution.agent, meeting_id=meeting.id)
    inner.stack.frames.extend(execution.stack.frames)
    try:
        return await run_markdown(inner, playbook, args, kwargs)
    finally:
        with contextlib.suppress(MessagingError):  # already ended by a shutdown
            await services.meetings.end_meeting(
                meeting.id, execution.agent.id, reason=f"{playbook.name} finished"
            )
        services.trace(
            execution.agent, "meeting", playbook=playbook.name, detail=f"meeting {meeting.id} ended"
        )


async def attendee_spec(execution: Execution, name: str) -> str | None:
    """The receiver spec of an attendee named by class, `agent <id>`, or `human` (creating a standby agent)."""
    cleaned = str(name).strip()
    lowered = cleaned.lower()
    if lowered in ("human", "user"):
        return "human"
    if lowered.startswith("agent "):
        return cleaned
    instance = await execution.services.agents.agent_instance(cleaned)
    if instance is None:
        raise CallError(f"meeting attendee {cleaned!r} is not an agent of this program")
    return instance.spec


def meeting_receiver(execution: Execution, text: str) -> tuple[str, tuple[str, ...]]:
    """(`meeting <id>`, target agent ids) for a Say target `meeting [<id>] [@Name ...]`; CallError says why
    not (outside a meeting, an unknown @name)."""
    words = text.split()
    if not words or words[0].lower() != "meeting":
        raise CallError(f"{text!r} is not a meeting receiver")
    rest = words[1:]
    meeting_id: str | None = None
    if rest and not rest[0].startswith("@"):
        meeting_id = rest.pop(0)
    if meeting_id is None:
        meeting_id = execution.current_meeting()
        if meeting_id is None:
            raise CallError(f"Say({text!r}, ...) outside a meeting")
    targets: list[str] = []
    for word in rest:
        if not word.startswith("@") or len(word) < 2:
            raise CallError(
                f"receiver {text!r}: after 'meeting' come @Name targets (an agent class, an id or @human), "
                f"not {word!r}"
            )
        target = _target_id(execution, word[1:])
        if target not in targets:
            targets.append(target)
    return f"meeting {meeting_id}", tuple(targets)


def _target_id(execution: Execution, name: str) -> str:
    if name.lower() in ("human", "user"):
        return "human"
    services = execution.services
    if name in services.agents.instances:
        return name
    instance = services.agents.instance_by_class(name)
    if instance is None:
        raise CallError(f"@{name} is not an agent of this program")
    return instance.id


async def wait_in_meeting(execution: Execution, source: str) -> list[Message]:
    """`WaitForMessage("meeting")` / `("meeting <id>")`: the meeting's messages with differential timeouts
    (seed 002 §2.3 step 4), as `YLD for meeting` waits; an attendee of a meeting that ended gets MeetingOver."""
    words = source.split()
    meeting_id = words[1] if len(words) > 1 else execution.current_meeting()
    if meeting_id is None:
        raise CallError('WaitForMessage("meeting") outside a meeting')
    try:
        execution.services.meetings.meeting(meeting_id)
    except MessagingError as error:
        raise CallError(f"WaitForMessage({source!r}): {error}") from None
    return await execution.wait_for_meeting(meeting_id)


async def join_meeting(execution: Execution, invitation: Message) -> None:
    """An invited agent accepts and runs its playbook of the meeting's name in the meeting."""
    if invitation.meeting_id is None:
        return
    await join_meeting_by_id(execution, invitation.meeting_id)


async def join_meeting_by_id(execution: Execution, meeting_id: str, playbook_name: str | None = None) -> Any:
    """Accept the invitation to a meeting and run the meeting's playbook (or `playbook_name`) in it;
    returns the playbook's result, or None when the agent has no such playbook (it declines)."""
    from runtime.interpreter import run_markdown

    services = execution.services
    try:
        meeting = services.meetings.meeting(meeting_id)
    except MessagingError as error:
        raise CallError(f"no meeting {meeting_id} to join: {error}") from None
    name = playbook_name or meeting.playbook_name
    playbook = execution.agent.playbooks.get(name) if name else None
    if playbook is None:
        await services.meetings.reject_invitation(
            meeting_id, execution.agent.id, reason=f"{execution.agent.klass} has no playbook {name}"
        )
        return None
    await services.meetings.accept_invitation(meeting_id, execution.agent.id)
    execution.agent.state.joined_meetings.add(meeting_id)
    services.trace(execution.agent, "meeting", playbook=playbook.name, detail=f"joined meeting {meeting_id}")
    arguments = {}
    names = {parameter.name for parameter in playbook.parameters}
    if "topic" in names:
        arguments["topic"] = meeting.topic
    if "attendees" in names:
        arguments["attendees"] = [
            services.registry.participant(member).klass for member in (meeting.owner_id, *meeting.invitations)
        ]
    from runtime.execution import Execution as _Execution

    return await run_markdown(_Execution(execution.agent, meeting_id=meeting_id), playbook, [], arguments)
