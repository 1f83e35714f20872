"""Meetings: an owner, invited attendees, a shared channel with history, and an explicit end.

Lifecycle:

1. `MeetingManager.create_meeting` makes the meeting and its channel (owner only at first) and sends each
   attendee a `MEETING_INVITATION` on their 1:1 channel with the owner.
2. Attendees `accept_invitation` (joining the channel) or `reject_invitation`; the owner gets a
   `MEETING_INVITATION_RESPONSE` either way. `wait_for_required_attendees` returns once every required
   attendee has joined, and raises `MeetingRejected` or `MeetingTimeout` (naming who is missing) otherwise.
   The wait is event-driven: each accept, reject or end wakes it.
3. Members broadcast (`broadcast_as_owner` / `broadcast_as_participant`, or `route_message` to
   `meeting <id>`); the channel records every message, and each member has a last-read index into that
   history (`unread_messages`).
4. `end_meeting` broadcasts `MEETING_ENDED` and closes the channel; the history stays readable.

`current_meeting_id` finds the meeting a call stack is in (the innermost frame with a meeting id).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Protocol

from pal_core.messaging.channel import Channel
from pal_core.messaging.errors import (
    DeliveryError,
    MeetingError,
    MeetingRejected,
    MeetingTimeout,
    MessagingError,
)
from pal_core.messaging.message import Message, MessageType, utc_now
from pal_core.messaging.registry import ChannelRegistry
from pal_core.messaging.specs import agent_spec, meeting_spec

DEFAULT_ATTENDANCE_TIMEOUT = 30.0
"""Seconds `wait_for_required_attendees` waits by default, as in the reference implementation."""


class MeetingFrame(Protocol):
    """What `current_meeting_id` needs of a call-stack frame: the meeting it runs in, if any."""

    @property
    def meeting_id(self) -> str | None:
        """The meeting this frame's playbook runs in, or None."""
        ...


def current_meeting_id(frames: Sequence[MeetingFrame]) -> str | None:
    """The meeting of the innermost frame that has one; `frames` run from the bottom of the stack to the top.

    Nested playbook calls inherit their caller's meeting this way.
    """
    for frame in reversed(frames):
        meeting_id = frame.meeting_id
        if meeting_id:
            return meeting_id
    return None


class InvitationStatus(StrEnum):
    """Where an invitation stands."""

    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True, kw_only=True)
class MeetingInvitation:
    """One attendee's invitation to a meeting."""

    meeting_id: str
    """The meeting."""
    attendee_id: str
    """The invited participant."""
    inviter_id: str
    """Who invited them (the owner)."""
    required: bool
    """Whether the meeting waits for this attendee."""
    status: InvitationStatus = InvitationStatus.PENDING
    """Pending until the attendee accepts or rejects."""
    reason: str = ""
    """The reason the attendee gave when rejecting."""


class Meeting:
    """A meeting's state. Read it freely; it changes only through its `MeetingManager`."""

    __slots__ = (
        "_changed",
        "_end_reason",
        "_ended",
        "_invitations",
        "_joined",
        "_last_read",
        "channel",
        "created_at",
        "id",
        "optional_attendees",
        "owner_id",
        "playbook_name",
        "required_attendees",
        "topic",
    )

    def __init__(
        self,
        *,
        meeting_id: str,
        owner_id: str,
        channel: Channel,
        required_attendees: tuple[str, ...],
        optional_attendees: tuple[str, ...],
        topic: str,
        playbook_name: str | None,
    ) -> None:
        self.id = meeting_id
        self.owner_id = owner_id
        self.channel = channel
        self.required_attendees = required_attendees
        self.optional_attendees = optional_attendees
        self.topic = topic
        self.playbook_name = playbook_name
        self.created_at: datetime = utc_now()
        self._invitations: dict[str, MeetingInvitation] = {}
        self._joined: list[str] = []
        self._last_read: dict[str, int] = {owner_id: 0}
        self._ended = False
        self._end_reason = ""
        # Replaced by a fresh event after each change, so a waiter sleeps until the next change, no polling.
        self._changed = asyncio.Event()

    def __repr__(self) -> str:
        state = "ended" if self._ended else "active"
        return f"<Meeting {self.id} owner={self.owner_id} joined={self._joined} {state}>"

    @property
    def joined_attendees(self) -> tuple[str, ...]:
        """Ids of the attendees who joined, in joining order (the owner is not listed)."""
        return tuple(self._joined)

    @property
    def participant_ids(self) -> tuple[str, ...]:
        """The owner, then the joined attendees."""
        return (self.owner_id, *self._joined)

    @property
    def invitations(self) -> Mapping[str, MeetingInvitation]:
        """Each invited attendee's invitation, by attendee id (a read-only view)."""
        return MappingProxyType(self._invitations)

    @property
    def ended(self) -> bool:
        """Whether the meeting has ended."""
        return self._ended

    @property
    def end_reason(self) -> str:
        """Why the meeting ended, if it did and a reason was given."""
        return self._end_reason

    @property
    def history(self) -> tuple[Message, ...]:
        """Every message sent in the meeting, oldest first."""
        return self.channel.history

    def is_member(self, agent_id: str) -> bool:
        """Whether `agent_id` is the owner or a joined attendee."""
        return agent_id == self.owner_id or agent_id in self._joined

    def last_read_index(self, agent_id: str) -> int:
        """How many history messages `agent_id` has read. Raises `MeetingError` for a non-member."""
        try:
            return self._last_read[agent_id]
        except KeyError:
            raise MeetingError(f"{agent_id} is not a member of meeting {self.id}") from None

    def missing_required_attendees(self) -> tuple[str, ...]:
        """Required attendees who have not joined yet."""
        return tuple(agent_id for agent_id in self.required_attendees if agent_id not in self._joined)

    def rejected_required_attendees(self) -> tuple[str, ...]:
        """Required attendees whose invitation stands rejected."""
        return tuple(
            agent_id
            for agent_id in self.required_attendees
            if (invitation := self._invitations.get(agent_id)) is not None
            and invitation.status is InvitationStatus.REJECTED
        )

    def _signal_change(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()


class MeetingManager:
    """Creates meetings and carries out every change to them, on top of a `ChannelRegistry`."""

    def __init__(self, registry: ChannelRegistry) -> None:
        """Manage meetings whose channels live in `registry`."""
        self._registry = registry
        self._meetings: dict[str, Meeting] = {}
        self._next_id = 1
        registry.add_shutdown_hook(self.shutdown)

    def meeting(self, meeting_id: str) -> Meeting:
        """The meeting with this id. Raises `MeetingError` if there is none."""
        try:
            return self._meetings[meeting_id]
        except KeyError:
            raise MeetingError(f"there is no meeting {meeting_id!r}") from None

    @property
    def meetings(self) -> tuple[Meeting, ...]:
        """Every meeting, ended ones included, in creation order."""
        return tuple(self._meetings.values())

    def meetings_of(self, agent_id: str) -> tuple[Meeting, ...]:
        """The active meetings `agent_id` owns or has joined."""
        return tuple(m for m in self._meetings.values() if not m.ended and m.is_member(agent_id))

    def _active(self, meeting_id: str) -> Meeting:
        meeting = self.meeting(meeting_id)
        if meeting.ended:
            reason = f" ({meeting.end_reason})" if meeting.end_reason else ""
            raise MeetingError(f"meeting {meeting_id} has ended{reason}")
        return meeting

    def _new_id(self) -> str:
        while str(self._next_id) in self._meetings:
            self._next_id += 1
        meeting_id = str(self._next_id)
        self._next_id += 1
        return meeting_id

    # Creating and inviting

    async def create_meeting(
        self,
        owner_id: str,
        *,
        required_attendees: Iterable[str] = (),
        optional_attendees: Iterable[str] = (),
        topic: str = "",
        playbook_name: str | None = None,
        meeting_id: str | None = None,
        invitation_text: str | None = None,
    ) -> Meeting:
        """Create a meeting owned by `owner_id` and invite its attendees.

        Attendees are receiver specs (`agent 1001`, `1001`, a class name such as `HeadChef`); an attendee
        listed as both required and optional is required, and the owner is never invited. `invitation_text`
        replaces the default invitation wording. Returns once every invitation is delivered; use
        `wait_for_required_attendees` to wait for the attendees to join. If some invitations cannot be
        delivered, the others still are and `DeliveryError` names the attendees missed (the meeting exists;
        `meeting(id)` finds it).
        """
        owner = self._registry.participant(owner_id)
        required = self._resolve_attendees(required_attendees, owner_id, skip=())
        optional = self._resolve_attendees(optional_attendees, owner_id, skip=required)
        if meeting_id is None:
            meeting_id = self._new_id()
        elif meeting_id in self._meetings:
            raise MeetingError(f"meeting {meeting_id} already exists")
        channel = await self._registry.create_meeting_channel(meeting_id, [owner_id])
        meeting = Meeting(
            meeting_id=meeting_id,
            owner_id=owner_id,
            channel=channel,
            required_attendees=required,
            optional_attendees=optional,
            topic=topic,
            playbook_name=playbook_name,
        )
        self._meetings[meeting_id] = meeting
        if invitation_text is None:
            invitation_text = self._invitation_text(meeting, f"{owner.klass} (agent {owner.id})")
        await self._invite(meeting, (*required, *optional), invitation_text)
        return meeting

    def _resolve_attendees(
        self, specs: Iterable[str], owner_id: str, skip: tuple[str, ...]
    ) -> tuple[str, ...]:
        if isinstance(specs, str):
            raise MeetingError(f"attendees must be a list of receiver specs, got the single string {specs!r}")
        ids: list[str] = []
        for spec in specs:
            attendee_id = self._registry.resolve_participant(spec).id
            if attendee_id != owner_id and attendee_id not in ids and attendee_id not in skip:
                ids.append(attendee_id)
        return tuple(ids)

    @staticmethod
    def _invitation_text(meeting: Meeting, owner_name: str) -> str:
        text = f"{owner_name} invites you to meeting {meeting.id}"
        if meeting.topic:
            text += f" about: {meeting.topic}"
        if meeting.playbook_name:
            text += f". Join by running your {meeting.playbook_name} playbook"
        return text + "."

    async def _invite(self, meeting: Meeting, attendee_ids: Sequence[str], text: str) -> None:
        """Record the attendees' invitations, then send each one; a failed send does not stop the others."""
        # Every invitation is recorded before the first send (which may yield), so the meeting's state is
        # complete for anyone who looks while the invitations go out.
        for attendee_id in attendee_ids:
            meeting._invitations[attendee_id] = MeetingInvitation(
                meeting_id=meeting.id,
                attendee_id=attendee_id,
                inviter_id=meeting.owner_id,
                required=attendee_id in meeting.required_attendees,
            )
        meeting._signal_change()
        failures: list[Exception] = []
        failed: list[str] = []
        for attendee_id in attendee_ids:
            try:
                await self._registry.route_message(
                    meeting.owner_id,
                    agent_spec(attendee_id),
                    text,
                    message_type=MessageType.MEETING_INVITATION,
                    meeting_id=meeting.id,
                )
            except MessagingError as error:
                failures.append(error)
                failed.append(attendee_id)
        if failures:
            raise DeliveryError(
                f"meeting {meeting.id}: invitations were not delivered to {', '.join(failed)}",
                failures,
                failed=failed,
            )

    async def invite(
        self, meeting_id: str, inviter_id: str, attendee_spec: str, *, required: bool = False
    ) -> None:
        """Invite one more attendee to a running meeting; only the owner may. Re-inviting someone who
        rejected makes their invitation pending again; inviting a member does nothing."""
        meeting = self._active(meeting_id)
        if inviter_id != meeting.owner_id:
            raise MeetingError(f"only the owner ({meeting.owner_id}) can invite to meeting {meeting_id}")
        attendee_id = self._registry.resolve_participant(attendee_spec).id
        if meeting.is_member(attendee_id):
            return
        if required and attendee_id not in meeting.required_attendees:
            meeting.required_attendees = (*meeting.required_attendees, attendee_id)
            meeting.optional_attendees = tuple(a for a in meeting.optional_attendees if a != attendee_id)
        elif attendee_id not in meeting.required_attendees and attendee_id not in meeting.optional_attendees:
            meeting.optional_attendees = (*meeting.optional_attendees, attendee_id)
        owner = self._registry.participant(meeting.owner_id)
        text = self._invitation_text(meeting, f"{owner.klass} (agent {owner.id})")
        await self._invite(meeting, (attendee_id,), text)

    # Answering invitations

    def _invitation(self, meeting: Meeting, attendee_id: str) -> MeetingInvitation:
        try:
            return meeting._invitations[attendee_id]
        except KeyError:
            raise MeetingError(f"{attendee_id} was not invited to meeting {meeting.id}") from None

    async def accept_invitation(self, meeting_id: str, attendee_id: str) -> Meeting:
        """`attendee_id` joins the meeting: it is put on the meeting channel, reads the history from the
        start, and the owner is told. Accepting again is harmless."""
        meeting = self._active(meeting_id)
        invitation = self._invitation(meeting, attendee_id)
        if attendee_id in meeting._joined:
            return meeting
        meeting.channel.add_participant(self._registry.participant(attendee_id))
        meeting._joined.append(attendee_id)
        meeting._last_read[attendee_id] = 0
        meeting._invitations[attendee_id] = replace(invitation, status=InvitationStatus.ACCEPTED, reason="")
        meeting._signal_change()
        await self._respond(
            meeting, attendee_id, f"{self._registry.describe(attendee_id)} joined meeting {meeting.id}"
        )
        return meeting

    async def reject_invitation(self, meeting_id: str, attendee_id: str, reason: str = "") -> None:
        """`attendee_id` declines; the owner is told. Raises `MeetingError` if it already joined."""
        meeting = self._active(meeting_id)
        invitation = self._invitation(meeting, attendee_id)
        if attendee_id in meeting._joined:
            raise MeetingError(f"{attendee_id} already joined meeting {meeting_id}; it cannot reject now")
        meeting._invitations[attendee_id] = replace(
            invitation, status=InvitationStatus.REJECTED, reason=reason
        )
        meeting._signal_change()
        text = f"{self._registry.describe(attendee_id)} declined meeting {meeting.id}"
        await self._respond(meeting, attendee_id, f"{text}: {reason}" if reason else text)

    async def _respond(self, meeting: Meeting, attendee_id: str, text: str) -> None:
        await self._registry.route_message(
            attendee_id,
            agent_spec(meeting.owner_id),
            text,
            message_type=MessageType.MEETING_INVITATION_RESPONSE,
            meeting_id=meeting.id,
        )

    async def leave_meeting(self, meeting_id: str, attendee_id: str) -> None:
        """A joined attendee leaves: it is taken off the channel and stops getting broadcasts."""
        meeting = self._active(meeting_id)
        if attendee_id not in meeting._joined:
            raise MeetingError(f"{attendee_id} has not joined meeting {meeting_id}")
        meeting.channel.remove_participant(attendee_id)
        meeting._joined.remove(attendee_id)
        meeting._signal_change()

    async def wait_for_required_attendees(
        self, meeting_id: str, timeout: float = DEFAULT_ATTENDANCE_TIMEOUT
    ) -> Meeting:
        """Return once every required attendee has joined.

        Raises `MeetingTimeout` naming the missing attendees after `timeout` seconds, `MeetingRejected` as
        soon as a required attendee rejects, and `MeetingError` if the meeting ends meanwhile.
        """
        if (
            not isinstance(timeout, int | float)
            or isinstance(timeout, bool)
            or not math.isfinite(timeout)
            or timeout < 0
        ):
            raise ValueError(f"timeout must be a finite number of seconds >= 0, got {timeout!r}")
        meeting = self.meeting(meeting_id)
        try:
            async with asyncio.timeout(timeout):
                while True:
                    self._active(meeting_id)
                    rejected = meeting.rejected_required_attendees()
                    if rejected:
                        names = [self._registry.describe(agent_id) for agent_id in rejected]
                        raise MeetingRejected(meeting_id, rejected, names)
                    if not meeting.missing_required_attendees():
                        return meeting
                    await meeting._changed.wait()
        except TimeoutError:
            missing = meeting.missing_required_attendees()
            if not missing:
                return meeting
            names = [self._registry.describe(agent_id) for agent_id in missing]
            raise MeetingTimeout(meeting_id, timeout, missing, names) from None

    # Talking

    async def broadcast(
        self, meeting_id: str, sender_id: str, content: str, *, target_agent_ids: Iterable[str] = ()
    ) -> Message:
        """Send `content` from a member to every other member; returns the message. `target_agent_ids`
        names the attendees it is addressed to (they wait less for it; see `pal_core.messaging.timeouts`)."""
        meeting = self._active(meeting_id)
        if not meeting.is_member(sender_id):
            raise MeetingError(f"{sender_id} cannot speak in meeting {meeting_id}: it has not joined")
        return await self._registry.route_message(
            sender_id, meeting_spec(meeting_id), content, target_agent_ids=target_agent_ids
        )

    async def broadcast_as_owner(
        self, meeting_id: str, owner_id: str, content: str, *, target_agent_ids: Iterable[str] = ()
    ) -> Message:
        """`broadcast`, checking that `owner_id` owns the meeting."""
        if self.meeting(meeting_id).owner_id != owner_id:
            raise MeetingError(f"{owner_id} does not own meeting {meeting_id}")
        return await self.broadcast(meeting_id, owner_id, content, target_agent_ids=target_agent_ids)

    async def broadcast_as_participant(
        self, meeting_id: str, agent_id: str, content: str, *, target_agent_ids: Iterable[str] = ()
    ) -> Message:
        """`broadcast`, checking that `agent_id` is a joined attendee (not the owner)."""
        if agent_id not in self.meeting(meeting_id)._joined:
            raise MeetingError(f"{agent_id} is not a joined attendee of meeting {meeting_id}")
        return await self.broadcast(meeting_id, agent_id, content, target_agent_ids=target_agent_ids)

    async def post(self, message: Message) -> None:
        """Send a ready-made message into its meeting (`message.meeting_id`) from a member."""
        if message.meeting_id is None:
            raise MeetingError(f"message {message.id} has no meeting_id")
        meeting = self._active(message.meeting_id)
        if not meeting.is_member(message.sender_id):
            raise MeetingError(f"{message.sender_id} cannot speak in meeting {meeting.id}: it has not joined")
        await meeting.channel.send(message)

    def unread_messages(self, meeting_id: str, agent_id: str) -> list[Message]:
        """The history messages `agent_id` has not read yet (its own included), oldest first; they count
        as read from now on. Works on ended meetings too."""
        meeting = self.meeting(meeting_id)
        start = meeting.last_read_index(agent_id)
        unread = meeting.channel.history_since(start)
        meeting._last_read[agent_id] = start + len(unread)
        return unread

    def mark_read(self, meeting_id: str, agent_id: str, index: int | None = None) -> None:
        """Set `agent_id`'s last-read index (default: the end of the history)."""
        meeting = self.meeting(meeting_id)
        meeting.last_read_index(agent_id)
        length = meeting.channel.history_length
        if index is None:
            index = length
        if not isinstance(index, int) or not 0 <= index <= length:
            raise MeetingError(
                f"read index {index!r} is outside the history of meeting {meeting_id} (0..{length})"
            )
        meeting._last_read[agent_id] = index

    # Ending

    async def end_meeting(self, meeting_id: str, owner_id: str, reason: str = "") -> Message:
        """The owner ends the meeting: every member gets a `MEETING_ENDED` message, then the channel closes.
        Waiters for attendees get `MeetingError`. Returns the ended message."""
        meeting = self._active(meeting_id)
        if owner_id != meeting.owner_id:
            raise MeetingError(f"only the owner ({meeting.owner_id}) can end meeting {meeting_id}")
        content = f"Meeting {meeting_id} has ended" + (f": {reason}" if reason else ".")
        message = Message(
            sender_id=owner_id,
            sender_klass=self._registry.participant(owner_id).klass,
            content=content,
            message_type=MessageType.MEETING_ENDED,
            meeting_id=meeting_id,
        )
        self._finish(meeting, reason or "ended by its owner")
        try:
            await meeting.channel.send(message)
        finally:
            meeting.channel.close(f"meeting {meeting_id} has ended")
        return message

    def _finish(self, meeting: Meeting, reason: str) -> None:
        meeting._ended = True
        meeting._end_reason = reason
        meeting._signal_change()

    async def shutdown(self) -> None:
        """End every active meeting without messages (the program is stopping); waiters get `MeetingError`.

        `ChannelRegistry.shutdown` calls this; calling it again is harmless."""
        for meeting in self._meetings.values():
            if not meeting.ended:
                self._finish(meeting, "the program shut down")
                meeting.channel.close(f"meeting {meeting.id} has ended: the program shut down")
