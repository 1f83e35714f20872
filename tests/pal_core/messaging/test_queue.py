"""AsyncMessageQueue: event-driven reads by predicate, timeouts, closing, and who gets woken."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from pal_core.messaging import AsyncMessageQueue, Message, QueueClosed

from .support import message, other_tasks

pytestmark = pytest.mark.anyio


def from_sender(sender: str):
    return lambda m: m.sender_id == sender


async def test_get_batch_returns_everything_queued_in_arrival_order() -> None:
    queue = AsyncMessageQueue()
    sent = [message(content=str(i)) for i in range(5)]
    for item in sent:
        await queue.put(item)
    assert await queue.get_batch() == sent
    assert len(queue) == 0


async def test_predicate_takes_only_matching_messages_and_keeps_the_rest_in_order() -> None:
    queue = AsyncMessageQueue()
    sent = [message(sender=sender, content=str(i)) for i, sender in enumerate(["a", "b", "a", "c", "a", "b"])]
    for item in sent:
        await queue.put(item)
    taken = await queue.get_batch(from_sender("a"), max_messages=2)
    assert [m.content for m in taken] == ["0", "2"]
    assert [m.content for m in queue.snapshot()] == ["1", "3", "4", "5"]
    assert [m.content for m in await queue.get_batch(from_sender("b"))] == ["1", "5"]
    assert [m.content for m in await queue.get_batch()] == ["3", "4"]


async def test_a_waiting_reader_wakes_when_a_matching_message_arrives() -> None:
    queue = AsyncMessageQueue()
    wanted = message(sender="b")
    async with anyio.create_task_group() as group:
        results: list[list[Message]] = []

        async def reader() -> None:
            results.append(await queue.get_batch(from_sender("b"), timeout=10))

        group.start_soon(reader)
        await anyio.wait_all_tasks_blocked()
        await queue.put(message(sender="a"))
        await anyio.wait_all_tasks_blocked()
        assert results == []  # the non-matching message did not satisfy it
        await queue.put(wanted)
    assert results == [[wanted]]
    assert len(queue) == 1  # the message from "a" is still there


async def test_min_messages_waits_for_enough_matches() -> None:
    queue = AsyncMessageQueue()
    async with anyio.create_task_group() as group:
        results: list[list[Message]] = []

        async def reader() -> None:
            results.append(await queue.get_batch(min_messages=3, timeout=10))

        group.start_soon(reader)
        for i in range(2):
            await queue.put(message(content=str(i)))
            await anyio.wait_all_tasks_blocked()
            assert results == []
        await queue.put(message(content="2"))
    assert [m.content for m in results[0]] == ["0", "1", "2"]


async def test_timeout_returns_what_matched_without_raising() -> None:
    queue = AsyncMessageQueue()
    await queue.put(message(content="only one"))
    with anyio.fail_after(5):
        taken = await queue.get_batch(min_messages=2, timeout=0.01)
        assert [m.content for m in taken] == ["only one"]
        assert await queue.get_batch(timeout=0.01) == []


async def test_min_messages_zero_never_waits() -> None:
    queue = AsyncMessageQueue()
    with anyio.fail_after(5):
        assert await queue.get_batch(min_messages=0) == []


async def test_get_returns_one_message_or_raises_timeout_error() -> None:
    queue = AsyncMessageQueue()
    await queue.put(message(content="x"))
    assert (await queue.get()).content == "x"
    with anyio.fail_after(5), pytest.raises(TimeoutError, match="no matching message"):
        await queue.get(timeout=0.01)


async def test_peek_and_snapshot_leave_messages_queued() -> None:
    queue = AsyncMessageQueue()
    assert queue.peek() is None
    first, second = message(sender="a"), message(sender="b")
    await queue.put(first)
    await queue.put(second)
    assert queue.peek() is first
    assert queue.peek(from_sender("b")) is second
    assert queue.peek(from_sender("z")) is None
    assert queue.snapshot(limit=1) == [first]
    assert len(queue) == 2


async def test_a_reader_whose_predicate_cannot_match_is_never_woken() -> None:
    queue = AsyncMessageQueue()
    async with anyio.create_task_group() as group:
        results: list[list[Message]] = []

        async def reader() -> None:
            results.append(await queue.get_batch(from_sender("b"), timeout=10))

        group.start_soon(reader)
        await anyio.wait_all_tasks_blocked()
        for _ in range(100):
            await queue.put(message(sender="a"))
        assert queue.statistics().total_wakeups == 0
        await queue.put(message(sender="b"))
    assert queue.statistics().total_wakeups == 1
    assert len(results[0]) == 1


async def test_two_readers_competing_for_one_message_both_end_correctly() -> None:
    queue = AsyncMessageQueue()
    outcomes: list[str] = []

    async def reader() -> None:
        try:
            outcomes.append(f"got {len(await queue.get_batch(timeout=30))}")
        except QueueClosed:
            outcomes.append("closed")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            group.start_soon(reader)
            await anyio.wait_all_tasks_blocked()
            await queue.put(message())
            await anyio.wait_all_tasks_blocked()
            assert outcomes == ["got 1"]  # the loser went back to waiting instead of returning empty
            await queue.close()
    assert outcomes == ["got 1", "closed"]


async def test_close_wakes_waiters_with_a_clear_error_and_refuses_puts() -> None:
    queue = AsyncMessageQueue("inbox of 1001")
    errors: list[BaseException] = []

    async def reader() -> None:
        try:
            await queue.get_batch()
        except QueueClosed as error:
            errors.append(error)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            group.start_soon(reader)
            await anyio.wait_all_tasks_blocked()
            await queue.close()
    assert len(errors) == 2
    assert "'inbox of 1001' is closed" in str(errors[0])
    with pytest.raises(QueueClosed, match="was not delivered"):
        await queue.put(message())
    await queue.close()  # closing twice is harmless
    assert queue.statistics().closed


async def test_a_closed_queue_still_hands_over_what_is_left() -> None:
    queue = AsyncMessageQueue()
    await queue.put(message(content="left over"))
    await queue.close()
    assert [m.content for m in await queue.get_batch()] == ["left over"]
    with pytest.raises(QueueClosed):
        await queue.get_batch()
    with pytest.raises(QueueClosed):
        await queue.wait_for_match()


async def test_a_cancelled_reader_loses_no_message() -> None:
    queue = AsyncMessageQueue()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(queue.get_batch)
            await anyio.wait_all_tasks_blocked()
            group.cancel_scope.cancel()
        await queue.put(message(content="kept"))
        assert [m.content for m in await queue.get_batch()] == ["kept"]
        assert queue.statistics().waiters == 0


async def test_a_raising_predicate_fails_in_the_reader_not_in_the_sender() -> None:
    queue = AsyncMessageQueue()

    def broken(_: Message) -> bool:
        raise RuntimeError("predicate bug")

    failures: list[BaseException] = []

    async def reader() -> None:
        try:
            await queue.get_batch(broken, timeout=10)
        except RuntimeError as error:
            failures.append(error)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            await anyio.wait_all_tasks_blocked()
            await queue.put(message())  # must not raise here
    assert [str(error) for error in failures] == ["predicate bug"]
    assert len(queue) == 1


async def test_wait_for_match_waits_without_taking() -> None:
    queue = AsyncMessageQueue()
    with anyio.fail_after(5):
        assert not await queue.wait_for_match(timeout=0.01)
        async with anyio.create_task_group() as group:
            outcome: list[bool] = []

            async def watcher() -> None:
                outcome.append(await queue.wait_for_match(from_sender("b"), count=2, timeout=10))

            group.start_soon(watcher)
            await queue.put(message(sender="b"))
            await anyio.wait_all_tasks_blocked()
            assert outcome == []
            await queue.put(message(sender="b"))
    assert outcome == [True]
    assert len(queue) == 2


async def test_statistics_count_what_happened() -> None:
    queue = AsyncMessageQueue("stats")
    for _ in range(3):
        await queue.put(message())
    await queue.get_batch(max_messages=2)
    stats = queue.statistics()
    assert (stats.name, stats.total_put, stats.total_taken, stats.total_gets) == ("stats", 3, 2, 1)
    assert (stats.pending, stats.max_pending, stats.waiters, stats.closed) == (1, 3, 0, False)
    assert stats.uptime_seconds >= 0


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        ({"min_messages": -1}, "min_messages"),
        ({"max_messages": 0}, "max_messages"),
        ({"timeout": -1}, "timeout"),
    ],
)
async def test_bad_arguments_are_refused(arguments: dict[str, int], complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        await AsyncMessageQueue().get_batch(**arguments)  # type: ignore[arg-type]


async def test_no_task_is_left_behind() -> None:
    before = other_tasks()
    queue = AsyncMessageQueue()
    reader = asyncio.create_task(queue.get_batch())
    await anyio.wait_all_tasks_blocked()
    await queue.close()
    with pytest.raises(QueueClosed):
        await reader
    assert other_tasks() - before == set()
