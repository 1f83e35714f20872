"""Load: many concurrent senders lose nothing and keep each sender's order; meeting fan-out is exact;
shutdown leaves no task behind."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict

import anyio
import anyio.lowlevel
import pytest

from pal_core.messaging import MeetingError, Message, QueueClosed, agent_spec

from .support import make_world, other_tasks

pytestmark = pytest.mark.anyio

AGENTS = 100
MESSAGES_PER_AGENT = 1_000
MEETING_MEMBERS = 10
BROADCASTS = 10_000


def receiver_of(sender_index: int, sequence: int) -> int:
    """Spread each sender's messages over every other agent."""
    return (sender_index + 1 + sequence % (AGENTS - 1)) % AGENTS


async def test_100_agents_1000_messages_each_nothing_lost_and_order_kept() -> None:
    world = make_world([f"Worker{i % 7}" for i in range(AGENTS)])
    ids = list(world.agents)
    expected: Counter[str] = Counter()
    for sender in range(AGENTS):
        for sequence in range(MESSAGES_PER_AGENT):
            expected[ids[receiver_of(sender, sequence)]] += 1
    received: dict[str, list[Message]] = defaultdict(list)

    async def sender(index: int) -> None:
        for sequence in range(MESSAGES_PER_AGENT):
            target = ids[receiver_of(index, sequence)]
            await world.registry.route_message(ids[index], agent_spec(target), f"{ids[index]}:{sequence}")
            if sequence % 10 == 0:
                await anyio.lowlevel.checkpoint()  # let the other senders and the readers interleave

    async def reader(agent_id: str) -> None:
        inbox = world.inbox(agent_id)
        while len(received[agent_id]) < expected[agent_id]:
            received[agent_id].extend(await inbox.get_batch(max_messages=50))

    before = other_tasks()
    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for agent_id in ids:
                group.start_soon(reader, agent_id)
            for index in range(AGENTS):
                group.start_soon(sender, index)

    total = sum(len(messages) for messages in received.values())
    assert total == AGENTS * MESSAGES_PER_AGENT
    for agent_id in ids:
        messages = received[agent_id]
        assert len(messages) == expected[agent_id]
        assert len({m.id for m in messages}) == len(messages)
        assert all(m.recipient_id == agent_id for m in messages)
        last_sequence: dict[str, int] = {}
        for m in messages:
            origin, sequence = m.content.split(":")
            assert origin == m.sender_id
            assert int(sequence) > last_sequence.get(origin, -1), (
                f"{agent_id} got {origin}'s messages out of order"
            )
            last_sequence[origin] = int(sequence)
        assert len(world.inbox(agent_id)) == 0
    assert other_tasks() - before == set()


async def test_10_member_meeting_10000_broadcasts_each_delivered_exactly_once() -> None:
    world = make_world(["Host", *[f"Member{i}" for i in range(1, MEETING_MEMBERS)]])
    ids = list(world.agents)
    meeting = await world.meetings.create_meeting(ids[0], required_attendees=[agent_spec(i) for i in ids[1:]])
    for attendee in ids[1:]:
        await world.meetings.accept_invitation(meeting.id, attendee)
    with anyio.fail_after(5):
        await world.meetings.wait_for_required_attendees(meeting.id, timeout=5)
    for agent_id in ids:  # drop the invitations and the responses
        await world.inbox(agent_id).get_batch(min_messages=0)
    per_member = BROADCASTS // MEETING_MEMBERS
    received: dict[str, list[Message]] = defaultdict(list)
    expected_each = BROADCASTS - per_member  # everything but one's own broadcasts

    async def speaker(agent_id: str) -> None:
        for sequence in range(per_member):
            await world.meetings.broadcast(meeting.id, agent_id, f"{agent_id}:{sequence}")
            if sequence % 10 == 0:
                await anyio.lowlevel.checkpoint()

    async def listener(agent_id: str) -> None:
        inbox = world.inbox(agent_id)
        while len(received[agent_id]) < expected_each:
            received[agent_id].extend(await inbox.get_batch(lambda m: m.meeting_id == meeting.id))

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for agent_id in ids:
                group.start_soon(listener, agent_id)
            for agent_id in ids:
                group.start_soon(speaker, agent_id)

    history_ids = [m.id for m in meeting.history]
    assert len(history_ids) == len(set(history_ids)) == BROADCASTS
    for agent_id in ids:
        got = received[agent_id]
        assert len(got) == expected_each
        assert len({m.id for m in got}) == expected_each  # exactly once
        assert {m.id for m in got} == {m.id for m in meeting.history if m.sender_id != agent_id}
        assert len(world.inbox(agent_id)) == 0
        # through the history, every member reads every broadcast, its own included, exactly once
        assert [m.id for m in world.meetings.unread_messages(meeting.id, agent_id)] == history_ids
        assert world.meetings.unread_messages(meeting.id, agent_id) == []


async def test_shutdown_ends_every_wait_and_leaves_no_task_running() -> None:
    world = make_world(["Host", "A", "B", "Absent"])
    meeting = await world.meetings.create_meeting("1000", required_attendees=["A", "Absent"])
    await world.meetings.accept_invitation(meeting.id, "1001")
    outcomes: list[str] = []

    async def agent_loop(agent_id: str) -> None:
        try:
            while True:
                await world.inbox(agent_id).get_batch()
        except QueueClosed:
            outcomes.append(f"{agent_id} closed")

    async def owner_waits() -> None:
        try:
            await world.meetings.wait_for_required_attendees(meeting.id, timeout=60)
        except MeetingError:
            outcomes.append("attendance wait ended")

    before = other_tasks()
    tasks = [asyncio.create_task(agent_loop(agent_id)) for agent_id in ("1001", "1002", "1003")]
    tasks.append(asyncio.create_task(owner_waits()))
    await anyio.wait_all_tasks_blocked()
    with anyio.fail_after(5):
        await world.registry.shutdown()  # also ends the meetings, through the manager's shutdown hook
        await asyncio.gather(*tasks)
    assert sorted(outcomes) == ["1001 closed", "1002 closed", "1003 closed", "attendance wait ended"]
    assert other_tasks() - before == set()
    assert all(task.done() for task in tasks)
