"""Channels: deterministic ids, delivery to everyone but the sender, streams only for humans."""

from __future__ import annotations

import anyio
import pytest

from pal_core.messaging import (
    AgentParticipant,
    AsyncMessageQueue,
    Channel,
    ChannelClosed,
    DeliveryError,
    DuplicateParticipant,
    HumanParticipant,
    Message,
    NotAParticipant,
    ObserverError,
    StreamChunkEvent,
    StreamCompleteEvent,
    StreamError,
    StreamStartEvent,
    direct_channel_id,
    meeting_channel_id,
)

from .support import RecordingObserver, message

pytestmark = pytest.mark.anyio


def agent(agent_id: str, klass: str = "Worker") -> AgentParticipant:
    return AgentParticipant(id=agent_id, klass=klass, inbox=AsyncMessageQueue(f"inbox of {agent_id}"))


def test_channel_ids_are_deterministic() -> None:
    assert direct_channel_id("1001", "1000") == direct_channel_id("1000", "1001") == "channel_1000_1001"
    assert direct_channel_id("human", "1000") == "channel_1000_human"
    assert meeting_channel_id("7") == "meeting_7"


async def test_send_reaches_every_participant_but_the_sender() -> None:
    members = [agent(str(1000 + i)) for i in range(4)]
    channel = Channel("meeting_1", members, meeting_id="1")
    sent = message(sender="1001")
    await channel.send(sent)
    assert [len(member.inbox) for member in members] == [1, 0, 1, 1]
    assert members[0].inbox.peek() is sent


async def test_a_sender_outside_the_channel_is_refused() -> None:
    channel = Channel("channel_1000_1001", [agent("1000"), agent("1001")])
    with pytest.raises(NotAParticipant, match="1002 cannot send on channel_1000_1001"):
        await channel.send(message(sender="1002"))


async def test_membership_changes_take_effect_for_the_next_send() -> None:
    first, second, third = agent("1000"), agent("1001"), agent("1002")
    channel = Channel("meeting_1", [first, second], meeting_id="1")
    await channel.send(message(sender="1000"))
    channel.add_participant(third)
    await channel.send(message(sender="1000"))
    assert channel.remove_participant("1001") is second
    await channel.send(message(sender="1000"))
    assert (len(second.inbox), len(third.inbox)) == (2, 2)
    with pytest.raises(DuplicateParticipant):
        channel.add_participant(agent("1002"))
    with pytest.raises(NotAParticipant):
        channel.remove_participant("1001")


async def test_a_failing_recipient_does_not_stop_delivery_to_the_others() -> None:
    closed, healthy = agent("1001"), agent("1002")
    await closed.inbox.close()
    channel = Channel("meeting_1", [agent("1000"), closed, healthy], meeting_id="1")
    with pytest.raises(DeliveryError, match="not delivered to 1001") as caught:
        await channel.send(message(sender="1000"))
    assert caught.value.failed == ("1001",)
    assert len(healthy.inbox) == 1


async def test_history_is_kept_only_when_asked() -> None:
    plain = Channel("channel_1000_1001", [agent("1000"), agent("1001")])
    recorded = Channel("meeting_1", [agent("1000"), agent("1001")], meeting_id="1", keep_history=True)
    sent = message(sender="1000")
    await plain.send(sent)
    await recorded.send(sent)
    assert plain.history == ()
    assert recorded.history == (sent,)
    assert recorded.history_since(1) == []


async def test_a_closed_channel_refuses_sends_and_streams() -> None:
    channel = Channel("meeting_1", [agent("1000"), agent("1001")], meeting_id="1")
    channel.close("meeting 1 has ended")
    with pytest.raises(ChannelClosed, match="meeting 1 has ended"):
        await channel.send(message(sender="1000"))
    with pytest.raises(ChannelClosed):
        await channel.start_stream("s", "1000", "Worker")


async def test_agent_only_channels_do_not_stream() -> None:
    observer = RecordingObserver()
    channel = Channel("channel_1000_1001", [agent("1000"), agent("1001")], stream_observers=[observer])
    assert not channel.has_human
    assert await channel.start_stream("s1", "1000", "Worker") is False
    assert channel.active_stream_ids == ()
    assert observer.events == []


async def test_a_stream_to_a_human_notifies_observers_then_delivers_the_whole_message() -> None:
    observer = RecordingObserver()
    human = HumanParticipant(inbox=AsyncMessageQueue("human"))
    channel = Channel("channel_1000_human", [agent("1000", "Host"), human])
    channel.add_stream_observer(observer)
    channel.add_stream_observer(observer)  # adding twice has no effect
    assert await channel.start_stream("s1", "1000", "Host", recipient_id="human", recipient_klass="Human")
    await channel.stream_chunk("s1", "Hel")
    await channel.stream_chunk("s1", "lo")
    assert len(human.inbox) == 0  # nothing delivered until the stream completes
    final = Message(sender_id="1000", sender_klass="Host", content="Hello", recipient_id="human")
    delivered = await channel.complete_stream("s1", final)
    assert delivered.stream_id == "s1" and delivered.content == "Hello"
    assert human.inbox.peek() == delivered
    start, chunk0, chunk1, complete = observer.events
    assert isinstance(start, StreamStartEvent) and start.recipient_id == "human"
    assert isinstance(chunk0, StreamChunkEvent) and (chunk0.chunk, chunk0.index) == ("Hel", 0)
    assert isinstance(chunk1, StreamChunkEvent) and (chunk1.chunk, chunk1.index) == ("lo", 1)
    assert isinstance(complete, StreamCompleteEvent)
    assert (complete.streamed_content, complete.message) == ("Hello", delivered)
    assert channel.active_stream_ids == ()


async def test_stream_misuse_is_reported() -> None:
    channel = Channel("channel_1000_human", [agent("1000"), HumanParticipant(inbox=AsyncMessageQueue())])
    with pytest.raises(StreamError, match="not active"):
        await channel.stream_chunk("missing", "x")
    await channel.start_stream("s1", "1000", "Worker")
    with pytest.raises(StreamError, match="already active"):
        await channel.start_stream("s1", "1000", "Worker")
    with pytest.raises(StreamError, match="started by 1000"):
        await channel.complete_stream("s1", message(sender="human"))
    with pytest.raises(StreamError, match="belongs to stream other"):
        await channel.complete_stream("s1", message(sender="1000", stream_id="other"))


async def test_a_failing_observer_does_not_stop_the_others_or_the_delivery() -> None:
    class Broken:
        async def on_stream_start(self, event: StreamStartEvent) -> None:
            raise RuntimeError("display broke")

        async def on_stream_chunk(self, event: StreamChunkEvent) -> None:
            raise RuntimeError("display broke")

        async def on_stream_complete(self, event: StreamCompleteEvent) -> None:
            raise RuntimeError("display broke")

    working = RecordingObserver()
    human = HumanParticipant(inbox=AsyncMessageQueue())
    channel = Channel("channel_1000_human", [agent("1000"), human], stream_observers=[Broken(), working])
    with pytest.raises(ObserverError, match="StreamStartEvent"):
        await channel.start_stream("s1", "1000", "Worker")
    with pytest.raises(ObserverError):
        await channel.complete_stream("s1", message(sender="1000"))
    assert len(working.events) == 2
    assert len(human.inbox) == 1


async def test_non_observers_are_refused() -> None:
    channel = Channel("c", [])
    with pytest.raises(TypeError, match="not a StreamObserver"):
        channel.add_stream_observer(object())  # type: ignore[arg-type]


async def test_streams_end_quickly() -> None:
    # Streaming must not block on anything but the observers themselves.
    human = HumanParticipant(inbox=AsyncMessageQueue())
    channel = Channel("channel_1000_human", [agent("1000"), human])
    with anyio.fail_after(5):
        await channel.start_stream("s", "1000", "Worker")
        for piece in "streamed":
            await channel.stream_chunk("s", piece)
        await channel.complete_stream("s", message(sender="1000", content="streamed"))


async def test_delivery_errors_split_with_except_star_keep_their_names() -> None:
    class Refusing:
        def __init__(self, participant_id: str, error: Exception) -> None:
            self.id, self.klass, self.is_human, self.error = participant_id, "Refusing", False, error

        async def deliver(self, message: Message) -> None:
            raise self.error

        async def close(self) -> None:
            return None

    channel = Channel(
        "meeting_1",
        [agent("1000"), Refusing("1001", KeyError("k")), Refusing("1002", ValueError("v"))],
        meeting_id="1",
    )
    caught: list[DeliveryError] = []
    try:
        await channel.send(message(sender="1000"))
    except* ValueError as group:
        assert isinstance(group, DeliveryError)
        caught.append(group)
    except* KeyError as group:
        assert isinstance(group, DeliveryError)
        caught.append(group)
    assert sorted(group.failed for group in caught) == [("1001",), ("1002",)]
