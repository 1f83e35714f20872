"""pal_core.messaging: messages, inboxes, channels, streams, routing and meetings between agents and humans.

Standard library and asyncio only. How the runtime plugs in (see docs/messaging.md):

    registry = ChannelRegistry()
    meetings = MeetingManager(registry)
    registry.register(AgentParticipant(id="1000", klass="Host", inbox=AsyncMessageQueue("inbox of 1000")))
    registry.register(HumanParticipant(inbox=AsyncMessageQueue("inbox of human")))
    registry.add_stream_observer(TerminalStreamObserver())
    await registry.route_message("1000", "human", "Hello!")
"""

from pal_core.messaging.channel import Channel, direct_channel_id, meeting_channel_id
from pal_core.messaging.errors import (
    CallbackError,
    ChannelClosed,
    DeliveryError,
    DuplicateParticipant,
    HandlerError,
    InvalidMessage,
    InvalidParticipant,
    InvalidReceiverSpec,
    MeetingError,
    MeetingRejected,
    MeetingTimeout,
    MessagingError,
    NotAParticipant,
    ObserverError,
    QueueClosed,
    StreamError,
    UnknownParticipant,
    UnknownReceiver,
)
from pal_core.messaging.meetings import (
    DEFAULT_ATTENDANCE_TIMEOUT,
    InvitationStatus,
    Meeting,
    MeetingFrame,
    MeetingInvitation,
    MeetingManager,
    current_meeting_id,
)
from pal_core.messaging.message import Message, MessageType
from pal_core.messaging.participants import AgentParticipant, HumanParticipant, Participant
from pal_core.messaging.queue import AsyncMessageQueue, MessagePredicate, QueueStatistics
from pal_core.messaging.registry import (
    ChannelCallback,
    ChannelRegistry,
    MeetingTarget,
    OutgoingStream,
    ShutdownHook,
)
from pal_core.messaging.specs import ReceiverKind, ReceiverSpec, agent_spec, meeting_spec, parse_receiver_spec
from pal_core.messaging.streams import (
    StreamChunkEvent,
    StreamCompleteEvent,
    StreamEvent,
    StreamObserver,
    StreamStartEvent,
    TerminalStreamObserver,
)
from pal_core.messaging.timeouts import (
    DEFAULT_MEETING_TIMEOUTS,
    MeetingTimeouts,
    is_targeted,
    is_turn,
    meeting_timeout,
    mentions,
    wait_for_meeting_messages,
)

__all__ = [
    "DEFAULT_ATTENDANCE_TIMEOUT",
    "DEFAULT_MEETING_TIMEOUTS",
    "AgentParticipant",
    "AsyncMessageQueue",
    "CallbackError",
    "Channel",
    "ChannelCallback",
    "ChannelClosed",
    "ChannelRegistry",
    "DeliveryError",
    "DuplicateParticipant",
    "HandlerError",
    "HumanParticipant",
    "InvalidMessage",
    "InvalidParticipant",
    "InvalidReceiverSpec",
    "InvitationStatus",
    "Meeting",
    "MeetingError",
    "MeetingFrame",
    "MeetingInvitation",
    "MeetingManager",
    "MeetingRejected",
    "MeetingTarget",
    "MeetingTimeout",
    "MeetingTimeouts",
    "Message",
    "MessagePredicate",
    "MessageType",
    "MessagingError",
    "NotAParticipant",
    "ObserverError",
    "OutgoingStream",
    "Participant",
    "QueueClosed",
    "QueueStatistics",
    "ReceiverKind",
    "ReceiverSpec",
    "ShutdownHook",
    "StreamChunkEvent",
    "StreamCompleteEvent",
    "StreamError",
    "StreamEvent",
    "StreamObserver",
    "StreamStartEvent",
    "TerminalStreamObserver",
    "UnknownParticipant",
    "UnknownReceiver",
    "agent_spec",
    "current_meeting_id",
    "direct_channel_id",
    "is_targeted",
    "is_turn",
    "meeting_channel_id",
    "meeting_spec",
    "meeting_timeout",
    "mentions",
    "parse_receiver_spec",
    "wait_for_meeting_messages",
]
