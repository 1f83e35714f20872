"""Channels: one conduit for 1:1 conversations and meetings alike.

A channel holds participants and delivers each message to every participant but its sender. It also runs
streams (start, chunks, complete) for its stream observers, but only when a human participant is present:
agents get messages whole.

Channel ids are deterministic, so both sides of a conversation find the same channel:
`channel_<low id>_<high id>` (the two participant ids sorted) and `meeting_<meeting id>`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from pal_core.messaging.errors import (
    ChannelClosed,
    DeliveryError,
    DuplicateParticipant,
    InvalidMessage,
    NotAParticipant,
    ObserverError,
    StreamError,
)
from pal_core.messaging.message import Message
from pal_core.messaging.participants import Participant
from pal_core.messaging.streams import (
    StreamChunkEvent,
    StreamCompleteEvent,
    StreamObserver,
    StreamStartEvent,
    notify_observers,
)


def direct_channel_id(first_id: str, second_id: str) -> str:
    """The id of the 1:1 channel between two participants, the same whichever is given first."""
    low, high = sorted((first_id, second_id))
    return f"channel_{low}_{high}"


def meeting_channel_id(meeting_id: str) -> str:
    """The id of a meeting's channel."""
    return f"meeting_{meeting_id}"


class _ActiveStream:
    """A stream between its start and its completion."""

    __slots__ = ("chunks", "start")

    def __init__(self, start: StreamStartEvent) -> None:
        self.start = start
        self.chunks: list[str] = []


class Channel:
    """A set of participants that messages are delivered among, with stream observers for human output."""

    def __init__(
        self,
        channel_id: str,
        participants: Iterable[Participant] = (),
        *,
        meeting_id: str | None = None,
        stream_observers: Iterable[StreamObserver] = (),
        keep_history: bool = False,
    ) -> None:
        """Make a channel; `meeting_id` marks it as that meeting's channel; `keep_history` records every
        message sent on it (meeting channels do, for the meeting's history)."""
        if not isinstance(channel_id, str) or not channel_id:
            raise InvalidMessage(f"channel id must be a non-empty string, got {channel_id!r}")
        self._channel_id = channel_id
        self._meeting_id = meeting_id
        self._participants: dict[str, Participant] = {}
        # Per sender, the participants a message goes to; rebuilt lazily after membership changes.
        self._recipients: dict[str, tuple[Participant, ...]] = {}
        self._observers: list[StreamObserver] = []
        self._streams: dict[str, _ActiveStream] = {}
        self._history: list[Message] | None = [] if keep_history else None
        self._closed_reason: str | None = None
        for participant in participants:
            self.add_participant(participant)
        for observer in stream_observers:
            self.add_stream_observer(observer)

    def __repr__(self) -> str:
        return f"<Channel {self._channel_id} participants={list(self._participants)}>"

    @property
    def channel_id(self) -> str:
        """The channel's deterministic id."""
        return self._channel_id

    @property
    def meeting_id(self) -> str | None:
        """The meeting this channel belongs to, or None for a 1:1 channel."""
        return self._meeting_id

    @property
    def is_meeting(self) -> bool:
        """Whether this is a meeting channel."""
        return self._meeting_id is not None

    @property
    def closed(self) -> bool:
        """Whether the channel was closed; a closed channel refuses sends and streams."""
        return self._closed_reason is not None

    def close(self, reason: str) -> None:
        """Refuse further sends and streams; `reason` is what `ChannelClosed` will say. Idempotent."""
        if self._closed_reason is None:
            self._closed_reason = reason
            self._streams.clear()

    def _check_open(self) -> None:
        if self._closed_reason is not None:
            raise ChannelClosed(f"{self._channel_id} is closed: {self._closed_reason}")

    @property
    def keeps_history(self) -> bool:
        """Whether the channel records the messages sent on it."""
        return self._history is not None

    @property
    def history(self) -> tuple[Message, ...]:
        """Every message sent on the channel, oldest first (empty unless it keeps history)."""
        return tuple(self._history) if self._history is not None else ()

    def history_since(self, index: int) -> list[Message]:
        """The recorded messages from position `index` on."""
        return self._history[index:] if self._history is not None else []

    @property
    def history_length(self) -> int:
        """How many messages the channel has recorded."""
        return len(self._history) if self._history is not None else 0

    # Membership

    @property
    def participants(self) -> tuple[Participant, ...]:
        """The participants, in the order they joined."""
        return tuple(self._participants.values())

    @property
    def participant_ids(self) -> tuple[str, ...]:
        """The participants' ids, in the order they joined."""
        return tuple(self._participants)

    def has_participant(self, participant_id: str) -> bool:
        """Whether a participant with this id is on the channel."""
        return participant_id in self._participants

    def add_participant(self, participant: Participant) -> None:
        """Put `participant` on the channel. Raises `DuplicateParticipant` if its id is already there."""
        if participant.id in self._participants:
            raise DuplicateParticipant(f"{participant.id} is already a participant of {self._channel_id}")
        self._participants[participant.id] = participant
        self._recipients.clear()

    def remove_participant(self, participant_id: str) -> Participant:
        """Take a participant off the channel and return it. Raises `NotAParticipant` if it is not there."""
        try:
            participant = self._participants.pop(participant_id)
        except KeyError:
            raise NotAParticipant(f"{participant_id} is not a participant of {self._channel_id}") from None
        self._recipients.clear()
        return participant

    @property
    def has_human(self) -> bool:
        """Whether any participant is human, which is what makes the channel stream."""
        return any(participant.is_human for participant in self._participants.values())

    # Delivery

    def _recipients_of(self, sender_id: str) -> tuple[Participant, ...]:
        recipients = self._recipients.get(sender_id)
        if recipients is None:
            if sender_id not in self._participants:
                raise NotAParticipant(
                    f"{sender_id} cannot send on {self._channel_id}: it is not a participant "
                    f"(participants: {', '.join(self._participants) or 'none'})"
                )
            recipients = tuple(p for pid, p in self._participants.items() if pid != sender_id)
            self._recipients[sender_id] = recipients
        return recipients

    async def send(self, message: Message) -> None:
        """Deliver `message` to every participant except its sender, in the order they joined.

        If some deliveries raise, the others still happen, then `DeliveryError` names the failed recipients.
        Raises `ChannelClosed` on a closed channel and `NotAParticipant` if the sender is not on it.
        """
        if self._closed_reason is not None:
            self._check_open()
        recipients = self._recipients_of(message.sender_id)
        if self._history is not None:
            self._history.append(message)
        failures: list[Exception] | None = None
        failed: list[str] = []
        for participant in recipients:
            try:
                await participant.deliver(message)
            except Exception as error:
                if failures is None:
                    failures = []
                failures.append(error)
                failed.append(participant.id)
        if failures is not None:
            raise DeliveryError(
                f"message {message.id} on {self._channel_id} was not delivered to {', '.join(failed)}",
                failures,
                failed=failed,
            )

    # Observers and streams

    @property
    def stream_observers(self) -> tuple[StreamObserver, ...]:
        """The observers of this channel's streams, in the order they were added."""
        return tuple(self._observers)

    def add_stream_observer(self, observer: StreamObserver) -> None:
        """Send this channel's stream events to `observer` too (adding it twice has no effect)."""
        if not all(callable(getattr(observer, name, None)) for name in _OBSERVER_METHODS):
            raise TypeError(f"{observer!r} is not a StreamObserver: it needs {', '.join(_OBSERVER_METHODS)}")
        if not any(existing is observer for existing in self._observers):
            self._observers.append(observer)

    def remove_stream_observer(self, observer: StreamObserver) -> None:
        """Stop sending stream events to `observer` (no effect if it was not observing)."""
        self._observers = [existing for existing in self._observers if existing is not observer]

    @property
    def active_stream_ids(self) -> tuple[str, ...]:
        """Ids of the streams started and not yet completed."""
        return tuple(self._streams)

    async def start_stream(
        self,
        stream_id: str,
        sender_id: str,
        sender_klass: str,
        *,
        recipient_id: str | None = None,
        recipient_klass: str | None = None,
    ) -> bool:
        """Begin stream `stream_id` and tell the observers. Returns False, starting nothing, when no human is
        on the channel (the caller then delivers the message whole)."""
        if not isinstance(stream_id, str) or not stream_id:
            raise StreamError(f"stream id must be a non-empty string, got {stream_id!r}")
        self._check_open()
        self._recipients_of(sender_id)
        if stream_id in self._streams:
            raise StreamError(f"stream {stream_id} is already active on {self._channel_id}")
        if not self.has_human:
            return False
        start = StreamStartEvent(
            stream_id=stream_id,
            channel_id=self._channel_id,
            sender_id=sender_id,
            sender_klass=sender_klass,
            recipient_id=recipient_id,
            recipient_klass=recipient_klass,
            meeting_id=self._meeting_id,
        )
        self._streams[stream_id] = _ActiveStream(start)
        await notify_observers(self._observers, start)
        return True

    def _active(self, stream_id: str) -> _ActiveStream:
        try:
            return self._streams[stream_id]
        except KeyError:
            raise StreamError(
                f"stream {stream_id!r} is not active on {self._channel_id} (never started, or already completed)"
            ) from None

    async def stream_chunk(self, stream_id: str, chunk: str) -> None:
        """Add `chunk` to stream `stream_id` and tell the observers."""
        if not isinstance(chunk, str):
            raise StreamError(f"stream chunk must be a string, got {type(chunk).__name__}")
        self._check_open()
        stream = self._active(stream_id)
        stream.chunks.append(chunk)
        start = stream.start
        await notify_observers(
            self._observers,
            StreamChunkEvent(
                stream_id=stream_id,
                channel_id=self._channel_id,
                sender_id=start.sender_id,
                sender_klass=start.sender_klass,
                chunk=chunk,
                index=len(stream.chunks) - 1,
            ),
        )

    async def complete_stream(self, stream_id: str, message: Message) -> Message:
        """Finish stream `stream_id`: tell the observers, then deliver `message` whole to the participants.

        `message` must come from the stream's sender; its `stream_id` is set to this stream's if it has none.
        Returns the message as delivered. If observers raise, the message is still delivered, then
        `ObserverError` is raised.
        """
        self._check_open()
        stream = self._active(stream_id)
        start = stream.start
        if message.sender_id != start.sender_id:
            raise StreamError(
                f"stream {stream_id} was started by {start.sender_id}; "
                f"it cannot be completed with a message from {message.sender_id}"
            )
        if message.stream_id is None:
            message = dataclasses.replace(message, stream_id=stream_id)
        elif message.stream_id != stream_id:
            raise StreamError(f"message {message.id} belongs to stream {message.stream_id}, not {stream_id}")
        del self._streams[stream_id]
        observer_error: ObserverError | None = None
        try:
            await notify_observers(
                self._observers,
                StreamCompleteEvent(
                    stream_id=stream_id,
                    channel_id=self._channel_id,
                    sender_id=start.sender_id,
                    sender_klass=start.sender_klass,
                    message=message,
                    streamed_content="".join(stream.chunks),
                ),
            )
        except ObserverError as error:
            observer_error = error
        try:
            await self.send(message)
        except DeliveryError as error:
            if observer_error is not None:
                error.add_note(f"stream observers also raised on completion: {observer_error}")
            raise
        if observer_error is not None:
            raise observer_error
        return message


_OBSERVER_METHODS = ("on_stream_start", "on_stream_chunk", "on_stream_complete")
