"""Meetings: creation and joining (seed 002 §10.2), broadcasts, history, waiting for attendees, ending."""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import pytest

from pal_core.messaging import (
    ChannelClosed,
    DeliveryError,
    InvitationStatus,
    MeetingError,
    MeetingRejected,
    MeetingTimeout,
    MessageType,
    NotAParticipant,
    current_meeting_id,
    meeting_spec,
)

from .support import RecordingObserver, make_world

pytestmark = pytest.mark.anyio


async def test_meeting_creation_and_join() -> None:
    # Seed 002 §10.2: owner creates, attendee gets the invitation, joins, and hears the owner's broadcast.
    world = make_world(["Host", "Guest"])
    meetings = world.meetings
    meeting = await meetings.create_meeting(
        "1000", required_attendees=["agent 1001"], topic="Test Meeting", playbook_name="TestPlaybook"
    )
    invitations = await world.inbox("1001").get_batch(timeout=5)
    assert len(invitations) == 1
    invitation = invitations[0]
    assert invitation.message_type is MessageType.MEETING_INVITATION
    assert invitation.meeting_id == meeting.id
    assert "Host (agent 1000) invites you to meeting 1 about: Test Meeting" in invitation.content
    assert "TestPlaybook" in invitation.content

    await meetings.accept_invitation(meeting.id, "1001")
    assert meeting.joined_attendees == ("1001",)
    assert meeting.invitations["1001"].status is InvitationStatus.ACCEPTED
    responses = await world.inbox("1000").get_batch(timeout=5)
    assert [m.message_type for m in responses] == [MessageType.MEETING_INVITATION_RESPONSE]
    assert "Guest (agent 1001) joined meeting 1" in responses[0].content

    await meetings.broadcast_as_owner(meeting.id, "1000", "Hello meeting")
    messages = await world.inbox("1001").get_batch(lambda m: m.meeting_id == meeting.id, timeout=5)
    assert [m.content for m in messages] == ["Hello meeting"]
    assert messages[0].message_type is MessageType.MEETING_BROADCAST


async def test_broadcast_reaches_every_member_but_the_sender() -> None:
    world = make_world(["Host", "A", "B", "C"])
    meeting = await world.meetings.create_meeting(
        "1000", required_attendees=["A", "B"], optional_attendees=["C"]
    )
    for attendee in ("1001", "1002", "1003"):
        await world.meetings.accept_invitation(meeting.id, attendee)
        await world.inbox(attendee).get_batch(min_messages=0)  # drop the invitation
    await world.inbox("1000").get_batch(min_messages=0)  # drop the responses
    sent = await world.meetings.broadcast_as_participant(
        meeting.id, "1002", "from B", target_agent_ids=["1001"]
    )
    assert sent.target_agent_ids == ("1001",)
    for member in ("1000", "1001", "1003"):
        assert (await world.inbox(member).get_batch(timeout=5)) == [sent]
    assert len(world.inbox("1002")) == 0
    # route_message to "meeting <id>" is the same broadcast, recorded in the same history
    routed = await world.registry.route_message("1003", meeting_spec(meeting.id), "from C")
    assert meeting.history == (sent, routed)


async def test_broadcast_rules() -> None:
    world = make_world(["Host", "A", "Outsider"])
    meeting = await world.meetings.create_meeting("1000", required_attendees=["A"])
    with pytest.raises(MeetingError, match="has not joined"):
        await world.meetings.broadcast(meeting.id, "1001", "not yet")
    with pytest.raises(NotAParticipant):
        await world.registry.route_message("1002", meeting_spec(meeting.id), "crashing the party")
    await world.meetings.accept_invitation(meeting.id, "1001")
    with pytest.raises(MeetingError, match="does not own"):
        await world.meetings.broadcast_as_owner(meeting.id, "1001", "I am the host now")
    with pytest.raises(MeetingError, match="not a joined attendee"):
        await world.meetings.broadcast_as_participant(meeting.id, "1000", "hi")


async def test_history_and_each_members_last_read_index() -> None:
    world = make_world(["Host", "A", "B"])
    meeting = await world.meetings.create_meeting("1000", required_attendees=["A", "B"])
    await world.meetings.accept_invitation(meeting.id, "1001")
    first = await world.meetings.broadcast(meeting.id, "1000", "one")
    second = await world.meetings.broadcast(meeting.id, "1001", "two")
    # B joins late and still reads everything from the start.
    await world.meetings.accept_invitation(meeting.id, "1002")
    assert world.meetings.unread_messages(meeting.id, "1002") == [first, second]
    assert meeting.last_read_index("1002") == 2
    third = await world.meetings.broadcast(meeting.id, "1002", "three")
    assert world.meetings.unread_messages(meeting.id, "1002") == [third]
    assert world.meetings.unread_messages(meeting.id, "1001") == [first, second, third]
    world.meetings.mark_read(meeting.id, "1000", 1)
    assert world.meetings.unread_messages(meeting.id, "1000") == [second, third]
    with pytest.raises(MeetingError, match="outside the history"):
        world.meetings.mark_read(meeting.id, "1000", 9)
    with pytest.raises(MeetingError, match="not a member"):
        meeting.last_read_index("1234")


async def test_waiting_returns_once_every_required_attendee_joined() -> None:
    world = make_world(["Host", "A", "B", "Optional"])
    meeting = await world.meetings.create_meeting(
        "1000", required_attendees=["A", "B"], optional_attendees=["Optional"]
    )
    assert meeting.missing_required_attendees() == ("1001", "1002")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            done: list[bool] = []

            async def owner_waits() -> None:
                await world.meetings.wait_for_required_attendees(meeting.id, timeout=30)
                done.append(True)

            group.start_soon(owner_waits)
            await anyio.wait_all_tasks_blocked()
            await world.meetings.accept_invitation(meeting.id, "1001")
            await anyio.wait_all_tasks_blocked()
            assert done == []
            await world.meetings.accept_invitation(meeting.id, "1002")
    assert done == [True]


async def test_a_missing_required_attendee_times_out_naming_who_is_missing() -> None:
    world = make_world(["Host", "HeadChef", "MarketingSpecialist"])
    meeting = await world.meetings.create_meeting(
        "1000", required_attendees=["HeadChef", "MarketingSpecialist"]
    )
    await world.meetings.accept_invitation(meeting.id, "1001")
    with anyio.fail_after(5), pytest.raises(MeetingTimeout) as caught:
        await world.meetings.wait_for_required_attendees(meeting.id, timeout=0.05)
    assert caught.value.missing == ("1002",)
    assert "MarketingSpecialist (agent 1002)" in str(caught.value)
    assert "HeadChef" not in str(caught.value)


async def test_a_required_rejection_fails_the_wait_at_once() -> None:
    world = make_world(["Host", "A", "B"])
    meeting = await world.meetings.create_meeting("1000", required_attendees=["A"], optional_attendees=["B"])
    await world.meetings.reject_invitation(meeting.id, "1002", "busy")  # optional: no effect on the wait
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            errors: list[BaseException] = []

            async def owner_waits() -> None:
                try:
                    await world.meetings.wait_for_required_attendees(meeting.id, timeout=30)
                except MeetingRejected as error:
                    errors.append(error)

            group.start_soon(owner_waits)
            await anyio.wait_all_tasks_blocked()
            await world.meetings.reject_invitation(meeting.id, "1001", "double-booked")
    assert len(errors) == 1 and "A (agent 1001)" in str(errors[0])
    assert meeting.invitations["1001"].reason == "double-booked"
    responses = [m.content for m in await world.inbox("1000").get_batch(timeout=5)]
    assert responses == [
        "B (agent 1002) declined meeting 1: busy",
        "A (agent 1001) declined meeting 1: double-booked",
    ]


async def test_invitation_rules() -> None:
    world = make_world(["Host", "A", "B"])
    meeting = await world.meetings.create_meeting(
        "1000", required_attendees=["A", "Host"], optional_attendees=["A"]
    )
    assert (meeting.required_attendees, meeting.optional_attendees) == (("1001",), ())
    with pytest.raises(MeetingError, match="1002 was not invited"):
        await world.meetings.accept_invitation(meeting.id, "1002")
    with pytest.raises(MeetingError, match="only the owner"):
        await world.meetings.invite(meeting.id, "1001", "B")
    await world.meetings.invite(meeting.id, "1000", "B")
    assert meeting.optional_attendees == ("1002",)
    await world.meetings.accept_invitation(meeting.id, "1002")
    await world.meetings.accept_invitation(meeting.id, "1002")  # again: harmless
    assert meeting.joined_attendees == ("1002",)
    with pytest.raises(MeetingError, match="cannot reject now"):
        await world.meetings.reject_invitation(meeting.id, "1002")
    with pytest.raises(MeetingError, match="list of receiver specs"):
        await world.meetings.create_meeting("1000", required_attendees="A")
    with pytest.raises(MeetingError, match="already exists"):
        await world.meetings.create_meeting("1000", meeting_id=meeting.id)
    with pytest.raises(MeetingError, match="no meeting '99'"):
        world.meetings.meeting("99")


async def test_leaving_stops_broadcasts() -> None:
    world = make_world(["Host", "A"])
    meeting = await world.meetings.create_meeting("1000", optional_attendees=["A"])
    await world.meetings.accept_invitation(meeting.id, "1001")
    await world.meetings.leave_meeting(meeting.id, "1001")
    await world.inbox("1001").get_batch(min_messages=0)
    await world.meetings.broadcast(meeting.id, "1000", "anyone?")
    assert len(world.inbox("1001")) == 0
    assert world.meetings.meetings_of("1001") == ()


async def test_ending_broadcasts_meeting_ended_and_closes_the_meeting() -> None:
    world = make_world(["Host", "A", "B"])
    meeting = await world.meetings.create_meeting("1000", required_attendees=["A", "B"])
    await world.meetings.accept_invitation(meeting.id, "1001")
    await world.meetings.accept_invitation(meeting.id, "1002")
    await world.meetings.broadcast(meeting.id, "1000", "wrapping up")
    with pytest.raises(MeetingError, match="only the owner"):
        await world.meetings.end_meeting(meeting.id, "1001")
    ended = await world.meetings.end_meeting(meeting.id, "1000", "agenda done")
    assert ended.message_type is MessageType.MEETING_ENDED
    assert ended.content == "Meeting 1 has ended: agenda done"
    for member in ("1001", "1002"):
        received = await world.inbox(member).get_batch(lambda m: m.meeting_id == meeting.id, timeout=5)
        assert received[-1] == ended
    assert meeting.ended and meeting.end_reason == "agenda done"
    assert meeting.history[-1] == ended
    with pytest.raises(MeetingError, match="has ended"):
        await world.meetings.broadcast(meeting.id, "1001", "one more thing")
    with pytest.raises(ChannelClosed, match="has ended"):
        await world.registry.route_message("1001", meeting_spec(meeting.id), "one more thing")
    assert world.meetings.unread_messages(meeting.id, "1002")[-1] == ended  # history stays readable
    assert world.meetings.meetings_of("1000") == ()


async def test_ending_wakes_attendance_waiters_with_an_error() -> None:
    world = make_world(["Host", "A"])
    meeting = await world.meetings.create_meeting("1000", required_attendees=["A"])
    errors: list[BaseException] = []

    async def owner_waits() -> None:
        try:
            await world.meetings.wait_for_required_attendees(meeting.id, timeout=30)
        except MeetingError as error:
            errors.append(error)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(owner_waits)
            await anyio.wait_all_tasks_blocked()
            await world.meetings.shutdown()
    assert len(errors) == 1 and "shut down" in str(errors[0])


@dataclass(frozen=True)
class Frame:
    """A stand-in for the runtime's call-stack frame: only the field the protocol needs."""

    playbook: str
    meeting_id: str | None = None


def test_current_meeting_comes_from_the_innermost_frame_with_one() -> None:
    assert current_meeting_id([]) is None
    assert current_meeting_id([Frame("Main"), Frame("Helper")]) is None
    stack = [Frame("Main"), Frame("Meeting", "7"), Frame("Helper")]
    assert current_meeting_id(stack) == "7"
    assert current_meeting_id([*stack, Frame("Nested", "8"), Frame("Inner")]) == "8"


async def test_wait_timeout_must_be_sensible() -> None:
    world = make_world(["Host"])
    meeting = await world.meetings.create_meeting("1000")
    with pytest.raises(ValueError, match="finite number"):
        await world.meetings.wait_for_required_attendees(meeting.id, timeout=float("inf"))
    assert await world.meetings.wait_for_required_attendees(meeting.id, timeout=0) is meeting


async def test_an_undeliverable_invitation_does_not_stop_the_others() -> None:
    world = make_world(["Host", "Gone", "Here"])
    await world.inbox("1001").close()
    with pytest.raises(DeliveryError, match="not delivered to 1001") as caught:
        await world.meetings.create_meeting("1000", required_attendees=["Gone", "Here"])
    assert caught.value.failed == ("1001",)
    meeting = world.meetings.meeting("1")
    assert set(meeting.invitations) == {"1001", "1002"}
    assert [m.message_type for m in await world.inbox("1002").get_batch(timeout=5)] == [
        MessageType.MEETING_INVITATION
    ]
    await world.meetings.accept_invitation(meeting.id, "1002")
    with anyio.fail_after(5), pytest.raises(MeetingTimeout, match=r"Gone \(agent 1001\)"):
        await world.meetings.wait_for_required_attendees(meeting.id, timeout=0.01)


async def test_streaming_into_a_meeting_with_a_human_shows_chunks_then_delivers_to_all() -> None:
    world = make_world(["Host", "A"], with_human=True)
    observer = RecordingObserver()
    world.registry.add_stream_observer(observer)
    meeting = await world.meetings.create_meeting("1000", required_attendees=["A", "human"])
    for attendee in ("1001", "human"):
        await world.meetings.accept_invitation(meeting.id, attendee)
    stream = await world.registry.open_stream("1000", meeting_spec(meeting.id))
    assert stream.is_streaming
    await stream.send_chunk("Welcome ")
    await stream.send_chunk("all")
    final = await stream.complete(target_agent_ids=["1001"])
    assert (final.message_type, final.meeting_id, final.target_agent_ids) == (
        MessageType.MEETING_BROADCAST,
        meeting.id,
        ("1001",),
    )
    assert meeting.history[-1] == final
    assert [type(event).__name__ for event in observer.events] == [
        "StreamStartEvent",
        "StreamChunkEvent",
        "StreamChunkEvent",
        "StreamCompleteEvent",
    ]
    assert observer.events[0].meeting_id == meeting.id  # type: ignore[union-attr]
    assert world.human is not None
    for inbox in (world.inbox("1001"), world.human.inbox):
        assert (await inbox.get_batch(lambda m: m.meeting_id == meeting.id, timeout=5))[-1] == final
