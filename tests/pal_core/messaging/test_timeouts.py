"""Differential timeouts: targeted meeting messages are answered quickly, chatter accumulates."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from pal_core.messaging import (
    AsyncMessageQueue,
    MeetingTimeouts,
    Message,
    MessageType,
    QueueClosed,
    is_targeted,
    meeting_timeout,
    mentions,
    wait_for_meeting_messages,
)

pytestmark = pytest.mark.anyio


def broadcast(
    content: str, *, meeting_id: str = "7", targets: tuple[str, ...] = (), sender: str = "1000"
) -> Message:
    return Message(
        sender_id=sender,
        sender_klass="Host",
        content=content,
        message_type=MessageType.MEETING_BROADCAST,
        meeting_id=meeting_id,
        target_agent_ids=targets,
    )


def test_defaults_are_half_a_second_and_five_seconds() -> None:
    assert (MeetingTimeouts().targeted, MeetingTimeouts().untargeted) == (0.5, 5.0)


@pytest.mark.parametrize(
    ("fields", "complaint"),
    [
        ({"targeted": -1}, "targeted must be"),
        ({"untargeted": float("nan")}, "untargeted must be"),
        ({"targeted": 3.0, "untargeted": 1.0}, "must not exceed"),
    ],
)
def test_bad_timeouts_are_refused(fields: dict[str, float], complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        MeetingTimeouts(**fields)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("@HeadChef what do you think?", True),
        ("what do you think, @headchef", True),
        ("@1001 please answer", True),
        ("@HeadChefs are great", False),
        ("mail chef@HeadChef.com", False),
        ("HeadChef without the at sign", False),
        ("@Marketing please", False),
    ],
)
def test_mentions_need_a_whole_name_after_an_at_sign(content: str, expected: bool) -> None:
    assert mentions(content, ["HeadChef", "1001"]) is expected


def test_targeting_by_ids_mentions_or_meeting_end() -> None:
    assert is_targeted(broadcast("anyone", targets=("1001",)), "1001")
    assert not is_targeted(broadcast("anyone", targets=("1002",)), "1001")
    assert is_targeted(broadcast("over to you @Chef"), "1001", ["Chef"])
    assert is_targeted(broadcast("over to you @1001"), "1001")
    ended = Message(
        sender_id="1000",
        sender_klass="Host",
        content="bye",
        message_type=MessageType.MEETING_ENDED,
        meeting_id="7",
    )
    assert is_targeted(ended, "1001")


async def test_the_seed_rule_picks_the_short_timeout_only_for_a_queued_targeted_message() -> None:
    inbox = AsyncMessageQueue()
    timeouts = MeetingTimeouts(targeted=0.25, untargeted=4)
    await inbox.put(broadcast("general chatter"))
    await inbox.put(broadcast("@Chef but in another meeting", meeting_id="8"))
    assert meeting_timeout(inbox, "7", "1001", ["Chef"], timeouts) == 4
    await inbox.put(broadcast("@Chef your turn"))
    assert meeting_timeout(inbox, "7", "1001", ["Chef"], timeouts) == 0.25


async def test_a_queued_targeted_message_is_answered_within_the_short_window() -> None:
    inbox = AsyncMessageQueue()
    await inbox.put(broadcast("chatter"))
    await inbox.put(broadcast("@Chef your turn"))
    await inbox.put(broadcast("other meeting", meeting_id="8"))
    timeouts = MeetingTimeouts(targeted=0.01, untargeted=60)
    with anyio.fail_after(5):
        taken = await wait_for_meeting_messages(inbox, "7", "1001", ["Chef"], timeouts)
    assert [m.content for m in taken] == ["chatter", "@Chef your turn"]
    assert [m.content for m in inbox.snapshot()] == ["other meeting"]


async def test_a_targeted_message_arriving_later_cuts_the_long_wait_short() -> None:
    inbox = AsyncMessageQueue()
    timeouts = MeetingTimeouts(targeted=0.01, untargeted=60)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            results: list[list[Message]] = []

            async def agent_waits() -> None:
                results.append(await wait_for_meeting_messages(inbox, "7", "1001", timeouts=timeouts))

            group.start_soon(agent_waits)
            await anyio.wait_all_tasks_blocked()
            await inbox.put(broadcast("chatter"))
            await anyio.wait_all_tasks_blocked()
            assert results == []  # chatter alone does not end the wait
            await inbox.put(broadcast("question for you", targets=("1001",)))
    assert [m.content for m in results[0]] == ["chatter", "question for you"]


async def test_untargeted_chatter_accumulates_for_the_long_window() -> None:
    inbox = AsyncMessageQueue()
    timeouts = MeetingTimeouts(targeted=0.0, untargeted=0.05)
    loop = asyncio.get_running_loop()
    await inbox.put(broadcast("one"))
    started = loop.time()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            results: list[list[Message]] = []

            async def agent_waits() -> None:
                results.append(await wait_for_meeting_messages(inbox, "7", "1001", timeouts=timeouts))

            group.start_soon(agent_waits)
            await anyio.wait_all_tasks_blocked()
            await inbox.put(broadcast("two"))
    assert loop.time() - started >= 0.049  # the event loop may fire a timer up to its clock resolution early
    assert [m.content for m in results[0]] == ["one", "two"]


async def test_nothing_said_gives_an_empty_list_after_the_long_window() -> None:
    inbox = AsyncMessageQueue()
    with anyio.fail_after(5):
        assert (
            await wait_for_meeting_messages(
                inbox, "7", "1001", timeouts=MeetingTimeouts(targeted=0, untargeted=0.01)
            )
            == []
        )


async def test_the_end_of_the_meeting_ends_the_wait_at_once() -> None:
    inbox = AsyncMessageQueue()
    ended = Message(
        sender_id="1000",
        sender_klass="Host",
        content="bye",
        message_type=MessageType.MEETING_ENDED,
        meeting_id="7",
    )
    await inbox.put(broadcast("last words"))
    await inbox.put(ended)
    with anyio.fail_after(5):
        taken = await wait_for_meeting_messages(
            inbox, "7", "1001", timeouts=MeetingTimeouts(targeted=30, untargeted=60)
        )
    assert taken[-1] == ended


async def test_a_closed_inbox_hands_over_the_meeting_messages_then_raises() -> None:
    inbox = AsyncMessageQueue()
    timeouts = MeetingTimeouts(targeted=30, untargeted=60)
    await inbox.put(broadcast("before the close"))
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            results: list[list[Message]] = []

            async def agent_waits() -> None:
                results.append(await wait_for_meeting_messages(inbox, "7", "1001", timeouts=timeouts))

            group.start_soon(agent_waits)
            await anyio.wait_all_tasks_blocked()
            await inbox.close()
        assert [m.content for m in results[0]] == ["before the close"]
        with pytest.raises(QueueClosed):
            await wait_for_meeting_messages(inbox, "7", "1001", timeouts=timeouts)


def test_the_turn_window_is_zero_and_may_not_exceed_the_targeted_one() -> None:
    assert MeetingTimeouts().turn == 0.0
    with pytest.raises(ValueError, match=r"turn .* must not exceed targeted"):
        MeetingTimeouts(turn=1.0, targeted=0.5)


async def test_a_queued_turn_is_answered_at_once_without_gathering() -> None:
    """A message listing the agent in target_agent_ids gives it the turn: with a targeted window of 60 s the
    wait still returns at once (fail_after would fire otherwise)."""
    inbox = AsyncMessageQueue()
    await inbox.put(broadcast("chatter"))
    await inbox.put(broadcast("@Chef", targets=("1001",)))
    timeouts = MeetingTimeouts(targeted=60, untargeted=60)
    assert meeting_timeout(inbox, "7", "1001", ["Chef"], timeouts) == 0.0
    with anyio.fail_after(10):
        taken = await wait_for_meeting_messages(inbox, "7", "1001", ["Chef"], timeouts)
    assert [m.content for m in taken] == ["chatter", "@Chef"]


async def test_a_turn_arriving_later_ends_the_wait_at_once() -> None:
    inbox = AsyncMessageQueue()
    timeouts = MeetingTimeouts(targeted=60, untargeted=60)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            results: list[list[Message]] = []

            async def agent_waits() -> None:
                results.append(await wait_for_meeting_messages(inbox, "7", "1001", timeouts=timeouts))

            group.start_soon(agent_waits)
            await anyio.wait_all_tasks_blocked()
            await inbox.put(broadcast("your turn", targets=("1001",)))
    assert [m.content for m in results[0]] == ["your turn"]


async def test_an_at_mention_alone_still_gathers_for_the_targeted_window() -> None:
    inbox = AsyncMessageQueue()
    await inbox.put(broadcast("@Chef what do you think?"))
    loop = asyncio.get_running_loop()
    started = loop.time()
    with anyio.fail_after(10):
        await wait_for_meeting_messages(
            inbox, "7", "1001", ["Chef"], MeetingTimeouts(targeted=0.05, untargeted=60)
        )
    assert loop.time() - started >= 0.049
