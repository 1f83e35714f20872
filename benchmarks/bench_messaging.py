"""Throughput of pal_core.messaging against bare asyncio baselines, measured like with like.

Run: .venv/bin/python benchmarks/bench_messaging.py [--quick]

Every pair of figures uses the same pre-built Message objects, the same producer (one task that awaits each
send and yields to the event loop every YIELD_EVERY messages, so consumers run while it produces) and the
same consumer pattern (wait for at least one message, then take everything available in one go). A figure
is the number of messages (or broadcasts) divided by the time from the first send until every consumer has
received everything. Each figure is the median of several runs, baseline and messaging runs interleaved.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pal_core.messaging import (  # after the path insert above, so the checkout imports when run directly
    AgentParticipant,
    AsyncMessageQueue,
    Channel,
    ChannelRegistry,
    MeetingManager,
    Message,
    MessageType,
)

YIELD_EVERY = 100
FAN_OUT = 10
GOAL_DIRECT = 0.5
GOAL_MEETING = 0.4


def direct_messages(count: int) -> list[Message]:
    return [
        Message(
            sender_id="1000",
            sender_klass="Producer",
            recipient_id="1001",
            recipient_klass="Consumer",
            content=f"m{i}",
        )
        for i in range(count)
    ]


def meeting_messages(count: int, meeting_id: str) -> list[Message]:
    return [
        Message(
            sender_id="1000",
            sender_klass="Host",
            content=f"b{i}",
            message_type=MessageType.MEETING_BROADCAST,
            meeting_id=meeting_id,
        )
        for i in range(count)
    ]


async def produce(messages: list[Message], send: Callable[[Message], Awaitable[None]]) -> None:
    for index, message in enumerate(messages, 1):
        await send(message)
        if index % YIELD_EVERY == 0:
            await asyncio.sleep(0)


# Bare baselines


async def bare_queue(messages: list[Message]) -> float:
    queue: asyncio.Queue[Message] = asyncio.Queue()
    total = len(messages)

    async def consume() -> None:
        received = 0
        while received < total:
            await queue.get()
            received += 1
            while not queue.empty():
                queue.get_nowait()
                received += 1

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0)
    started = time.perf_counter()
    await produce(messages, queue.put)
    await consumer
    return total / (time.perf_counter() - started)


async def bare_fan_out(messages: list[Message]) -> float:
    queues: list[asyncio.Queue[Message]] = [asyncio.Queue() for _ in range(FAN_OUT)]
    total = len(messages)

    async def consume(queue: asyncio.Queue[Message]) -> None:
        received = 0
        while received < total:
            await queue.get()
            received += 1
            while not queue.empty():
                queue.get_nowait()
                received += 1

    async def send(message: Message) -> None:
        for queue in queues:
            await queue.put(message)

    consumers = [asyncio.create_task(consume(queue)) for queue in queues]
    await asyncio.sleep(0)
    started = time.perf_counter()
    await produce(messages, send)
    await asyncio.gather(*consumers)
    return total / (time.perf_counter() - started)


# Messaging layer


async def drain(inbox: AsyncMessageQueue, total: int) -> None:
    received = 0
    while received < total:
        received += len(await inbox.get_batch())


async def direct_channel(messages: list[Message]) -> float:
    producer = AgentParticipant(id="1000", klass="Producer", inbox=AsyncMessageQueue("producer"))
    consumer = AgentParticipant(id="1001", klass="Consumer", inbox=AsyncMessageQueue("consumer"))
    channel = Channel("channel_1000_1001", [producer, consumer])
    reader = asyncio.create_task(drain(consumer.inbox, len(messages)))
    await asyncio.sleep(0)
    started = time.perf_counter()
    await produce(messages, channel.send)
    await reader
    return len(messages) / (time.perf_counter() - started)


async def routed_direct(count: int) -> float:
    registry = ChannelRegistry()
    registry.register(AgentParticipant(id="1000", klass="Producer", inbox=AsyncMessageQueue("producer")))
    consumer = AgentParticipant(id="1001", klass="Consumer", inbox=AsyncMessageQueue("consumer"))
    registry.register(consumer)
    reader = asyncio.create_task(drain(consumer.inbox, count))
    await asyncio.sleep(0)
    started = time.perf_counter()
    for index in range(1, count + 1):
        await registry.route_message("1000", "agent 1001", "routed")
        if index % YIELD_EVERY == 0:
            await asyncio.sleep(0)
    await reader
    return count / (time.perf_counter() - started)


async def meeting_setup() -> tuple[MeetingManager, list[AsyncMessageQueue], str]:
    registry = ChannelRegistry()
    registry.register(AgentParticipant(id="1000", klass="Host", inbox=AsyncMessageQueue("host")))
    inboxes = []
    for index in range(FAN_OUT):
        attendee = AgentParticipant(id=str(1001 + index), klass=f"Member{index}", inbox=AsyncMessageQueue())
        registry.register(attendee)
        inboxes.append(attendee.inbox)
    meetings = MeetingManager(registry)
    meeting = await meetings.create_meeting(
        "1000", required_attendees=[f"agent {1001 + i}" for i in range(FAN_OUT)]
    )
    for index in range(FAN_OUT):
        await meetings.accept_invitation(meeting.id, str(1001 + index))
    await meetings.wait_for_required_attendees(meeting.id, timeout=5)
    for inbox in inboxes:
        await inbox.get_batch(min_messages=0)  # drop the invitations
    return meetings, inboxes, meeting.id


async def meeting(messages: list[Message]) -> float:
    meetings, inboxes, _ = await meeting_setup()
    readers = [asyncio.create_task(drain(inbox, len(messages))) for inbox in inboxes]
    await asyncio.sleep(0)
    started = time.perf_counter()
    await produce(messages, meetings.post)
    await asyncio.gather(*readers)
    return len(messages) / (time.perf_counter() - started)


# get_batch with a predicate over a long queue


async def predicate_scan(pending: int, repeats: int) -> tuple[float, float, float]:
    """Microseconds per call: a get_batch whose predicate matches nothing (full scan, nothing taken), one
    whose predicate matches only the newest message (full scan, one taken), and peek for that message."""
    queue = AsyncMessageQueue("scan")
    for message in direct_messages(pending - 1):
        await queue.put(message)
    needle = Message(sender_id="2000", sender_klass="Other", content="needle")
    await queue.put(needle)

    def from_other(message: Message) -> bool:
        return message.sender_id == "2000"

    def from_nobody(message: Message) -> bool:
        return message.sender_id == "nobody"

    started = time.perf_counter()
    for _ in range(repeats):
        await queue.get_batch(from_nobody, min_messages=0)
    miss = (time.perf_counter() - started) / repeats * 1e6

    started = time.perf_counter()
    for _ in range(repeats):
        (taken,) = await queue.get_batch(from_other, max_messages=1)
        await queue.put(taken)  # back at the end, so every call scans the whole queue
    hit = (time.perf_counter() - started) / repeats * 1e6

    started = time.perf_counter()
    for _ in range(repeats):
        queue.peek(from_other)
    peek = (time.perf_counter() - started) / repeats * 1e6
    return miss, hit, peek


async def run(quick: bool) -> int:
    direct_count = 20_000 if quick else 200_000
    broadcast_count = 5_000 if quick else 50_000
    runs = 3 if quick else 5
    pending = 10_000
    direct = direct_messages(direct_count)
    broadcasts = meeting_messages(broadcast_count, "1")

    figures: dict[str, list[float]] = {name: [] for name in ("bare", "direct", "fan", "meeting", "routed")}
    for _ in range(runs):
        figures["bare"].append(await bare_queue(direct))
        figures["direct"].append(await direct_channel(direct))
        figures["fan"].append(await bare_fan_out(broadcasts))
        figures["meeting"].append(await meeting(broadcasts))
        figures["routed"].append(await routed_direct(direct_count // 4))
    rate = {name: statistics.median(values) for name, values in figures.items()}
    miss, hit, peek = await predicate_scan(pending, 50 if quick else 200)

    direct_ratio = rate["direct"] / rate["bare"]
    meeting_ratio = rate["meeting"] / rate["fan"]
    print(f"pal_core.messaging benchmark (Python {sys.version.split()[0]}, median of {runs} runs)")
    print(
        f"Same pre-built Message objects on both sides; the producer awaits each send and yields every {YIELD_EVERY}"
    )
    print("messages; every consumer waits for one message, then takes all that are queued. Rate = messages")
    print("(or broadcasts) / time from the first send until every consumer has received everything.")
    print()
    print(f"1:1, {direct_count:,} messages, one producer, one consumer")
    print(f"  bare asyncio.Queue (put / get + get_nowait drain)     {rate['bare']:>12,.0f} messages/s")
    print(f"  Channel.send -> AgentParticipant -> inbox.get_batch   {rate['direct']:>12,.0f} messages/s")
    print(
        f"  ratio channel / bare queue                            {direct_ratio:>12.2f}   goal >= {GOAL_DIRECT}"
    )
    print()
    print(f"Fan-out, {broadcast_count:,} broadcasts, each delivered to {FAN_OUT} consumers")
    print(f"  bare loop putting into {FAN_OUT} asyncio.Queues           {rate['fan']:>12,.0f} broadcasts/s")
    print(
        f"  meeting (owner + {FAN_OUT} members), MeetingManager.post   {rate['meeting']:>12,.0f} broadcasts/s"
    )
    print(
        f"  ratio meeting / bare fan-out                          {meeting_ratio:>12.2f}   goal >= {GOAL_MEETING}"
    )
    print(f"  (deliveries/s: bare {rate['fan'] * FAN_OUT:,.0f}, meeting {rate['meeting'] * FAN_OUT:,.0f};")
    print("   the meeting figure includes its membership check and recording each broadcast in the history)")
    print()
    print("For reference, not comparable with the above: registry.route_message('1000', 'agent 1001', text),")
    print("which also resolves the receiver spec and builds a new Message (id, timestamp, checks) per send:")
    print(
        f"  route_message, {direct_count // 4:,} messages                      {rate['routed']:>12,.0f} messages/s"
    )
    print()
    print(
        f"get_batch with a predicate over {pending:,} pending messages (per call, {pending:,} predicate calls each)"
    )
    print(
        f"  predicate matches nothing (min_messages=0)            {miss:>12,.0f} us   ({miss * 1000 / pending:.0f} ns/message)"
    )
    print(
        f"  predicate matches the newest message only, take it    {hit:>12,.0f} us   (includes putting it back)"
    )
    print(f"  peek for that same message                            {peek:>12,.0f} us")
    print()
    met = direct_ratio >= GOAL_DIRECT and meeting_ratio >= GOAL_MEETING
    print(
        f"goals {'met' if met else 'NOT met'}: 1:1 {direct_ratio:.2f} >= {GOAL_DIRECT}, meeting {meeting_ratio:.2f} >= {GOAL_MEETING}"
    )
    return 0 if met else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer messages and runs (a smoke run)")
    arguments = parser.parse_args(argv)
    return asyncio.run(run(arguments.quick))


if __name__ == "__main__":
    raise SystemExit(main())
