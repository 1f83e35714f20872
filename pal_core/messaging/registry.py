"""The channel registry: who is reachable, which channels exist, and how a message gets from a sender to
the participants a receiver spec names.

The runtime registers one participant per agent (and one for the human), then routes every `Say` through
`route_message`. Channels are made on first use (1:1) or by the meeting manager (meetings); registered
callbacks hear about each new channel, and registry-wide stream observers are put on every channel.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pal_core.messaging.channel import Channel, direct_channel_id, meeting_channel_id
from pal_core.messaging.errors import (
    CallbackError,
    DeliveryError,
    DuplicateParticipant,
    InvalidParticipant,
    MessagingError,
    StreamError,
    UnknownParticipant,
    UnknownReceiver,
)
from pal_core.messaging.message import Message, MessageType
from pal_core.messaging.participants import Participant, check_klass, check_participant_id
from pal_core.messaging.specs import ReceiverKind, parse_receiver_spec
from pal_core.messaging.streams import StreamObserver

ChannelCallback = Callable[[Channel], Awaitable[None]]
"""An async function called with each channel the registry creates."""

ShutdownHook = Callable[[], Awaitable[None]]
"""An async function the registry calls when it shuts down, before it closes channels and inboxes."""

_PARTICIPANT_MEMBERS = ("id", "klass", "is_human", "deliver", "close")


@dataclass(frozen=True, slots=True, kw_only=True)
class MeetingTarget:
    """What a `meeting <id>` receiver spec resolves to."""

    meeting_id: str
    """The meeting's id."""
    channel: Channel
    """The meeting's channel."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _StreamRoute:
    """Where an active stream goes, so chunks and completion need only the stream id."""

    channel: Channel
    sender: Participant
    recipient: Participant | None
    meeting_id: str | None


class ChannelRegistry:
    """Participants by id and class, channels by id, and routing between them."""

    def __init__(self) -> None:
        """Make an empty registry."""
        self._participants: dict[str, Participant] = {}
        self._by_klass: dict[str, list[Participant]] = {}
        self._channels: dict[str, Channel] = {}
        self._callbacks: list[ChannelCallback] = []
        self._observers: list[StreamObserver] = []
        self._streams: dict[str, _StreamRoute] = {}
        self._shutdown_hooks: list[ShutdownHook] = []
        self._shut_down = False

    # Participants

    def register(self, participant: Participant) -> None:
        """Make `participant` reachable. Raises `InvalidParticipant` or `DuplicateParticipant`."""
        self._check_running()
        missing = [name for name in _PARTICIPANT_MEMBERS if not hasattr(participant, name)]
        if missing:
            raise InvalidParticipant(f"{participant!r} is not a Participant: it lacks {', '.join(missing)}")
        check_participant_id(participant.id)
        check_klass(participant.klass)
        if participant.id in self._participants:
            raise DuplicateParticipant(f"participant id {participant.id} is already registered")
        self._participants[participant.id] = participant
        self._by_klass.setdefault(participant.klass, []).append(participant)

    def unregister(self, participant_id: str) -> Participant:
        """Make a participant unreachable: it leaves every channel, and its 1:1 channels are dropped.

        Returns it (not closed: closing its inbox is the caller's choice). Raises `UnknownParticipant`.
        """
        participant = self.participant(participant_id)
        del self._participants[participant_id]
        same_klass = self._by_klass[participant.klass]
        same_klass.remove(participant)
        if not same_klass:
            del self._by_klass[participant.klass]
        for channel_id, channel in list(self._channels.items()):
            if channel.has_participant(participant_id):
                channel.remove_participant(participant_id)
                if not channel.is_meeting:
                    del self._channels[channel_id]
        return participant

    def participant(self, participant_id: str) -> Participant:
        """The registered participant with this id. Raises `UnknownParticipant`."""
        try:
            return self._participants[participant_id]
        except KeyError:
            raise UnknownParticipant(
                f"no participant with id {participant_id!r} is registered "
                f"(registered: {', '.join(self._participants) or 'none'})"
            ) from None

    @property
    def participants(self) -> tuple[Participant, ...]:
        """Every registered participant, in registration order."""
        return tuple(self._participants.values())

    def participants_of_klass(self, klass: str) -> tuple[Participant, ...]:
        """The registered participants of class `klass`, in registration order."""
        return tuple(self._by_klass.get(klass, ()))

    def describe(self, participant_id: str) -> str:
        """`HeadChef (agent 1001)` for a registered participant, `agent 1001` for an unknown one."""
        participant = self._participants.get(participant_id)
        if participant is None:
            return f"agent {participant_id}"
        return f"{participant.klass} (agent {participant_id})"

    # Receiver specs

    def resolve(self, receiver_spec: str) -> Participant | MeetingTarget:
        """The participant, or the meeting, that `receiver_spec` names.

        Raises `InvalidReceiverSpec` for a spec that cannot be read, `UnknownReceiver` when it names nobody.
        """
        spec = parse_receiver_spec(receiver_spec)
        if spec.kind is ReceiverKind.MEETING:
            channel = self._channels.get(meeting_channel_id(spec.value))
            if channel is None:
                raise UnknownReceiver(receiver_spec, f"there is no meeting {spec.value}")
            return MeetingTarget(meeting_id=spec.value, channel=channel)
        if spec.kind is ReceiverKind.HUMAN:
            return self._human(receiver_spec)
        found = self._participants.get(spec.value)
        if found is not None:
            return found
        if spec.kind is ReceiverKind.AGENT:
            raise UnknownReceiver(receiver_spec, f"no participant has id {spec.value!r}")
        of_klass = self._by_klass.get(spec.value)
        if of_klass:
            # As in the reference implementation, a class name means its first registered agent.
            return of_klass[0]
        known = sorted(set(self._participants) | set(self._by_klass))
        raise UnknownReceiver(
            receiver_spec,
            f"no participant id or agent class is called {spec.value!r} (known: {', '.join(known) or 'none'})",
        )

    def resolve_participant(self, receiver_spec: str) -> Participant:
        """The one participant `receiver_spec` names; a meeting spec raises `UnknownReceiver`."""
        resolved = self.resolve(receiver_spec)
        if isinstance(resolved, MeetingTarget):
            raise UnknownReceiver(receiver_spec, "it names a meeting, where one participant is needed")
        return resolved

    def _human(self, text: str) -> Participant:
        humans = [participant for participant in self._participants.values() if participant.is_human]
        if len(humans) == 1:
            return humans[0]
        if not humans:
            raise UnknownReceiver(text, "no human participant is registered")
        named = self._participants.get("human")
        if named is not None and named.is_human:
            return named
        ids = ", ".join(participant.id for participant in humans)
        raise UnknownReceiver(
            text, f"several human participants are registered ({ids}); address one as 'agent <id>'"
        )

    # Channels

    @property
    def channels(self) -> Mapping[str, Channel]:
        """Every channel by id (a read-only view)."""
        return MappingProxyType(self._channels)

    def channel(self, channel_id: str) -> Channel:
        """The channel with this id. Raises `MessagingError` if there is none."""
        try:
            return self._channels[channel_id]
        except KeyError:
            raise MessagingError(f"there is no channel {channel_id!r}") from None

    def meeting_channel(self, meeting_id: str) -> Channel:
        """The channel of meeting `meeting_id`. Raises `UnknownReceiver` if there is none."""
        channel = self._channels.get(meeting_channel_id(meeting_id))
        if channel is None:
            raise UnknownReceiver(f"meeting {meeting_id}", f"there is no meeting {meeting_id}")
        return channel

    def register_channel_creation_callback(self, callback: ChannelCallback) -> None:
        """Call `callback(channel)` (awaited) for every channel created from now on."""
        if not callable(callback):
            raise TypeError(f"channel creation callback must be an async callable, got {callback!r}")
        self._callbacks.append(callback)

    def unregister_channel_creation_callback(self, callback: ChannelCallback) -> None:
        """Stop calling `callback` for new channels (no effect if it was not registered)."""
        self._callbacks = [existing for existing in self._callbacks if existing is not callback]

    def add_stream_observer(self, observer: StreamObserver) -> None:
        """Observe the streams of every channel, existing and future."""
        for channel in self._channels.values():
            channel.add_stream_observer(observer)
        if not any(existing is observer for existing in self._observers):
            self._observers.append(observer)

    def remove_stream_observer(self, observer: StreamObserver) -> None:
        """Stop a registry-wide observer observing every channel."""
        self._observers = [existing for existing in self._observers if existing is not observer]
        for channel in self._channels.values():
            channel.remove_stream_observer(observer)

    async def get_or_create_channel(self, sender_id: str, receiver_spec: str) -> Channel:
        """The channel a message from `sender_id` to `receiver_spec` travels on, creating a 1:1 channel on
        first use. Meeting channels are never created here (see `create_meeting_channel`)."""
        self._check_running()
        sender = self.participant(sender_id)
        resolved = self.resolve(receiver_spec)
        if isinstance(resolved, MeetingTarget):
            return resolved.channel
        return await self._direct_channel(sender, resolved, receiver_spec)

    async def _direct_channel(
        self, sender: Participant, receiver: Participant, receiver_spec: str
    ) -> Channel:
        if receiver.id == sender.id:
            raise UnknownReceiver(receiver_spec, f"that is the sender ({sender.id}) itself")
        channel_id = direct_channel_id(sender.id, receiver.id)
        channel = self._channels.get(channel_id)
        if channel is None:
            channel = Channel(channel_id, (sender, receiver), stream_observers=self._observers)
            await self._add_channel(channel)
        return channel

    async def create_meeting_channel(self, meeting_id: str, participant_ids: Iterable[str]) -> Channel:
        """Create meeting `meeting_id`'s channel (keeping history) with the given registered participants.

        Raises `MessagingError` if the meeting already has a channel, `UnknownParticipant` for an unknown id.
        """
        self._check_running()
        channel_id = meeting_channel_id(meeting_id)
        if channel_id in self._channels:
            raise MessagingError(f"meeting {meeting_id} already has a channel")
        members = [self.participant(participant_id) for participant_id in participant_ids]
        channel = Channel(
            channel_id, members, meeting_id=meeting_id, stream_observers=self._observers, keep_history=True
        )
        await self._add_channel(channel)
        return channel

    async def _add_channel(self, channel: Channel) -> None:
        self._channels[channel.channel_id] = channel
        failures: list[Exception] = []
        failed: list[str] = []
        for callback in list(self._callbacks):
            try:
                await callback(channel)
            except Exception as error:
                failures.append(error)
                failed.append(repr(callback))
        if failures:
            raise CallbackError(
                f"{len(failures)} channel creation callback(s) raised for {channel.channel_id}",
                failures,
                failed=failed,
            )

    # Routing

    async def route_message(
        self,
        sender_id: str,
        receiver_spec: str,
        content: str,
        *,
        message_type: MessageType | None = None,
        meeting_id: str | None = None,
        target_agent_ids: Iterable[str] = (),
        stream_id: str | None = None,
    ) -> Message:
        """Build a message from `sender_id` to whoever `receiver_spec` names and deliver it; return it.

        `message_type` defaults to `DIRECT` for a participant and `MEETING_BROADCAST` for a meeting (where
        `meeting_id` is taken from the spec). The sender must be registered, and on a meeting's channel.
        """
        self._check_running()
        sender = self.participant(sender_id)
        resolved = self.resolve(receiver_spec)
        if isinstance(resolved, MeetingTarget):
            if meeting_id is not None and meeting_id != resolved.meeting_id:
                raise MessagingError(f"meeting_id {meeting_id!r} contradicts receiver spec {receiver_spec!r}")
            channel = resolved.channel
            message = Message(
                sender_id=sender.id,
                sender_klass=sender.klass,
                content=content,
                message_type=message_type or MessageType.MEETING_BROADCAST,
                meeting_id=resolved.meeting_id,
                target_agent_ids=tuple(target_agent_ids),
                stream_id=stream_id,
            )
        else:
            receiver = resolved
            channel = await self._direct_channel(sender, receiver, receiver_spec)
            message = Message(
                sender_id=sender.id,
                sender_klass=sender.klass,
                recipient_id=receiver.id,
                recipient_klass=receiver.klass,
                content=content,
                message_type=message_type or MessageType.DIRECT,
                meeting_id=meeting_id,
                target_agent_ids=tuple(target_agent_ids),
                stream_id=stream_id,
            )
        await channel.send(message)
        return message

    # Streams

    async def start_stream(
        self, sender_id: str, receiver_spec: str, *, stream_id: str | None = None
    ) -> str | None:
        """Start streaming a message from `sender_id` to `receiver_spec` and return the stream id, or
        return None, starting nothing, when no human is on the channel (then send the message whole)."""
        self._check_running()
        sender = self.participant(sender_id)
        resolved = self.resolve(receiver_spec)
        recipient: Participant | None
        if isinstance(resolved, MeetingTarget):
            channel, recipient, meeting_id = resolved.channel, None, resolved.meeting_id
        else:
            channel = await self._direct_channel(sender, resolved, receiver_spec)
            recipient, meeting_id = resolved, None
        stream_id = stream_id if stream_id is not None else uuid.uuid4().hex
        if stream_id in self._streams:
            raise StreamError(f"stream {stream_id} is already active")
        started = await channel.start_stream(
            stream_id,
            sender.id,
            sender.klass,
            recipient_id=recipient.id if recipient else None,
            recipient_klass=recipient.klass if recipient else None,
        )
        if not started:
            return None
        self._streams[stream_id] = _StreamRoute(
            channel=channel, sender=sender, recipient=recipient, meeting_id=meeting_id
        )
        return stream_id

    def _stream(self, stream_id: str) -> _StreamRoute:
        try:
            return self._streams[stream_id]
        except KeyError:
            raise StreamError(
                f"stream {stream_id!r} is not active (never started, or already completed)"
            ) from None

    async def stream_chunk(self, stream_id: str, chunk: str) -> None:
        """Send the next chunk of stream `stream_id` to its channel's observers."""
        await self._stream(stream_id).channel.stream_chunk(stream_id, chunk)

    async def complete_stream(
        self, stream_id: str, final_content: str, *, target_agent_ids: Iterable[str] = ()
    ) -> Message:
        """Finish stream `stream_id`: its observers hear of it, then the whole message is delivered and
        returned (with `stream_id` set)."""
        route = self._stream(stream_id)
        del self._streams[stream_id]
        recipient = route.recipient
        message = Message(
            sender_id=route.sender.id,
            sender_klass=route.sender.klass,
            recipient_id=recipient.id if recipient else None,
            recipient_klass=recipient.klass if recipient else None,
            content=final_content,
            message_type=MessageType.MEETING_BROADCAST if route.meeting_id else MessageType.DIRECT,
            meeting_id=route.meeting_id,
            target_agent_ids=tuple(target_agent_ids),
            stream_id=stream_id,
        )
        return await route.channel.complete_stream(stream_id, message)

    async def open_stream(self, sender_id: str, receiver_spec: str) -> OutgoingStream:
        """A handle for sending one message piece by piece: streamed when a human is on the channel,
        otherwise buffered and delivered whole on `complete`. One code path for the caller either way."""
        stream_id = await self.start_stream(sender_id, receiver_spec)
        return OutgoingStream(self, sender_id, receiver_spec, stream_id)

    # Lifecycle

    @property
    def shut_down(self) -> bool:
        """Whether `shutdown` has been called."""
        return self._shut_down

    def _check_running(self) -> None:
        if self._shut_down:
            raise MessagingError("the channel registry has been shut down")

    def add_shutdown_hook(self, hook: ShutdownHook) -> None:
        """Call `hook()` (awaited) at the start of `shutdown`; the meeting manager ends its meetings this way."""
        if not callable(hook):
            raise TypeError(f"shutdown hook must be an async callable, got {hook!r}")
        self._shutdown_hooks.append(hook)

    async def shutdown(self) -> None:
        """Run the shutdown hooks (ending meetings), refuse further routing, then close every channel and every
        participant, waking their readers with `QueueClosed`. Idempotent. If some hooks or closes raised, the
        rest still ran, then `DeliveryError` lists them."""
        if self._shut_down:
            return
        self._shut_down = True
        failures: list[Exception] = []
        failed: list[str] = []
        for hook in self._shutdown_hooks:
            try:
                await hook()
            except Exception as error:
                failures.append(error)
                failed.append(repr(hook))
        for channel in self._channels.values():
            channel.close("the channel registry has been shut down")
        self._streams.clear()
        for participant in self._participants.values():
            try:
                await participant.close()
            except Exception as error:
                failures.append(error)
                failed.append(participant.id)
        if failures:
            raise DeliveryError("some shutdown hooks or participant closes raised", failures, failed=failed)


class OutgoingStream:
    """One message being sent piece by piece (see `ChannelRegistry.open_stream`)."""

    def __init__(self, registry: ChannelRegistry, sender_id: str, receiver_spec: str, stream_id: str | None):
        """Made by `ChannelRegistry.open_stream`; `stream_id` is None when nothing is streamed."""
        self._registry = registry
        self._sender_id = sender_id
        self._receiver_spec = receiver_spec
        self._stream_id = stream_id
        self._chunks: list[str] = []
        self._completed = False

    @property
    def stream_id(self) -> str | None:
        """The stream's id, or None when the message will be delivered whole without streaming."""
        return self._stream_id

    @property
    def is_streaming(self) -> bool:
        """Whether chunks reach observers as they are sent."""
        return self._stream_id is not None

    @property
    def content(self) -> str:
        """The chunks sent so far, joined."""
        return "".join(self._chunks)

    async def send_chunk(self, chunk: str) -> None:
        """Add `chunk` to the message (and show it to observers when streaming)."""
        if self._completed:
            raise StreamError("this stream is already complete")
        if not isinstance(chunk, str):
            raise StreamError(f"stream chunk must be a string, got {type(chunk).__name__}")
        self._chunks.append(chunk)
        if self._stream_id is not None:
            await self._registry.stream_chunk(self._stream_id, chunk)

    async def complete(
        self, final_content: str | None = None, *, target_agent_ids: Iterable[str] = ()
    ) -> Message:
        """Deliver the whole message (`final_content`, or the chunks joined) and return it."""
        if self._completed:
            raise StreamError("this stream is already complete")
        self._completed = True
        content = self.content if final_content is None else final_content
        if self._stream_id is not None:
            return await self._registry.complete_stream(
                self._stream_id, content, target_agent_ids=target_agent_ids
            )
        return await self._registry.route_message(
            self._sender_id, self._receiver_spec, content, target_agent_ids=target_agent_ids
        )
