"""The registry: receiver specs, channel creation and callbacks, routing (seed 002 §10.1), streams."""

from __future__ import annotations

import anyio
import pytest

from pal_core.messaging import (
    AgentParticipant,
    AsyncMessageQueue,
    CallbackError,
    Channel,
    ChannelRegistry,
    DeliveryError,
    DuplicateParticipant,
    HumanParticipant,
    InvalidParticipant,
    InvalidReceiverSpec,
    MeetingTarget,
    Message,
    MessageType,
    MessagingError,
    Participant,
    QueueClosed,
    ReceiverKind,
    StreamChunkEvent,
    StreamCompleteEvent,
    StreamError,
    StreamStartEvent,
    UnknownParticipant,
    UnknownReceiver,
    agent_spec,
    meeting_spec,
    parse_receiver_spec,
)

from .support import RecordingObserver, make_world

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("spec", "kind", "value"),
    [
        ("agent 1001", ReceiverKind.AGENT, "1001"),
        ("  Agent   1001 ", ReceiverKind.AGENT, "1001"),
        ("meeting 7", ReceiverKind.MEETING, "7"),
        ("human", ReceiverKind.HUMAN, ""),
        ("User", ReceiverKind.HUMAN, ""),
        ("HeadChef", ReceiverKind.NAME, "HeadChef"),
        ("1001", ReceiverKind.NAME, "1001"),
    ],
)
def test_receiver_specs_parse(spec: str, kind: ReceiverKind, value: str) -> None:
    parsed = parse_receiver_spec(spec)
    assert (parsed.kind, parsed.value, parsed.text) == (kind, value, spec)


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ("", "empty"),
        ("agent", "no id"),
        ("meeting", "current_meeting_id"),
        ("agent 1 2", "not understood"),
        ("send to bob", "not understood"),
        (None, "must be a string"),
    ],
)
def test_bad_receiver_specs_say_why(spec: object, complaint: str) -> None:
    with pytest.raises(InvalidReceiverSpec, match=complaint):
        parse_receiver_spec(spec)  # type: ignore[arg-type]


def test_spec_builders() -> None:
    assert agent_spec("1001") == "agent 1001"
    assert meeting_spec("7") == "meeting 7"


async def test_specs_resolve_to_participants_and_meetings() -> None:
    world = make_world(["Host", "HeadChef", "HeadChef"], with_human=True)
    registry = world.registry
    assert registry.resolve("agent 1001") is world.agents["1001"]
    assert registry.resolve("1002") is world.agents["1002"]
    assert registry.resolve("HeadChef") is world.agents["1001"]  # a class name means its first agent
    assert registry.resolve("human") is world.human
    assert registry.resolve("user") is world.human
    meeting = await world.meetings.create_meeting("1000")
    target = registry.resolve(f"meeting {meeting.id}")
    assert isinstance(target, MeetingTarget) and target.channel is meeting.channel


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ("agent 42", "no participant has id '42'"),
        ("Sommelier", "no participant id or agent class is called 'Sommelier'"),
        ("meeting 9", "there is no meeting 9"),
        ("human", "no human participant is registered"),
    ],
)
async def test_unknown_receivers_are_named(spec: str, complaint: str) -> None:
    world = make_world(["Host"])
    with pytest.raises(UnknownReceiver, match=complaint):
        await world.registry.route_message("1000", spec, "hello?")


async def test_several_humans_need_an_explicit_id() -> None:
    registry = ChannelRegistry()
    for human_id in ("alice", "bob"):
        registry.register(HumanParticipant(id=human_id, inbox=AsyncMessageQueue()))
    with pytest.raises(UnknownReceiver, match="several human participants"):
        registry.resolve("human")
    named = HumanParticipant(inbox=AsyncMessageQueue())
    registry.register(named)
    assert registry.resolve("user") is named


async def test_registration_checks_participants() -> None:
    registry = ChannelRegistry()
    registry.register(AgentParticipant(id="1000", klass="Host", inbox=AsyncMessageQueue()))
    with pytest.raises(DuplicateParticipant):
        registry.register(AgentParticipant(id="1000", klass="Other", inbox=AsyncMessageQueue()))
    with pytest.raises(InvalidParticipant, match="lacks"):
        registry.register(object())  # type: ignore[arg-type]
    with pytest.raises(InvalidParticipant, match="no '_' or whitespace"):
        AgentParticipant(id="agent_1", klass="Host", inbox=AsyncMessageQueue())
    with pytest.raises(InvalidParticipant, match="without whitespace"):
        AgentParticipant(id="1001", klass="Head Chef", inbox=AsyncMessageQueue())
    with pytest.raises(UnknownParticipant, match="registered: 1000"):
        await registry.route_message("9999", "agent 1000", "who am I?")


async def test_message_routing() -> None:
    # Seed 002 §10.1: a message routed to "agent <id>" reaches that agent, whole and attributed.
    world = make_world(["Sender", "Receiver"])
    sent = await world.registry.route_message("1000", agent_spec("1001"), "Test message")
    messages = await world.inbox("1001").get_batch(lambda m: m.sender_id == "1000", timeout=5)
    assert len(messages) == 1
    received = messages[0]
    assert received is sent
    assert received.content == "Test message"
    assert (received.sender_id, received.sender_klass) == ("1000", "Sender")
    assert (received.recipient_id, received.recipient_klass) == ("1001", "Receiver")
    assert received.message_type is MessageType.DIRECT
    assert len(world.inbox("1000")) == 0


async def test_both_directions_share_one_channel_created_once_with_callbacks() -> None:
    world = make_world(["A", "B"])
    created: list[Channel] = []

    async def on_created(channel: Channel) -> None:
        created.append(channel)

    world.registry.register_channel_creation_callback(on_created)
    forth = await world.registry.get_or_create_channel("1000", "agent 1001")
    back = await world.registry.get_or_create_channel("1001", "A")
    await world.registry.route_message("1001", "agent 1000", "reply")
    assert forth is back
    assert created == [forth]
    assert forth.channel_id == "channel_1000_1001"
    assert world.registry.channels == {"channel_1000_1001": forth}
    world.registry.unregister_channel_creation_callback(on_created)
    await world.registry.route_message("1000", "agent 1001", "again")
    assert created == [forth]


async def test_a_failing_callback_is_reported_after_the_others_ran() -> None:
    world = make_world(["A", "B"])
    seen: list[str] = []

    async def broken(channel: Channel) -> None:
        raise RuntimeError("monitor down")

    async def working(channel: Channel) -> None:
        seen.append(channel.channel_id)

    world.registry.register_channel_creation_callback(broken)
    world.registry.register_channel_creation_callback(working)
    with pytest.raises(CallbackError, match="channel_1000_1001"):
        await world.registry.get_or_create_channel("1000", "agent 1001")
    assert seen == ["channel_1000_1001"]
    assert "channel_1000_1001" in world.registry.channels


async def test_sending_to_oneself_is_refused() -> None:
    world = make_world(["A"])
    with pytest.raises(UnknownReceiver, match="the sender"):
        await world.registry.route_message("1000", "agent 1000", "echo")


async def test_stream_to_the_human_reaches_registry_wide_observers() -> None:
    world = make_world(["Host"], with_human=True)
    observer = RecordingObserver()
    world.registry.add_stream_observer(observer)
    stream = await world.registry.open_stream("1000", "user")
    assert stream.is_streaming
    for piece in ("Wel", "come"):
        await stream.send_chunk(piece)
    final = await stream.complete()
    assert final.content == "Welcome" and final.stream_id == stream.stream_id
    assert final.recipient_id == "human"
    assert [type(e) for e in observer.events] == [
        StreamStartEvent,
        StreamChunkEvent,
        StreamChunkEvent,
        StreamCompleteEvent,
    ]
    assert world.human is not None and world.human.inbox.peek() == final
    with pytest.raises(StreamError, match="already complete"):
        await stream.send_chunk("late")


async def test_agent_to_agent_messages_are_delivered_whole() -> None:
    world = make_world(["A", "B"])
    observer = RecordingObserver()
    world.registry.add_stream_observer(observer)
    assert await world.registry.start_stream("1000", "agent 1001") is None
    stream = await world.registry.open_stream("1000", "agent 1001")
    assert not stream.is_streaming
    await stream.send_chunk("par")
    assert len(world.inbox("1001")) == 0
    await stream.send_chunk("tial")
    final = await stream.complete()
    assert observer.events == []
    assert [m.content for m in await world.inbox("1001").get_batch(timeout=5)] == ["partial"]
    assert final.stream_id is None


async def test_low_level_stream_calls_and_their_errors() -> None:
    world = make_world(["Host"], with_human=True)
    stream_id = await world.registry.start_stream("1000", "human", stream_id="s1")
    assert stream_id == "s1"
    with pytest.raises(StreamError, match="already active"):
        await world.registry.start_stream("1000", "human", stream_id="s1")
    await world.registry.stream_chunk("s1", "x")
    final = await world.registry.complete_stream("s1", "final text")
    assert final.content == "final text"
    with pytest.raises(StreamError, match="not active"):
        await world.registry.stream_chunk("s1", "y")


async def test_observers_added_later_reach_existing_channels_and_can_be_removed() -> None:
    world = make_world(["Host"], with_human=True)
    channel = await world.registry.get_or_create_channel("1000", "human")
    observer = RecordingObserver()
    world.registry.add_stream_observer(observer)
    assert observer in channel.stream_observers
    world.registry.remove_stream_observer(observer)
    assert observer not in channel.stream_observers


async def test_unregistering_removes_a_participant_from_channels() -> None:
    world = make_world(["A", "B", "C"])
    meeting = await world.meetings.create_meeting("1000", required_attendees=["B"])
    await world.meetings.accept_invitation(meeting.id, "1001")
    await world.registry.route_message("1000", "agent 1001", "hi")
    removed = world.registry.unregister("1001")
    assert removed is world.agents["1001"]
    assert "channel_1000_1001" not in world.registry.channels
    assert not meeting.channel.has_participant("1001")
    assert world.registry.participants_of_klass("B") == ()
    with pytest.raises(UnknownReceiver):
        await world.registry.route_message("1000", "agent 1001", "gone?")


async def test_shutdown_closes_inboxes_and_refuses_routing() -> None:
    world = make_world(["A", "B"])
    errors: list[BaseException] = []

    async def agent_loop() -> None:
        try:
            while True:
                await world.inbox("1001").get_batch()
        except QueueClosed as error:
            errors.append(error)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(agent_loop)
            await world.registry.route_message("1000", "agent 1001", "last words")
            await anyio.wait_all_tasks_blocked()
            await world.registry.shutdown()
    assert len(errors) == 1
    assert world.registry.shut_down
    with pytest.raises(MessagingError, match="shut down"):
        await world.registry.route_message("1000", "agent 1001", "too late")
    await world.registry.shutdown()  # idempotent


class RemoteParticipant:
    """Seed 002 §9.3: a participant on the far side of a transport, here a list of serialised messages."""

    def __init__(self, remote_id: str) -> None:
        self.remote_id = remote_id
        self.wire: list[dict[str, object]] = []
        self.closed = False

    @property
    def id(self) -> str:
        return self.remote_id

    @property
    def klass(self) -> str:
        return "RemoteAgent"

    @property
    def is_human(self) -> bool:
        return False

    async def deliver(self, message: Message) -> None:
        self.wire.append(message.to_dict())

    async def close(self) -> None:
        self.closed = True


async def test_custom_participants_and_custom_message_types_route_like_any_other() -> None:
    world = make_world(["Local"])
    remote = RemoteParticipant("remote-7")
    assert isinstance(remote, Participant)
    world.registry.register(remote)
    status = MessageType.define("test_suite.status_update")
    sent = await world.registry.route_message("1000", "RemoteAgent", "idle", message_type=status)
    assert [Message.from_dict(data) for data in remote.wire] == [sent]
    assert sent.message_type is status and sent.recipient_klass == "RemoteAgent"
    await world.registry.shutdown()
    assert remote.closed


async def test_shutdown_reports_failing_hooks_and_closes_everything_else() -> None:
    world = make_world(["A"])

    async def broken_hook() -> None:
        raise RuntimeError("hook failed")

    world.registry.add_shutdown_hook(broken_hook)
    with pytest.raises(DeliveryError, match="shutdown hooks or participant closes") as caught:
        await world.registry.shutdown()
    assert len(caught.value.exceptions) == 1
    assert world.inbox("1000").closed
    with pytest.raises(TypeError, match="async callable"):
        world.registry.add_shutdown_hook("not callable")  # type: ignore[arg-type]
